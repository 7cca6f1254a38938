// Issue 16, item 3: under overload OTLP requests are refused with 429 (the key's share is used) or 503 (the
// server's) and Retry-After, instead of queueing without bound; one key's flood leaves room for another key.
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';

const keys = [
  { ...adminKey },
  { ...readerKey, audiences: ['public'] },
  { name: 'third', key: 'third-key-0123', audiences: ['public'] },
];

interface Held {
  /** Sends the rest of the body; resolves with the answer's status. */
  finish(): Promise<number>;
}

/** A POST whose body (an empty logs request padded with spaces to `size` bytes) is sent up to `sent` bytes, then held. */
async function hold(port: number, key: string, size: number, sent: number): Promise<Held> {
  const body = Buffer.from('{"resourceLogs":[]' + ' '.repeat(size - 19) + '}');
  let answer: Promise<IncomingMessage> | undefined;
  const request: ClientRequest = httpRequest({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/v1/logs',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'content-length': size },
  });
  answer = new Promise((resolve, reject) => request.once('response', resolve).once('error', reject));
  request.write(body.subarray(0, sent));
  request.flushHeaders();
  await new Promise((resolve) => setTimeout(resolve, 300)); // the server reads what was sent
  return {
    finish: async () => {
      request.end(body.subarray(sent));
      const response = await answer!;
      response.resume();
      answer = undefined;
      return response.statusCode!;
    },
  };
}

describe('issue 16: OTLP ingestion under overload', () => {
  const fixture = useOrrery({
    MICROMEGAS_API_KEYS: JSON.stringify(keys),
    ORRERY_INGEST_MAX_CONCURRENT: '3',
    ORRERY_INGEST_MAX_CONCURRENT_PER_KEY: '2',
    ORRERY_INGEST_MEMORY_BYTES: '1000000',
  });
  const post = async (
    key: string,
    size = 100,
  ): Promise<{ status: number; retryAfter: string | null; text: string }> => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: '{"resourceLogs":[]' + ' '.repeat(size - 19) + '}',
    });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), text: await response.text() };
  };
  const port = (): number => fixture.orrery.httpPort;

  it('a key past its requests in progress gets 429 with Retry-After; another key is still served', async () => {
    const held = [await hold(port(), adminKey.key, 1000, 10), await hold(port(), adminKey.key, 1000, 10)];
    const refused = await post(adminKey.key);
    assert.equal(refused.status, 429);
    assert.equal(refused.retryAfter, '1');
    assert.match(JSON.parse(refused.text).message, /this key already has 2 requests in progress; retry later/);
    assert.equal((await post(readerKey.key)).status, 200);
    for (const h of held) assert.equal(await h.finish(), 200);
    assert.equal((await post(adminKey.key)).status, 200); // the slots came back
  });

  it('the server past its requests in progress gets 503 with Retry-After, whatever the key', async () => {
    const held = [
      await hold(port(), adminKey.key, 1000, 10),
      await hold(port(), adminKey.key, 1000, 10),
      await hold(port(), readerKey.key, 1000, 10),
    ];
    const refused = await post('third-key-0123');
    assert.equal(refused.status, 503);
    assert.equal(refused.retryAfter, '1');
    assert.match(JSON.parse(refused.text).message, /the server is ingesting 3 requests; retry later/);
    for (const h of held) assert.equal(await h.finish(), 200);
    assert.equal((await post('third-key-0123')).status, 200);
  });

  it('body bytes held are bounded: half the budget per key (429), the whole for the server (503)', async () => {
    const big = await hold(port(), adminKey.key, 600_000, 450_000); // 450 kB of the admin's 500 kB share
    const overShare = await post(adminKey.key, 100_000);
    assert.equal(overShare.status, 429);
    assert.match(JSON.parse(overShare.text).message, /this key's requests in progress hold \d+ bytes/);
    const other = await hold(port(), readerKey.key, 480_000, 450_000); // 900 kB held in all
    const overAll = await post('third-key-0123', 200_000);
    assert.equal(overAll.status, 503);
    assert.equal(overAll.retryAfter, '1');
    assert.match(JSON.parse(overAll.text).message, /the server holds \d+ bytes of requests in progress/);
    assert.equal(await big.finish(), 429); // the rest of its body is past the admin's share
    assert.equal(await other.finish(), 200);
    assert.equal((await post('third-key-0123', 200_000)).status, 200);
  });
});
