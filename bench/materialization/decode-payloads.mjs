// Rewrites, in place, the payload files stored as received (OTLP protobuf) under <lake>/blobs as the NDJSON
// lines the materializer decodes them to (payloadLines), so that in-process DuckDB can run the view's
// extract on them; prints one JSON line: files rewritten, records, seconds and CPU seconds of the decode.
// Run after Orrery's own materialization: it changes the lake.
//   node bench/materialization/decode-payloads.mjs <lake> [root=ORRERY_ROOT or the repo]
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const lake = process.argv[2];
const root = process.argv[3] ?? process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const { payloadLines } = await import(join(root, 'dist/src/ingestion/index.js'));

const files = readdirSync(join(lake, 'blobs'), { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.jsonl'))
  .map((f) => join(lake, 'blobs', f));
let rewritten = 0;
let lines = 0;
let seconds = 0;
const cpu0 = process.cpuUsage();
for (const file of files) {
  const payload = readFileSync(file);
  if (payload[0] === 0x7b) continue; // NDJSON already
  const start = performance.now();
  const decoded = payloadLines(payload);
  seconds += (performance.now() - start) / 1000;
  for (const byte of decoded) if (byte === 0x0a) lines++;
  writeFileSync(file, decoded);
  rewritten++;
}
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    files: files.length,
    rewritten,
    records: lines,
    decode_s: +seconds.toFixed(3),
    cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(3),
  }),
);
