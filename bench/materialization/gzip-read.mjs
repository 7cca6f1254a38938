// The materializer's read phase for logs bodies kept gzip as the client sent them (issue 16), on 2,000 of the bench's
// bodies gzipped at level 1 (what the load generator's GZIP=1 sends), alternately each way, in one process:
//   inflated  inflated on libuv's threads before the statement (nativeLogsPayloads), the bundle holding the
//             inflated bytes: the materializer's way before c930d18
//   stored    told apart by storedProtobufSize (its first 4 KiB inflated, the trailer's length), the bundle holding
//             the bytes as stored; the ordered read's decode thread inflates them beside the statement
// Each line: the process's CPU-seconds (every thread), wall seconds and the bundle's MB; load average at the end.
//
//   node bench/materialization/gzip-read.mjs [--payloads 2000] [--rounds 3]
import { rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildTemplates, makeBody } from '../ingestion/bodies.mjs';
import { arg } from './payloads.mjs';

const root = process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const { nativeLogsPayloads } = await import(`${root}/dist/src/engine/index.js`);
const { storedProtobufSize } = await import(`${root}/dist/src/ingestion/index.js`);
const templates = buildTemplates(8, 4, 1000);
const payloads = Array.from({ length: arg('payloads', 2000) }, (_, n) =>
  gzipSync(makeBody(templates, n, 'gzip-read', 1000).body, { level: 1 }),
);
const inflate = nativeLogsPayloads();
const bundle = join(tmpdir(), `orrery-gzip-read-${process.pid}`);
const ways = {
  inflated: () => Promise.all(payloads.map((p) => inflate(p))),
  stored: async () => payloads.map((p) => (storedProtobufSize(p) === null ? null : p)),
};
try {
  for (let round = 0; round < arg('rounds', 3); round++)
    for (const [way, read] of Object.entries(ways)) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const parts = await read();
      if (parts.includes(null)) throw new Error(`${way}: a payload was not told protobuf`);
      writeFileSync(bundle, Buffer.concat(parts));
      const cpu = process.cpuUsage(cpu0);
      const mb = parts.reduce((n, p) => n + p.length, 0) / 1e6;
      console.log(
        `${way.padEnd(8)} cpu ${((cpu.user + cpu.system) / 1e6).toFixed(3)} s  wall ${((performance.now() - t0) / 1000).toFixed(3)} s  bundle ${mb.toFixed(1)} MB`,
      );
    }
} finally {
  rmSync(bundle, { force: true });
}
console.log(
  `load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
