// What the worker thread spends on one 1,000-record logs request (issue 16): the native seal of the loadgen's
// OTLP/JSON body (transcoded to protobuf, then scanned, hashed, compressed: sealJsonLogs) against the seal of the
// same records' protobuf body (sealLogs), in turn, ROUNDS rounds of N requests each; process CPU ms per request
// (the seal runs on libuv's threads, so the CPU clock is what counts) and the ratio.
//
//   node bench/ingestion/json-seal.mjs [N=300] [ROUNDS=5]      (after npm run build)
import { createRequire } from 'node:module';
import { buildTemplate } from './bodies.mjs';

const native = createRequire(import.meta.url)('../../dist/native/arrow_export.node');
if (!native.sealJsonLogs) throw new Error('the native addon has no sealJsonLogs: npm run build');
const [n = 300, rounds = 5] = process.argv.slice(2).map(Number);
const json = buildTemplate(0, 0, 1000, 'json').bytes;
const protobuf = buildTemplate(0, 0, 1000, 'protobuf').bytes;

async function cpuPerRequest(seal) {
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) await seal();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / n;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const figures = { json: [], protobuf: [] };
await cpuPerRequest(() => native.sealJsonLogs(json)); // warm-up
for (let r = 0; r < rounds; r++) {
  figures.json.push(await cpuPerRequest(() => native.sealJsonLogs(json)));
  figures.protobuf.push(await cpuPerRequest(() => native.sealLogs(protobuf, true)));
}
const [loadavg] = (await import('node:os')).loadavg();
console.log(`bodies: JSON ${json.length} bytes, protobuf ${protobuf.length} bytes; load ${loadavg.toFixed(1)}`);
for (const [name, values] of Object.entries(figures))
  console.log(
    `${name.padEnd(8)} CPU ms per request: ${values.map((v) => v.toFixed(3)).join(' ')} (median ${median(values).toFixed(3)})`,
  );
console.log(`JSON / protobuf: ${(median(figures.json) / median(figures.protobuf)).toFixed(2)}x`);
