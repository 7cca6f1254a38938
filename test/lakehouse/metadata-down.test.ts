// The metadata database going away under a running server is the server's trouble, not the client's,
// and passes: OTLP requests answer 503 with Retry-After (OTLP/HTTP's retryable answer) and Flight SQL
// statements UNAVAILABLE, each saying what cannot be reached; never a 500 or INTERNAL.
import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
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

/** A serving Orrery on a Postgres of its own (which the suite stops or fills), and an admin's Flight SQL client. */
function servedOnItsOwnPostgres(): { postgres: TestPostgres; orrery: InProcessOrrery; client: TestFlightClient } {
  const served = {} as { postgres: TestPostgres; orrery: InProcessOrrery; client: TestFlightClient };
  before(async () => {
    served.postgres = await startTestPostgres();
    served.orrery = await startRole(
      'serve',
      sharedEnv({ keys: [admin], admins: [admin.name], connectionString: served.postgres.connectionString }),
    );
    served.client = clientFor(served.orrery.flightPort, admin);
  });
  after(async () => {
    served.client?.close();
    await served.orrery?.close();
    await served.postgres?.close();
  });
  return served;
}

describe('the metadata database down under a running server', () => {
  const served = servedOnItsOwnPostgres();
  // Each POST on a connection of its own: stopping Postgres can take longer than the server keeps an idle
  // connection, and a pooled one closed just as it is reused fails the fetch before any answer (CI, load 24).
  const post = (): Promise<{ status: number; headers: IncomingHttpHeaders; text: string }> =>
    new Promise((resolve, reject) => {
      const body = logsRequest({ 'service.name': 'svc' }, [
        { time: BigInt(Date.now()) * 1_000_000n, severity: 9, body: 'x' },
      ]);
      const sent = request(
        {
          host: '127.0.0.1',
          port: served.orrery.httpPort,
          path: '/v1/logs',
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.key}` },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
          response.on('error', reject);
        },
      );
      sent.on('error', reject);
      sent.end(body);
    });

  before(async () => {
    assert.equal((await post()).status, 200);
    await served.postgres.close();
  });

  it('an OTLP request answers 503 with Retry-After, naming the metadata database', async () => {
    const { status, headers, text } = await post();
    assert.equal(status, 503, text);
    assert.ok(headers['retry-after']);
    assert.match(text, /metadata database/);
  });

  it('a statement that needs the metadata answers UNAVAILABLE, naming the metadata database', async () => {
    const { code, details } = await refusal(served.client.query('SELECT count(*) FROM log_entries'));
    assert.equal(code, 14, details);
    assert.match(details, /metadata database/);
  });
});

// A statement the metadata database has no room for (disk full, out of memory, a configured limit) is the same
// trouble: nothing of it was kept, and the client may try again later. Over Flight SQL it was INTERNAL.
describe('the metadata database with no room for a statement', () => {
  const served = servedOnItsOwnPostgres();

  it('a procedure whose write finds no room answers UNAVAILABLE, for each SQLSTATE of it', async () => {
    const db = served.orrery.metadata;
    for (const state of ['53100', '53200', '53400']) {
      // Postgres refusing the insert as it would one it had no room for.
      await db.query(`CREATE FUNCTION no_room() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE EXCEPTION 'no room (test)' USING ERRCODE = '${state}'; END $$`);
      await db.query('CREATE TRIGGER no_room BEFORE INSERT ON query_deny_list FOR EACH ROW EXECUTE FUNCTION no_room()');
      let refused;
      try {
        refused = await refusal(served.client.query(`SELECT msg FROM deny_queries('false', 'no room ${state}')`));
      } finally {
        await db.query('DROP TRIGGER no_room ON query_deny_list');
        await db.query('DROP FUNCTION no_room()');
      }
      assert.equal(refused.code, 14, `${state}: ${refused.details}`);
      assert.match(refused.details, /metadata database has no room/, state);
      assert.doesNotMatch(refused.details, /no room \(test\)/, state);
    }
  });
});
