// The metadata database going away under a running server is the server's trouble, not the client's,
// and passes: OTLP requests answer 503 with Retry-After (OTLP/HTTP's retryable answer) and Flight SQL
// statements UNAVAILABLE, each saying what cannot be reached; never a 500 or INTERNAL.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { adminKey } from '../support/orrery-process.js';
import { logsRequest } from '../support/otlp.js';
import type { TestFlightClient } from '../support/flight-client.js';
import {
  clientFor,
  refusal,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const admin: TestKey = { ...adminKey, audiences: ['public'] };

describe('the metadata database down under a running server', () => {
  let postgres: TestPostgres;
  let orrery: InProcessOrrery;
  let client: TestFlightClient;
  const post = (): Promise<Response> =>
    fetch(`http://127.0.0.1:${orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.key}` },
      body: logsRequest({ 'service.name': 'svc' }, [{ time: BigInt(Date.now()) * 1_000_000n, severity: 9, body: 'x' }]),
    });

  before(async () => {
    postgres = await startTestPostgres();
    orrery = await startRole(
      'serve',
      sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString }),
    );
    client = clientFor(orrery.flightPort, admin);
    assert.equal((await post()).status, 200);
    await postgres.close();
  });
  after(async () => {
    client?.close();
    await orrery?.close();
    await postgres?.close();
  });

  it('an OTLP request answers 503 with Retry-After, naming the metadata database', async () => {
    const response = await post();
    const text = await response.text();
    assert.equal(response.status, 503, text);
    assert.ok(response.headers.get('retry-after'));
    assert.match(text, /metadata database/);
  });

  it('a statement that needs the metadata answers UNAVAILABLE, naming the metadata database', async () => {
    const { code, details } = await refusal(client.query('SELECT count(*) FROM log_entries'));
    assert.equal(code, 14, details);
    assert.match(details, /metadata database/);
  });
});
