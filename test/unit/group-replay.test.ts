// A commit group's manifest (src/ingestion/group-replay.ts): read back as written, and a torn or altered object, or
// one named outside the replayed range, is not replayed (its rows would name bytes that are not what was sent).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { groupManifest, readGroup, replayGroups, type BlockRow } from '../../src/ingestion/group-replay.js';
import { FileObjectStore, payloadGroupKey } from '../../src/lakehouse/index.js';

describe('commit group manifests', () => {
  const root = mkdtempSync(join(tmpdir(), 'orrery-group-replay-'));
  const store = new FileObjectStore(root);
  after(() => rmSync(root, { recursive: true, force: true }));

  const at = BigInt(Date.now()) * 1_000_000n;
  const payloads = [Buffer.from('first payload'), Buffer.from('second')];
  const rows = (file: string): BlockRow[] =>
    payloads.map((p, i) => ({
      blockId: `00000000-0000-8000-8000-00000000000${i}`,
      streamId: '00000000-0000-8000-8000-0000000000aa',
      processId: '00000000-0000-8000-8000-0000000000bb',
      audience: 'team_x',
      resource: { 'service.name': 'svc', 'host.name': 'h', n: 3, nested: { a: [1, 'b'] } },
      begin: at + BigInt(i),
      end: at + 10n ** 18n + BigInt(i),
      count: 7 + i,
      file,
      offset: i === 0 ? 0 : payloads[0].byteLength,
      size: p.byteLength,
    }));
  const write = async (key: string): Promise<void> =>
    store.putNew(key, [...payloads, ...groupManifest(payloads, 'logs', rows(key))]);

  it('reads back the rows of a whole object, and replays the groups named in range once each', async () => {
    const key = payloadGroupKey(at);
    await write(key);
    assert.deepEqual(await readGroup(store, key), { signal: 'logs', rows: rows(key) });
    // The payloads are where the rows say.
    for (const row of rows(key))
      assert.deepEqual(
        Buffer.from((await store.readRange(key, row.offset, row.size))!),
        payloads[row.offset === 0 ? 0 : 1],
      );
    const older = payloadGroupKey(at - 3_600_000_000_000n);
    await write(older);
    const replayed: BlockRow[][] = [];
    const n = await replayGroups(store, [[at - 1_000_000_000n, at + 1_000_000_000n]], async (signal, r, durable) => {
      assert.equal(signal, 'logs');
      assert.equal(durable, true);
      replayed.push([...r]);
    });
    assert.equal(n, 1);
    assert.deepEqual(replayed, [rows(key)]);
  });

  it('a torn, altered or empty object is not replayed', async () => {
    const torn = payloadGroupKey(at);
    await write(torn);
    truncateSync(store.location(torn), (await store.size(torn))! - 1);
    assert.equal(await readGroup(store, torn), null);

    const altered = payloadGroupKey(at);
    await write(altered);
    const bytes = readFileSync(store.location(altered));
    bytes[3] ^= 1; // a payload byte: the rows are intact, the bytes they name are not
    writeFileSync(store.location(altered), bytes);
    assert.equal(await readGroup(store, altered), null);

    const empty = payloadGroupKey(at);
    await store.putNew(empty, []);
    assert.equal(await readGroup(store, empty), null);
  });
});
