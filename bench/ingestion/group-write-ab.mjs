// The write stage of commit groups alone, through two built trees' FileObjectStore alternately (issue 16): each
// group's object reserved 8 at a time with one folder fsync (as IngestionService reserves them), then putNew of a
// 4-sender group (two 40 KB payloads and a manifest). Blocks of groups of each tree in turn (A B, then B A, ...);
// per block the wall time and the process's CPU (every thread's: the thread pool's opens, fsyncs and closes
// included) per group; prints the medians of the blocks and B/A.
//   node bench/ingestion/group-write-ab.mjs <tree A> <tree B> [blocks=30] [groups per block=60]
// (trees as bench/lib.sh builds them: /tmp/orrery-bench-build-<sha>; objects in a temporary folder of $TMPDIR)
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [treeA, treeB, blocks = 30, perBlock = 60] = process.argv.slice(2);
if (!treeA || !treeB) throw new Error('usage: group-write-ab.mjs <tree A> <tree B> [blocks] [groups per block]');
const sides = {};
for (const [side, tree] of [
  ['A', treeA],
  ['B', treeB],
]) {
  const { FileObjectStore } = await import(join(tree, 'dist/src/lakehouse/index.js'));
  const folder = mkdtempSync(join(tmpdir(), 'orrery-group-write-ab-'));
  sides[side] = { folder, store: new FileObjectStore(folder), reserved: [], blocks: [] };
}
const parts = [randomBytes(40_000), randomBytes(40_000), randomBytes(600)];

async function group({ store, reserved }) {
  const key = `blobs/groups/2026-12-06/${randomUUID()}.payloads`;
  const file = reserved.shift() ?? key;
  if (reserved.length <= 1) {
    const keys = Array.from({ length: 8 }, (_, i) => `${key}.${i}`);
    store.reserveNew(keys);
    reserved.push(...keys);
  }
  await store.putNew(file, parts);
}

try {
  for (let b = 0; b < Number(blocks); b++)
    for (const name of b % 2 ? ['B', 'A'] : ['A', 'B']) {
      const side = sides[name];
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < Number(perBlock); i++) await group(side);
      const used = process.cpuUsage(cpu);
      side.blocks.push({
        wall: (performance.now() - start) / perBlock,
        cpu: (used.user + used.system) / 1000 / perBlock,
      });
    }
} finally {
  for (const { folder, store } of Object.values(sides)) {
    store.close();
    rmSync(folder, { recursive: true, force: true });
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const of = (name, f) => median(sides[name].blocks.map(f));
const lower = sides.B.blocks.filter((r, i) => r.cpu < sides.A.blocks[i].cpu).length;
console.log(`${blocks} blocks of ${perBlock} groups per tree, alternately; ms per group, median of the blocks`);
for (const name of ['A', 'B'])
  console.log(`${name}: wall ${of(name, (r) => r.wall).toFixed(3)}, cpu ${of(name, (r) => r.cpu).toFixed(3)}`);
console.log(
  `B/A: wall ${(of('B', (r) => r.wall) / of('A', (r) => r.wall)).toFixed(2)}, cpu ${(of('B', (r) => r.cpu) / of('A', (r) => r.cpu)).toFixed(2)}` +
    ` (B's block used less CPU than A's beside it in ${lower} of ${blocks})`,
);
