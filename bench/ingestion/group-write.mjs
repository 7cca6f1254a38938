// A commit group's payload object written by the file store, four ways (issue 16): `put` (the parts copied into
// one buffer, mkdir, temporary file, write, fsync, close, rename, folder fsync), `putNew` (in place: open, one
// writev, fsync, close, folder fsync), `reserved` (putNew of a key reserved while the group before it was
// written: writev, fsync and close on the group's path, the open and the folder's fsync done ahead) and `batched`
// (keys reserved 8 at a time with one folder fsync, as IngestionService does since 808b7b8), alternately, in a
// temporary folder on the same file system as $TMPDIR.
// Prints the median (and p90) wall time per group, the process's CPU during it (user + system, the kernel's share of
// the writes and fsyncs included; a reservation's work overlaps the groups after it, whichever way they are, so
// compare wall times) and their ratios to putNew.
//   node bench/ingestion/group-write.mjs [groups=150] [rounds=4] [parts=6] [part bytes=40000] [root=the repo]
// (groups x rounds groups each way)
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [groups = 150, rounds = 4, partCount = 6, partBytes = 40_000] = process.argv.slice(2, 6).map(Number);
const root = process.argv[6] ?? new URL('../..', import.meta.url).pathname;
const { FileObjectStore } = await import(join(root, 'dist/src/lakehouse/index.js'));
const folder = mkdtempSync(join(tmpdir(), 'orrery-group-write-'));
const store = new FileObjectStore(folder);
const parts = Array.from({ length: partCount }, () => randomBytes(partBytes));

let next = null;
const batch = [];
const ways = {
  put: (key) => store.put(key, Buffer.concat(parts)),
  putNew: (key) => store.putNew(key, parts),
  reserved: (key) => {
    const file = next ?? key;
    next = `${key}.next`;
    store.reserveNew([next]);
    return store.putNew(file, parts);
  },
  batched: (key) => {
    const file = batch.shift() ?? key;
    if (batch.length <= 1) {
      const keys = Array.from({ length: 8 }, (_, i) => `${key}.${i}`);
      store.reserveNew(keys);
      batch.push(...keys);
    }
    return store.putNew(file, parts);
  },
};
const results = { put: [], putNew: [], reserved: [], batched: [] };
try {
  // One group of each way in turn, so that the three see the same moments of a shared disk's load.
  for (let i = 0; i < groups * rounds; i++)
    for (const [name, write] of Object.entries(ways)) {
      const cpu = process.cpuUsage();
      const start = performance.now();
      await write(`blobs/groups/2026-12-05/${name}_${randomUUID()}.payloads`);
      const used = process.cpuUsage(cpu);
      results[name].push({ wall: performance.now() - start, cpu: (used.user + used.system) / 1000 });
    }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
console.log(`${groups * rounds} groups of ${partCount} x ${partBytes} bytes each way, one of each in turn`);
const med = (name, f) => median(results[name].map(f)).toFixed(3);
console.log(
  `median ms per group: ${Object.keys(results)
    .map(
      (name) =>
        `${name} wall ${med(name, (r) => r.wall)} (p90 ${p90(results[name].map((r) => r.wall)).toFixed(3)}) cpu ${med(name, (r) => r.cpu)}`,
    )
    .join('; ')}`,
);
const ratio = (name, f) => (median(results[name].map(f)) / median(results.putNew.map(f))).toFixed(2);
console.log(
  `to putNew: put wall ${ratio('put', (r) => r.wall)} cpu ${ratio('put', (r) => r.cpu)}; ` +
    `reserved wall ${ratio('reserved', (r) => r.wall)} cpu ${ratio('reserved', (r) => r.cpu)}; ` +
    `batched wall ${ratio('batched', (r) => r.wall)} cpu ${ratio('batched', (r) => r.cpu)}`,
);
