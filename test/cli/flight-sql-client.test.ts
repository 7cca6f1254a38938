// src/client's FlightSqlClient against a started Orrery: bearer key and Basic handshake, queries as
// tables and streamed batches, updates, TLS, readable errors with the gRPC status, close().
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FlightClientError, FlightSqlClient, type CallOptions, type FlightData } from '../../src/client/index.js';
import { adminKey, readerKey, startTestOrrery } from '../support/orrery-process.js';
import { selfSignedCertificate, type TestCertificate } from '../support/tls.js';

/** Counts DoGet calls that have ended (read to the end, failed, or stopped early). */
class WatchedClient extends FlightSqlClient {
  endedCalls = 0;
  override async *doGet(ticket: Uint8Array, options?: CallOptions): AsyncGenerator<FlightData> {
    try {
      yield* super.doGet(ticket, options);
    } finally {
      this.endedCalls++;
    }
  }
}

describe('FlightSqlClient', () => {
  let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  let client: FlightSqlClient;
  before(async () => {
    orrery = await startTestOrrery({}, 'serve');
    client = new FlightSqlClient({ address: orrery.address, apiKey: adminKey.key });
  });
  after(async () => {
    client.close();
    await orrery.close();
  });

  it('runs a query with a bearer key and returns an Arrow table', async () => {
    const table = await client.query("SELECT 42::INTEGER AS answer, 'x' AS label, NULL::VARCHAR AS nothing");
    assert.deepEqual(
      table.schema.fields.map((f) => `${f.name} ${f.type}`),
      ['answer Int32', 'label Utf8', 'nothing Utf8'],
    );
    assert.deepEqual(
      table.toArray().map((r) => r.toJSON()),
      [{ answer: 42, label: 'x', nothing: null }],
    );
  });

  it('keeps the schema of an empty result', async () => {
    const table = await client.query('SELECT 1::BIGINT AS x WHERE false');
    assert.equal(table.numRows, 0);
    assert.deepEqual(
      table.schema.fields.map((f) => `${f.name} ${f.type}`),
      ['x Int64'],
    );
  });

  it('streams batches as they arrive, and stopping early ends the call', async () => {
    const sizes: number[] = [];
    for await (const batch of client.queryBatches('SELECT range AS n FROM range(300000)')) sizes.push(batch.numRows);
    assert.ok(sizes.length > 1, `one batch of ${sizes[0]} rows`);
    assert.equal(
      sizes.reduce((a, b) => a + b, 0),
      300000,
    );
    const watched = new WatchedClient({ address: orrery.address, apiKey: adminKey.key });
    for await (const batch of watched.queryBatches('SELECT range AS n FROM range(10000000)')) {
      assert.ok(batch.numRows > 0);
      assert.equal(watched.endedCalls, 0);
      break;
    }
    assert.equal(watched.endedCalls, 1, 'the DoGet call ended when the loop stopped');
    assert.equal((await watched.query('SELECT 7 AS seven')).getChild('seven')?.get(0), 7);
    watched.close();
  });

  it('executes updates and returns the row count', async () => {
    assert.equal(await client.executeUpdate('CREATE TABLE client_items (a INTEGER)'), 0);
    assert.equal(await client.executeUpdate('INSERT INTO client_items VALUES (1), (2), (3)'), 3);
    assert.equal(Number((await client.query('SELECT count(*) AS n FROM client_items')).getChild('n')?.get(0)), 3);
  });

  it('authenticates with a Basic handshake and keeps the bearer token', async () => {
    const c = new FlightSqlClient({ address: orrery.address });
    try {
      assert.equal(await c.handshake(readerKey.name, readerKey.key), `Bearer ${readerKey.key}`);
      assert.equal(c.headers.authorization, `Bearer ${readerKey.key}`);
      assert.equal((await c.query('SELECT 1 AS one')).getChild('one')?.get(0), 1);
    } finally {
      c.close();
    }
  });

  it('rejects with a FlightClientError carrying the gRPC status and the server message', async () => {
    await assert.rejects(client.query('SELECT * FROM no_such_table'), (error: unknown) => {
      assert.ok(error instanceof FlightClientError);
      assert.equal(error.code, 3);
      assert.equal(error.status, 'INVALID_ARGUMENT');
      assert.match(error.details, /^Catalog Error: Table with name no_such_table does not exist!/);
      assert.equal(error.message, `INVALID_ARGUMENT: ${error.details}`);
      return true;
    });
    const anonymous = new FlightSqlClient({ address: orrery.address });
    await assert.rejects(anonymous.query('SELECT 1'), {
      name: 'FlightClientError',
      code: 16,
      status: 'UNAUTHENTICATED',
      message: 'UNAUTHENTICATED: missing credentials: send "authorization: Bearer <key>" or use a Basic handshake',
    });
    anonymous.close();
    const wrongKey = new FlightSqlClient({ address: orrery.address, apiKey: 'not-a-key' });
    await assert.rejects(wrongKey.executeUpdate('SELECT 1'), { code: 16, details: 'invalid key' });
    wrongKey.close();
  });

  it('names the address when the server cannot be reached', async () => {
    const nowhere = new FlightSqlClient({ address: '127.0.0.1:1' });
    await assert.rejects(nowhere.query('SELECT 1'), (error: FlightClientError) => {
      assert.equal(error.status, 'UNAVAILABLE');
      assert.match(error.message, /^UNAVAILABLE: cannot reach the Flight SQL server at 127\.0\.0\.1:1: .*ECONNREFUSED/);
      return true;
    });
    nowhere.close();
    await assert.rejects(FlightSqlClient.connect({ address: '127.0.0.1:1' }, 300), {
      status: 'UNAVAILABLE',
      message: /^UNAVAILABLE: cannot reach the Flight SQL server at 127\.0\.0\.1:1 within 300 ms/,
    });
    const ready = await FlightSqlClient.connect({ address: orrery.address, apiKey: adminKey.key });
    assert.equal((await ready.query('SELECT 2 AS two')).getChild('two')?.get(0), 2);
    ready.close();
  });

  it('close is idempotent, and every call after it fails with a named error', async () => {
    const c = new FlightSqlClient({ address: orrery.address, apiKey: adminKey.key });
    await c.query('SELECT 1');
    c.close();
    c.close();
    const closed = {
      code: 9,
      status: 'FAILED_PRECONDITION',
      message: 'FAILED_PRECONDITION: the Flight SQL client has been closed',
    };
    await assert.rejects(c.query('SELECT 1'), closed);
    await assert.rejects(c.executeUpdate('SELECT 1'), closed);
    await assert.rejects(c.handshake(adminKey.name, adminKey.key), closed);
    await assert.rejects(async () => {
      for await (const batch of c.queryBatches('SELECT 1')) assert.fail(`read ${batch.numRows} row(s) after close`);
    }, closed);
    await c[Symbol.asyncDispose]();
  });
});

describe('FlightSqlClient over TLS', () => {
  let certificate: TestCertificate;
  let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  before(async () => {
    certificate = selfSignedCertificate('orrery-client-tls-');
    orrery = await startTestOrrery({ ORRERY_TLS_CERT: certificate.cert, ORRERY_TLS_KEY: certificate.key }, 'serve');
  });
  after(async () => {
    await orrery.close();
    certificate.remove();
  });

  it('queries when it trusts the certificate, and is refused in plaintext', async () => {
    const tls = new FlightSqlClient({
      address: orrery.address,
      apiKey: adminKey.key,
      tls: { ca: readFileSync(certificate.cert) },
    });
    assert.equal((await tls.query('SELECT 3 AS three')).getChild('three')?.get(0), 3);
    tls.close();
    const plain = new FlightSqlClient({ address: orrery.address, apiKey: adminKey.key });
    await assert.rejects(plain.query('SELECT 3'), { status: 'UNAVAILABLE' });
    plain.close();
  });
});
