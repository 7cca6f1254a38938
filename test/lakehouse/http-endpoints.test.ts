// The HTTP side besides ingestion: /health, /ready, /metrics, unknown routes and methods.
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';

describe('HTTP endpoints', () => {
  const fixture = useOrrery({}, 'serve');
  const get = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${fixture.orrery.httpPort}${path}`, init);

  it('/health answers while the process runs', async () => {
    const response = await get('/health');
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'ok\n');
  });

  it('/ready checks Postgres and the object store', async () => {
    const response = await get('/ready');
    assert.equal(response.status, 200);
    assert.equal(await response.text(), 'ready\n');
  });

  it('/metrics counts ingestion requests and records in Prometheus text format', async () => {
    const body = logsRequest({ 'service.name': 'metrics-test' }, [
      { time: 1704164645000000000n, severity: 9, body: 'x' },
    ]);
    assert.equal((await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, body)).status, 200);
    assert.equal((await postOtlp(fixture.orrery.httpPort, 'logs', null, body)).status, 401);
    const response = await get('/metrics', { headers: { authorization: `Bearer ${adminKey.key}` } });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await response.text();
    assert.match(text, /^orrery_ingestion_requests_total\{signal="logs",status="200"\} 1$/m);
    assert.match(text, /^orrery_ingestion_requests_total\{signal="logs",status="401"\} 1$/m);
    assert.match(text, /^orrery_ingested_records_total\{signal="logs"\} 1$/m);
  });

  it("/metrics answers an admin key only: it names every key and rollup and counts every audience's rows", async () => {
    for (const authorization of [undefined, 'Bearer not-a-key-0123', `Basic ${btoa(`admin:${adminKey.key}`)}`]) {
      const response = await get('/metrics', authorization ? { headers: { authorization } } : undefined);
      assert.equal(response.status, 401, String(authorization));
      assert.equal(response.headers.get('www-authenticate'), 'Bearer');
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
      assert.equal(await response.text(), 'missing or invalid API key: send "Authorization: Bearer <admin key>"\n');
    }
    const refused = await get('/metrics', { headers: { authorization: `Bearer ${readerKey.key}` } });
    assert.equal(refused.status, 403);
    assert.match(refused.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(await refused.text(), "key 'reader' is not an admin\n");
    const admitted = await get('/metrics', { headers: { authorization: `Bearer ${adminKey.key}` } });
    assert.equal(admitted.status, 200);
    assert.match(await admitted.text(), /^orrery_queries_running \S+$/m);
    // The probes stay open.
    assert.equal((await get('/health')).status, 200);
    assert.equal((await get('/ready')).status, 200);
  });

  it('answers 404 for unknown paths and 405 for GET on an OTLP route', async () => {
    assert.equal((await get('/nope')).status, 404);
    const response = await get('/v1/logs');
    assert.equal(response.status, 405);
    assert.equal(response.headers.get('allow'), 'POST');
  });
});

describe('HTTP endpoints with a dependency failing', () => {
  // A store of the test's own (a folder, whatever the suite's), to break under the server.
  const storeRoot = mkdtempSync(join(tmpdir(), 'orrery-ready-store-'));
  const store = join(storeRoot, 'lake');
  const fixture = useOrrery({ MICROMEGAS_OBJECT_STORE_URI: pathToFileURL(store).href }, 'serve');
  const get = (path: string) => fetch(`http://127.0.0.1:${fixture.orrery.httpPort}${path}`);
  after(() => rmSync(storeRoot, { recursive: true, force: true }));

  it("/ready's 503 and /health tell anyone on the port nothing of the failure (no path, no address)", async () => {
    assert.equal((await get('/ready')).status, 200);
    // The store's folder turned into a file: listing it fails with ENOTDIR and the folder's path.
    renameSync(store, `${store}.away`);
    writeFileSync(store, '');
    try {
      const ready = await get('/ready');
      assert.equal(ready.status, 503);
      const text = await ready.text();
      assert.equal(
        text,
        'not ready: a dependency (the metadata database or the object store) is not usable: see the server log\n',
      );
      assert.ok(!text.includes(storeRoot), text);
      const health = await get('/health');
      assert.deepEqual([health.status, await health.text()], [200, 'ok\n']);
    } finally {
      rmSync(store);
      renameSync(`${store}.away`, store);
    }
    assert.equal((await get('/ready')).status, 200);
  });
});
