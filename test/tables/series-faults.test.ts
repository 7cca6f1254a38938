// Issue 12, item 6: kill -9 of the server in the middle of an ingest or a transaction leaves the
// series table as it was; two servers ingesting into one table at once lose nothing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Float64, Table, TimestampNanosecond, Utf8, makeVector, vectorFromArray, RecordBatch } from 'apache-arrow';
import {
  startServeChild,
  clientFor,
  scalar,
  sharedEnv,
  startRole,
  startTestPostgres,
  type TestKey,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import { FlightSql, packAny, tableToFlightData, unpackAny, type TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-faults-0001', audiences: ['ops'] };

/** `batches` batches of `rows` rows (ts, host, cpu), starting at `first`. */
function samples(first: number, batches: number, rows: number): Table {
  const out: RecordBatch[] = [];
  for (let b = 0; b < batches; b++) {
    const start = first + b * rows;
    out.push(
      new Table({
        ts: makeVector({
          type: new TimestampNanosecond('UTC'),
          data: BigInt64Array.from({ length: rows }, (_, i) => BigInt(start + i) * 1_000_000_000n),
        } as never),
        host: vectorFromArray(
          Array.from({ length: rows }, (_, i) => `h${(start + i) % 10}`),
          new Utf8(),
        ),
        cpu: vectorFromArray(
          Array.from({ length: rows }, (_, i) => (start + i) / 100),
          new Float64(),
        ),
      } as never).batches[0],
    );
  }
  return new Table(out);
}

async function ingest(client: TestFlightClient, table: string, data: Table): Promise<number> {
  const cmd = packAny('CommandStatementIngest', { table, tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 } });
  const [meta] = await client.doPut(cmd, data);
  return Number(
    (
      FlightSql.DoPutUpdateResult.toObject(FlightSql.DoPutUpdateResult.decode(meta), { longs: Number }) as {
        recordCount: number;
      }
    ).recordCount,
  );
}

describe('series tables under faults (issue 12)', { timeout: 300_000 }, () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let env: Record<string, string>;
  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-faults-lake-'));
    env = sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString, lakeDir });
    const setup = await startRole('serve', env);
    const client = clientFor(setup.flightPort, admin);
    await client.updateCount('CREATE TABLE samples (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE)');
    assert.equal(await ingest(client, 'samples', samples(0, 1, 1000)), 1000);
    client.close();
    await setup.close();
  });
  after(async () => {
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('kill -9 in the middle of an ingest: the table is as before it', async () => {
    const { child, port } = await startServeChild(env);
    const client = clientFor(port, admin);
    try {
      // 2 M rows sent, then the upload is held open: the server has streamed them into DuckLake but
      // the statement cannot have ended (the stream has not), whatever the machine's speed.
      let sent!: () => void;
      const allSent = new Promise<void>((resolve) => (sent = resolve));
      const messages = (async function* () {
        yield* tableToFlightData(samples(1_000_000, 200, 10_000));
        sent();
        await new Promise(() => {});
      })();
      const cmd = packAny('CommandStatementIngest', {
        table: 'samples',
        tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 },
      });
      const upload = client.client.doPut(cmd, messages);
      upload.catch(() => {});
      await allSent;
      await child.stop('SIGKILL');
      await assert.rejects(upload, { code: 14 });
    } finally {
      client.close();
      if (child.running) await child.stop('SIGKILL');
    }
    const { child: again, port: againPort } = await startServeChild(env);
    const look = clientFor(againPort, admin);
    try {
      assert.equal(await scalar(look, 'SELECT count(*) FROM samples'), 1000);
    } finally {
      look.close();
      await again.stop();
    }
  });

  it('kill -9 with a transaction open: what it wrote is gone', async () => {
    const { child, port } = await startServeChild(env);
    const client = clientFor(port, admin);
    try {
      const [body] = await client.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
      const tx = (
        FlightSql.ActionBeginTransactionResult.decode(unpackAny(body)!.value) as unknown as {
          transactionId: Uint8Array;
        }
      ).transactionId;
      await client.doPut(
        packAny('CommandStatementUpdate', { query: `INSERT INTO samples VALUES (now(), 'tx', 1)`, transactionId: tx }),
      );
      await client.doPut(
        packAny('CommandStatementUpdate', { query: `DELETE FROM samples WHERE host = 'h1'`, transactionId: tx }),
      );
      await child.stop('SIGKILL');
    } finally {
      client.close();
      if (child.running) await child.stop('SIGKILL');
    }
    const { child: again, port: againPort } = await startServeChild(env);
    const look = clientFor(againPort, admin);
    try {
      assert.equal(await scalar(look, 'SELECT count(*) FROM samples'), 1000);
      assert.equal(await scalar(look, `SELECT count(*) FROM samples WHERE host = 'h1'`), 100);
    } finally {
      look.close();
      await again.stop();
    }
  });

  it('two servers ingesting into one table at once lose nothing', async () => {
    const one = await startRole('serve', env);
    const two = await startRole('serve', env);
    const a = clientFor(one.flightPort, admin);
    const b = clientFor(two.flightPort, admin);
    try {
      const uploads: Array<Promise<number>> = [];
      for (let round = 0; round < 4; round++) {
        uploads.push(ingest(a, 'samples', samples(10_000_000 + round * 5_000, 5, 1_000)));
        uploads.push(ingest(b, 'samples', samples(20_000_000 + round * 5_000, 5, 1_000)));
      }
      const counts = await Promise.all(uploads);
      assert.deepEqual(counts, Array(8).fill(5_000));
      assert.equal(await scalar(a, 'SELECT count(*) FROM samples'), 1000 + 40_000);
      assert.equal(await scalar(b, 'SELECT count(DISTINCT ts) FROM samples'), 1000 + 40_000);
    } finally {
      a.close();
      b.close();
      await one.close();
      await two.close();
    }
  });
});
