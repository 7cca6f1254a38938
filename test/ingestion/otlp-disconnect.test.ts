// An OTLP/HTTP client that disconnects before its answer (docs/cancellation.md): a whole body is stored all the
// same, as one never acknowledged, and the client's retry stores nothing more (a block's id is its content's); a
// body cut short is stored not at all. The order is made, not raced: the server's insert waits on a lock the test
// holds until the client has gone.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { blockInsertTag } from '../../src/metadata/index.js';
import { metricLines, pollUntil } from '../lakehouse/lakehouse-fixtures.js';
import { readerKey, useOrrery } from '../support/orrery-process.js';

/** An OTLP/JSON logs request of three resources (three streams, three blocks). */
const body = Buffer.from(
  JSON.stringify({
    resourceLogs: [0, 1, 2].map((i) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: `gone-${i}` } }] },
      scopeLogs: [
        {
          scope: { name: 'lib' },
          logRecords: [{ timeUnixNano: String(1_700_000_000_000_000_000n + BigInt(i)), body: { stringValue: 'r' } }],
        },
      ],
    })),
  }),
);

describe('an OTLP/HTTP client that disconnects before its answer', () => {
  const fixture = useOrrery();
  const blocks = async (): Promise<number> =>
    (await fixture.orrery.metadata.query<{ n: number }>(`SELECT count(*)::int AS n FROM blocks`)).rows[0].n;
  const send = (payload: Buffer): Promise<Response> =>
    fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${readerKey.key}` },
      body: new Uint8Array(payload),
    });
  /**
   * A POST of the body's first `bytes` bytes, the request left open (the caller destroys it). Sent once the server
   * has answered 100 Continue: its handler has the request then (Node answers it as it hands the request over).
   */
  const post = async (bytes: number, payload = body, encoding = 'identity'): Promise<ClientRequest> => {
    const request = httpRequest({
      host: '127.0.0.1',
      port: fixture.orrery.httpPort,
      path: '/v1/logs',
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'content-length': payload.byteLength,
        'content-encoding': encoding,
        authorization: `Bearer ${readerKey.key}`,
        expect: '100-continue',
      },
    });
    request.on('error', () => {}); // destroyed by the test
    request.flushHeaders();
    await once(request, 'continue');
    request.write(payload.subarray(0, bytes));
    if (bytes === payload.byteLength) request.end();
    return request;
  };

  it('a whole body is stored though never acknowledged; its retry is acknowledged and stores nothing more', async () => {
    const before = await blocks();
    let decoy: Promise<unknown> | undefined;
    await fixture.orrery.metadata.transaction(async (tx) => {
      await tx.query('LOCK TABLE blocks IN EXCLUSIVE MODE');
      const holder = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // Another writer of blocks waits for the lock first, as a background job could: it is not the request's insert.
      decoy = fixture.orrery.metadata.query('DELETE FROM blocks WHERE false');
      const request = await post(body.byteLength);
      // The server has the whole body: its insert of the blocks (tagged) waits for the test's lock.
      await pollUntil(
        "the request's insert waiting for the lock",
        async () =>
          (
            await fixture.orrery.metadata.query(
              `SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2`,
              [holder, `${blockInsertTag}%`],
            )
          ).rows.length,
        (n) => n > 0,
        { timeoutMs: 120_000, intervalMs: 50 },
      );
      request.destroy();
    });
    await decoy;
    await pollUntil('the request stored', blocks, (n) => n === before + 3, { timeoutMs: 120_000, intervalMs: 100 });
    assert.equal((await send(body)).status, 200);
    assert.equal(await blocks(), before + 3);
  });

  it('a body cut short stores nothing, and the server goes on answering', async () => {
    const before = await blocks();
    const closed = async (): Promise<number> =>
      Number(
        /status="499"\} (\d+)/.exec(
          (await metricLines(fixture.orrery.httpPort, 'orrery_ingestion_requests_total')).join('\n'),
        )?.[1] ?? 0,
      );
    const counted = await closed();
    // As JSON, and gzipped: the gunzip of a cut body never fails as the body's fault (400), the cut comes first.
    const zipped = gzipSync(body);
    for (const request of [await post(body.byteLength / 2), await post(zipped.byteLength / 2, zipped, 'gzip')])
      request.destroy();
    // The server has ended with them: counted as 499 (client closed request), not as its own failure.
    await pollUntil('the requests counted', closed, (n) => n === counted + 2, { timeoutMs: 120_000, intervalMs: 100 });
    assert.equal(await blocks(), before);
    assert.equal((await send(Buffer.from('{}'))).status, 200);
  });
});
