// The validating scan's CPU (scanLogs alone, main thread) of two builds, alternately in one process, on the
// loadgen bodies (1,000 log records each): prints each build's median CPU ms per request and their ratio.
// Each root is a built checkout (its dist/), e.g. a bench build of a ref (bench/lib.sh, ORRERY_REF) and this one.
// With B = `native`, B is root A's native scan (the addon's, src/engine/native/logs-scan.cc, as the server calls it).
//   node bench/ingestion/scan-compare.mjs <root A> <root B> [rounds=41]
//   node bench/ingestion/scan-compare.mjs . native
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { buildTemplates, makeBody } from './bodies.mjs';

const [rootA, rootB, roundsArg] = process.argv.slice(2);
if (!rootA || !rootB) throw new Error('usage: node bench/ingestion/scan-compare.mjs <root A> <root B> [rounds]');
const rounds = Number(roundsArg ?? 41);
const scanOf = async (root) => (await import(join(root, 'dist/src/ingestion/otlp/logs-scan.js'))).scanLogs;
const nativeOf = async (root) => {
  const { nativeLogsScan } = await import(join(root, 'dist/src/engine/native-export.js'));
  const { scanLogsWith } = await import(join(root, 'dist/src/ingestion/otlp/logs-scan.js'));
  const flat = nativeLogsScan();
  if (!flat) throw new Error(`no native addon in ${root} (npm run build)`);
  return scanLogsWith(flat);
};
const [a, b] = [await scanOf(rootA), await (rootB === 'native' ? nativeOf(rootA) : scanOf(rootB))];
const templates = buildTemplates(8, 4, 1000);
const bodies = Array.from({ length: 200 }, (_, n) => makeBody(templates, n, 'scan', 1000).body);
const text = (scanned) => JSON.stringify(scanned, (_, v) => (typeof v === 'bigint' ? String(v) : v));
for (const body of bodies) if (text(a(body)) !== text(b(body))) throw new Error('the two scans answer differently');

/** CPU ms per request of one pass over the bodies. */
const pass = (scan) => {
  const cpu = process.cpuUsage();
  for (const body of bodies) scan(body);
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1000 / bodies.length;
};
// Warm-up (JIT).
for (let i = 0; i < 5; i++) {
  pass(a);
  pass(b);
}
const runs = { a: [], b: [] };
for (let i = 0; i < rounds; i++) {
  runs.a.push(pass(a));
  runs.b.push(pass(b));
}
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
const [ma, mb] = [median(runs.a), median(runs.b)];
console.log(
  `scan CPU per 1,000-record request: A ${ma.toFixed(3)} ms, B ${mb.toFixed(3)} ms, B/A ${(mb / ma).toFixed(3)} ` +
    `(${rounds} alternate passes of ${bodies.length} bodies; load ${loadavg()[0].toFixed(1)} at the end)`,
);
