// Issue 10, item 4: CancelFlightInfo (and the deprecated CancelQuery action) stop the statement a
// FlightInfo names: running, DuckDB's work on it stops and its DoGet fails with CANCELLED; not yet
// redeemed, it never runs. Only the key that asked for the FlightInfo can cancel it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Flight, encode } from '../../src/wire/index.js';
import { useOrrery } from '../support/orrery-process.js';
import { cpuSettles } from '../support/cpu-settles.js';
import { FlightSql, packAny, unpackAny, type TestFlightClient } from '../support/flight-client.js';
import { failure, hugeCrossJoin } from '../support/statement-calls.js';
import { scrapeMetrics } from '../support/metric-value.js';

/** A statement's FlightInfo, as the client received it (encoded again for the cancel request). */
async function flightInfo(client: TestFlightClient, sql: string): Promise<{ ticket: Uint8Array; info: Uint8Array }> {
  const { endpoints } = await client.getFlightInfo(packAny('CommandStatementQuery', { query: sql }));
  const ticket = endpoints[0].ticket;
  return { ticket, info: encode(Flight.FlightInfo, { endpoint: [{ ticket: { ticket } }] }) };
}

async function cancelFlightInfo(client: TestFlightClient, info: Uint8Array): Promise<number> {
  const [body] = await client.doAction(
    'CancelFlightInfo',
    encode(Flight.CancelFlightInfoRequest, { info: Flight.FlightInfo.decode(info) }),
  );
  return (
    (Flight.CancelFlightInfoResult.toObject(Flight.CancelFlightInfoResult.decode(body)) as { status?: number })
      .status ?? 0
  );
}

async function cancelQuery(client: TestFlightClient, info: Uint8Array): Promise<number> {
  const [body] = await client.doAction('CancelQuery', packAny('ActionCancelQueryRequest', { info }));
  const any = unpackAny(body)!;
  assert.equal(any.name, 'ActionCancelQueryResult');
  return (
    (
      FlightSql.ActionCancelQueryResult.toObject(FlightSql.ActionCancelQueryResult.decode(any.value)) as {
        result?: number;
      }
    ).result ?? 0
  );
}

const CANCELLED = 1;
const NOT_CANCELLABLE = 3;

describe('issue 10: CancelFlightInfo and CancelQuery', { timeout: 180_000 }, () => {
  const fixture = useOrrery({ ORRERY_QUERY_TIMEOUT_SECONDS: '120' });
  const running = async (): Promise<number> => {
    const text = await scrapeMetrics(fixture.orrery.httpPort);
    return Number(/^orrery_queries_running (\S+)$/m.exec(text)?.[1]);
  };

  for (const [action, cancel] of [
    ['CancelFlightInfo', cancelFlightInfo],
    ['CancelQuery', cancelQuery],
  ] as const) {
    it(`${action} stops a running statement: its DoGet fails with CANCELLED and DuckDB stops`, async () => {
      const { reader } = fixture;
      const { ticket, info } = await flightInfo(reader, hugeCrossJoin);
      const redeemed = failure(reader.doGet(ticket));
      while ((await running()) < 1) await sleep(20);
      assert.equal(await cancel(reader, info), CANCELLED);
      const error = await redeemed;
      assert.equal(error.status, 'CANCELLED');
      await cpuSettles();
      assert.equal(Number((await reader.query('SELECT 41 + 1 AS n')).getChild('n')?.get(0)), 42);
    });
  }

  it('a statement cancelled before its DoGet never runs, and says so', async () => {
    const { reader } = fixture;
    const { ticket, info } = await flightInfo(reader, 'SELECT 1 AS n');
    assert.equal(await cancelFlightInfo(reader, info), CANCELLED);
    const error = await failure(reader.doGet(ticket));
    assert.equal(error.status, 'CANCELLED');
    assert.match(error.details, /cancelled/);
  });

  it("another key cannot cancel a key's statement; a finished one is not cancellable", async () => {
    const { reader, admin } = fixture;
    const { ticket, info } = await flightInfo(reader, 'SELECT 7 AS n');
    assert.equal(await cancelFlightInfo(admin, info), NOT_CANCELLABLE);
    assert.equal(Number((await reader.doGet(ticket)).table.getChild('n')?.get(0)), 7);
    assert.equal(await cancelFlightInfo(reader, info), NOT_CANCELLABLE);
  });

  it('refuses a cancel request that names no ticket', async () => {
    const error = await failure(
      fixture.reader.doAction('CancelFlightInfo', encode(Flight.CancelFlightInfoRequest, { info: {} })),
    );
    assert.equal(error.status, 'INVALID_ARGUMENT');
  });
});
