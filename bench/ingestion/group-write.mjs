// A commit group's payload object written by the file store, the two ways (issue 16): `put` (the parts copied into
// one buffer, mkdir, temporary file, write, fsync, close, rename, folder fsync) against `putNew` (in place: open,
// one writev, fsync, close, folder fsync), alternately, in a temporary folder on the same file system as $TMPDIR.
// Prints per group the wall time and the process's CPU (user + system, the kernel's share of the writes and fsyncs
// included), the medians and their ratio.
//   node bench/ingestion/group-write.mjs [groups=150] [rounds=4] [parts=6] [part bytes=40000] [root=the repo]
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

const ways = {
  put: (key) => store.put(key, Buffer.concat(parts)),
  putNew: (key) => store.putNew(key, parts),
};
const results = { put: [], putNew: [] };
try {
  for (let round = 0; round < rounds; round++)
    for (const [name, write] of Object.entries(ways)) {
      const cpu = process.cpuUsage();
      const start = performance.now();
      for (let i = 0; i < groups; i++) await write(`blobs/groups/2026-12-05/${name}_${randomUUID()}.payloads`);
      const used = process.cpuUsage(cpu);
      results[name].push({
        wall: (performance.now() - start) / groups,
        cpu: (used.user + used.system) / 1000 / groups,
      });
    }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${groups} groups of ${partCount} x ${partBytes} bytes per round, ${rounds} rounds each, alternately`);
for (const [name, rs] of Object.entries(results))
  console.log(
    `${name.padEnd(6)} ms per group: ${rs.map((r) => `wall ${r.wall.toFixed(2)} cpu ${r.cpu.toFixed(3)}`).join(' | ')}`,
  );
const [a, b] = [results.put, results.putNew];
const ratio = (f) => (median(b.map(f)) / median(a.map(f))).toFixed(2);
console.log(
  `median: put wall ${median(a.map((r) => r.wall)).toFixed(2)} cpu ${median(a.map((r) => r.cpu)).toFixed(3)}; ` +
    `putNew wall ${median(b.map((r) => r.wall)).toFixed(2)} cpu ${median(b.map((r) => r.cpu)).toFixed(3)}; ` +
    `putNew/put wall ${ratio((r) => r.wall)}, cpu ${ratio((r) => r.cpu)}`,
);
