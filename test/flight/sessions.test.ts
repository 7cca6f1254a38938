// Issue 10, item 4: Flight sessions. SetSessionOptions opens a session named by the
// arrow_flight_session_id cookie and accepts the options JDBC and ADBC send (catalog, schema) with
// the values statements run with; GetSessionOptions answers them; CloseSession closes it. A
// session serves only the key that opened it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Flight, encode } from '../../src/wire/index.js';
import { useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';

const INVALID_NAME = 1;
const INVALID_VALUE = 2;
const CLOSED = 1;

interface Answer<T> {
  readonly result: T;
  /** The session cookie the server set, if it set one. */
  readonly cookie?: string;
}

async function action(client: TestFlightClient, type: string, body: Uint8Array, cookie?: string) {
  let setCookie: string | undefined;
  const [result] = await client.client.doAction(type, body, {
    headers: cookie ? { cookie } : {},
    onHeaders: (headers) => (setCookie = headers.get('set-cookie')),
  });
  return { result, cookie: setCookie };
}

async function setOptions(
  client: TestFlightClient,
  options: Record<string, Record<string, unknown>>,
  cookie?: string,
): Promise<Answer<Record<string, number>>> {
  const body = encode(Flight.SetSessionOptionsRequest, { sessionOptions: options });
  const answer = await action(client, 'SetSessionOptions', body, cookie);
  const { errors } = Flight.SetSessionOptionsResult.toObject(Flight.SetSessionOptionsResult.decode(answer.result)) as {
    errors?: Record<string, { value?: number }>;
  };
  const codes = Object.fromEntries(Object.entries(errors ?? {}).map(([name, e]) => [name, e.value ?? 0]));
  return { result: codes, cookie: answer.cookie };
}

async function getOptions(client: TestFlightClient, cookie?: string): Promise<Record<string, string>> {
  const { result } = await action(client, 'GetSessionOptions', new Uint8Array(0), cookie);
  const { sessionOptions } = Flight.GetSessionOptionsResult.toObject(Flight.GetSessionOptionsResult.decode(result)) as {
    sessionOptions?: Record<string, { stringValue?: string }>;
  };
  return Object.fromEntries(Object.entries(sessionOptions ?? {}).map(([name, v]) => [name, v.stringValue ?? '']));
}

describe('issue 10: Flight sessions', () => {
  const fixture = useOrrery();

  it('opens a session with its cookie, keeps the options JDBC and ADBC send, and answers them', async () => {
    const { reader } = fixture;
    const opened = await setOptions(reader, { catalog: { stringValue: 'orrery' }, schema: { stringValue: 'main' } });
    assert.deepEqual(opened.result, {});
    assert.match(opened.cookie ?? '', /^arrow_flight_session_id=[0-9a-f]{32}$/);
    const cookie = opened.cookie!;
    assert.deepEqual(await getOptions(reader, cookie), { catalog: 'orrery', schema: 'main' });
    // Statements run as before with the cookie sent.
    const table = await reader.query('SELECT 41 + 1 AS n', { cookie });
    assert.equal(Number(table.getChild('n')?.get(0)), 42);
    // The same session again: no new cookie; unknown names and values it cannot honour are refused one by one.
    const again = await setOptions(
      reader,
      {
        catalog: { stringValue: 'elsewhere' },
        schema: { boolValue: true },
        'adbc.flight.sql.unknown': { stringValue: 'x' },
      },
      cookie,
    );
    assert.equal(again.cookie, undefined);
    assert.deepEqual(again.result, {
      catalog: INVALID_VALUE,
      schema: INVALID_VALUE,
      'adbc.flight.sql.unknown': INVALID_NAME,
    });
    assert.deepEqual(await getOptions(reader, cookie), { catalog: 'orrery', schema: 'main' });
  });

  it('serves a session only to the key that opened it, and closes it', async () => {
    const { reader, admin } = fixture;
    const { cookie } = await setOptions(reader, { catalog: { stringValue: 'orrery' } });
    assert.ok(cookie);
    // Another key presenting the cookie gets a session of its own.
    const other = await setOptions(admin, { schema: { stringValue: 'main' } }, cookie);
    assert.ok(other.cookie && other.cookie !== cookie);
    const { result } = await action(reader, 'CloseSession', new Uint8Array(0), cookie);
    assert.equal(
      (Flight.CloseSessionResult.toObject(Flight.CloseSessionResult.decode(result)) as { status?: number }).status,
      CLOSED,
    );
    // Closed: the cookie names nothing any more, so setting options opens a new session.
    const reopened = await setOptions(reader, { catalog: { stringValue: 'orrery' } }, cookie);
    assert.ok(reopened.cookie && reopened.cookie !== cookie);
  });

  it('answers the options statements run with when no session is open', async () => {
    assert.deepEqual(await getOptions(fixture.reader), { catalog: 'orrery', schema: 'main' });
  });
});
