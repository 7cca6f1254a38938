// Issue 16: concurrent OTLP requests of a signal are stored together (group commit: one round of payload
// writes and syncs, one Postgres statement). Each is still checked alone before it joins a flush (a bad body
// is a 400 and stores nothing while the others are stored), stored whole, stamped with its own key's
// audience, idempotent on retry, and answered only once its flush has committed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';

const keys = [
  { ...adminKey, audiences: ['team-a'] },
  { ...readerKey, audiences: ['team-b'] },
];
const recordsPerResource = 50;
const t0 = BigInt(Date.now()) * 1_000_000n;

/** A logs request of two resources (`<service>-a`, `<service>-b`); `time` overrides every record's time. */
function body(service: string, time?: string): Uint8Array {
  const type = exportRequestTypes.logs;
  return type
    .encode(
      type.fromObject({
        resourceLogs: ['a', 'b'].map((r) => ({
          resource: { attributes: [{ key: 'service.name', value: { stringValue: `${service}-${r}` } }] },
          scopeLogs: [
            {
              scope: { name: 'group-commit' },
              logRecords: Array.from({ length: recordsPerResource }, (_, i) => ({
                timeUnixNano: time ?? String(t0 + BigInt(i)),
                body: { stringValue: `${service} ${r} ${i}` },
              })),
            },
          ],
        })),
      }),
    )
    .finish();
}

describe('issue 16: group commit of concurrent OTLP requests', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: JSON.stringify(keys) });
  const post = async (key: string, payload: Uint8Array): Promise<number> => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
      body: new Uint8Array(payload),
    });
    await response.arrayBuffer();
    return response.status;
  };
  const flushes = async (): Promise<{ count: number; requests: number }> => {
    const text = await (await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/metrics`)).text();
    const value = (name: string): number =>
      Number(new RegExp(`^${name}\\{signal="logs"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    return { count: value('orrery_ingest_flush_requests_count'), requests: value('orrery_ingest_flush_requests_sum') };
  };
  /** The objects under blobs/ (on a local lake with the temporary files of writes too). */
  const payloads = async (): Promise<string[]> => {
    const keys: string[] = [];
    for await (const page of fixture.orrery.store.listWrittenBefore('blobs/', new Date(Date.now() + 3_600_000)))
      keys.push(...page);
    return keys;
  };
  const stored = async (): Promise<Array<{ exe: string; audience: string; blocks: number; records: number }>> =>
    (
      await fixture.orrery.metadata.query<{ exe: string; audience: string; blocks: number; records: number }>(
        `SELECT p.exe, p.audience, count(*)::int AS blocks, sum(b.nb_objects)::int AS records
           FROM blocks b JOIN processes p USING (process_id)
          WHERE b.audience = p.audience GROUP BY p.exe, p.audience ORDER BY p.exe`,
      )
    ).rows;

  it('a bad body among concurrent ones is refused alone; the others are stored whole with their audience', async () => {
    const senders = 24;
    const good = Array.from({ length: senders }, (_, i) => body(`gc${String(i).padStart(2, '0')}`));
    const keyOf = (i: number): string => keys[i % 2].key;
    const malformed = good[0].subarray(0, good[0].length - 3);
    const outOfRange = body('gc-bad', '18446744073709551615');
    const statuses = await Promise.all([
      ...good.map((payload, i) => post(keyOf(i), payload)),
      post(keyOf(0), good[0]), // a retry racing its original, maybe in the same flush
      post(keys[0].key, malformed),
      post(keys[1].key, outOfRange),
    ]);
    assert.deepEqual(statuses, [...good.map(() => 200), 200, 400, 400]);

    const expected = good.flatMap((_, i) =>
      ['a', 'b'].map((r) => ({
        exe: `gc${String(i).padStart(2, '0')}-${r}`,
        audience: keys[i % 2].audiences[0],
        blocks: 1,
        records: recordsPerResource,
      })),
    );
    assert.deepEqual(await stored(), expected);
    // Nothing of the refused bodies was written: one payload file per block, no temporary file left.
    const files = await payloads();
    assert.equal(files.length, expected.length, files.join('\n'));
    // The 25 accepted requests went through fewer flushes than requests: they were stored together.
    const { count, requests } = await flushes();
    assert.equal(requests, senders + 1);
    assert.ok(count < requests, `${count} flushes for ${requests} requests`);

    // Retried, each is acknowledged again and stores nothing twice.
    assert.deepEqual(
      await Promise.all(good.map((payload, i) => post(keyOf(i), payload))),
      good.map(() => 200),
    );
    assert.deepEqual(await stored(), expected);
    assert.equal((await payloads()).length, expected.length);
  });
});
