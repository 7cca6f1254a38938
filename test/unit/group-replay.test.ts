// A commit group's manifest (src/ingestion/group-replay.ts): read back as written, and a torn or altered object, or
// one named outside the replayed range, is not replayed (its rows would name bytes that are not what was sent). A
// replay lists only the keys named in its ranges and reads only manifests, but for groups with rows missing.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, truncateSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, describe, it } from 'node:test';
import {
  groupManifest,
  readGroup,
  readManifest,
  replayGroups,
  type BlockRow,
  type ReplayRange,
} from '../../src/ingestion/group-replay.js';
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
  const none = async (): Promise<Set<string>> => new Set();
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
    const n = await replayGroups(
      store,
      [{ from: at - 1_000_000_000n, until: at + 1_000_000_000n }],
      none,
      async (signal, r, durable) => {
        assert.equal(signal, 'logs');
        assert.equal(durable, true);
        replayed.push([...r]);
      },
    );
    assert.deepEqual(n, { listed: 1, readWhole: 1, inserted: 1, refused: 0 });
    assert.deepEqual(replayed, [rows(key)]);
  });

  it('lists only the keys named in its ranges, across midnight, and each once', async () => {
    const second = 1_000_000_000n;
    const midnight = BigInt(Date.parse('2031-01-01T00:00:00Z')) * 1_000_000n;
    const named = [-2n, -1n, 0n, 1n, 3n].map((s) => payloadGroupKey(midnight + s * second));
    for (const key of named) await write(key);
    const inserted: string[] = [];
    const replay = (ranges: ReplayRange[]) =>
      replayGroups(store, ranges, none, async (_, r) => {
        inserted.push(...new Set(r.map((row) => row.file)));
      });
    const n = await replay([
      { from: midnight - second, until: midnight + second },
      { from: midnight, until: midnight + 2n * second },
    ]);
    assert.deepEqual(n, { listed: 3, readWhole: 3, inserted: 3, refused: 0 });
    assert.deepEqual(inserted, named.slice(1, 4));
    assert.equal((await replay([{ from: midnight + 4n * second, until: midnight + 9n * second }])).listed, 0);
  });

  it("a range of a writer's mark reads no group another writer named (one naming none, it reads)", async () => {
    const when = BigInt(Date.parse('2032-06-01T12:00:00Z')) * 1_000_000n;
    const [one, other] = [randomUUID(), randomUUID()];
    const mine = [payloadGroupKey(when, one), payloadGroupKey(when + 1_000_000_000n, one)];
    const unnamed = payloadGroupKey(when); // by a server from before groups named their writer
    for (const key of [...mine, payloadGroupKey(when, other), unnamed]) await write(key);
    const inserted: string[] = [];
    const range = { from: when, until: when + 1_000_000_000n };
    const n = await replayGroups(store, [{ ...range, writer: one }], none, async (_, r) => {
      inserted.push(...new Set(r.map((row) => row.file)));
    });
    assert.deepEqual(n, { listed: 3, readWhole: 3, inserted: 3, refused: 0 });
    assert.deepEqual(inserted.sort(), [...mine, unnamed].sort());
    assert.equal((await replayGroups(store, [range], none, async () => {})).listed, 4);
  });

  it('reads whole only a group with rows missing, and inserts only those', async () => {
    const key = payloadGroupKey(at + 7_200_000_000_000n);
    await write(key);
    const range = [{ from: at + 7_200_000_000_000n, until: at + 7_200_000_000_000n }];
    const inserted: BlockRow[][] = [];
    const insert = async (_: unknown, r: readonly BlockRow[]) => void inserted.push([...r]);
    const [first, second] = rows(key);
    const all = await replayGroups(store, range, async () => new Set([first.blockId, second.blockId]), insert);
    assert.deepEqual(all, { listed: 1, readWhole: 0, inserted: 0, refused: 0 });
    const one = await replayGroups(store, range, async () => new Set([first.blockId]), insert);
    assert.deepEqual(one, { listed: 1, readWhole: 1, inserted: 1, refused: 0 });
    assert.deepEqual(inserted, [[second]]);
    // Its payloads altered: the manifest still says a row is missing, but the whole fails its check.
    const bytes = readFileSync(store.location(key));
    bytes[3] ^= 1;
    writeFileSync(store.location(key), bytes);
    assert.deepEqual(await replayGroups(store, range, none, insert), {
      listed: 1,
      readWhole: 1,
      inserted: 0,
      refused: 0,
    });
  });

  it('reads a manifest longer than its first read of the end', async () => {
    const key = payloadGroupKey(at);
    const many = Array.from({ length: 300 }, (_, i) => ({
      ...rows(key)[0],
      blockId: `00000000-0000-8000-8000-${String(i).padStart(12, '0')}`,
      resource: { 'service.name': 'svc', padding: 'x'.repeat(300) },
    }));
    await store.putNew(key, [payloads[0], ...groupManifest([payloads[0]], 'logs', many)]);
    assert.ok((await store.size(key))! > 96 * 1024);
    assert.deepEqual(await readManifest(store, key), { signal: 'logs', rows: many });
    assert.deepEqual(await readGroup(store, key), { signal: 'logs', rows: many });
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
    assert.equal(await readManifest(store, empty), null);
    assert.equal(await readManifest(store, torn), null);
  });
});
