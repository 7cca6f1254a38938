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

describe('the metadata database down under a running server', () => {
  let postgres: TestPostgres;
  let orrery: InProcessOrrery;
  let client: TestFlightClient;
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
          port: orrery.httpPort,
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
    const { status, headers, text } = await post();
    assert.equal(status, 503, text);
    assert.ok(headers['retry-after']);
    assert.match(text, /metadata database/);
  });

  it('a statement that needs the metadata answers UNAVAILABLE, naming the metadata database', async () => {
    const { code, details } = await refusal(client.query('SELECT count(*) FROM log_entries'));
    assert.equal(code, 14, details);
    assert.match(details, /metadata database/);
  });
});
