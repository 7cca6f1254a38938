// The event loop's share of gunzipping OTLP bodies (issue 16): decodeBody (src/ingestion/otlp/body-decoder.ts) of
// two built trees, alternately in one run, on the same gzipped 1,000-record logs bodies (bodies.mjs, level 1 as
// loadgen.mjs sends them), CONCURRENCY at once. zlib inflates on libuv's threads; what the event loop pays is
// the stream glue of each step. Prints, per tree and round, the main thread's CPU ms per body (from
// /proc/self/task/<pid>/stat) and wall ms per body, then the medians and B/A; checks every output equals its body.
//
//   node bench/ingestion/gunzip-loop.mjs <tree A> <tree B> [--bodies 2000] [--rounds 3] [--concurrency 16]
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { buildTemplates, makeBody } from './bodies.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? fallback : Number(args[i + 1]);
};
const trees = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (trees.length !== 2)
  throw new Error('usage: gunzip-loop.mjs <tree A> <tree B> [--bodies N] [--rounds N] [--concurrency N]');
const count = option('bodies', 2000);
const rounds = option('rounds', 3);
const concurrency = option('concurrency', 16);

const mainThreadMs = () => {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, USER_HZ = 100
};

const templates = buildTemplates(4, 4, 1000);
const bodies = Array.from({ length: 64 }, (_, i) => makeBody(templates, i, 'gunzip', 1000).body);
const gzipped = bodies.map((b) => gzipSync(b, { level: 1 }));
const sides = await Promise.all(
  trees.map(async (tree) => (await import(`${tree}/dist/src/ingestion/otlp/body-decoder.js`)).decodeBody),
);

const results = [[], []];
for (let round = 1; round <= rounds; round++) {
  for (const [side, decodeBody] of sides.entries()) {
    let next = 0;
    const cpu0 = mainThreadMs();
    const start = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < count; i = next++) {
          const out = await decodeBody(gzipped[i % gzipped.length], 'gzip');
          if (!Buffer.from(out).equals(bodies[i % bodies.length])) throw new Error(`body ${i} decoded wrong`);
        }
      }),
    );
    const wall = performance.now() - start;
    const cpu = mainThreadMs() - cpu0;
    results[side].push({ cpu: cpu / count, wall: wall / count });
    console.log(
      `round ${round} ${'AB'[side]}: main thread ${(cpu / count).toFixed(3)} ms/body, wall ${(wall / count).toFixed(3)} ms/body`,
    );
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const [a, b] = results.map((r) => ({ cpu: median(r.map((x) => x.cpu)), wall: median(r.map((x) => x.wall)) }));
const kib = Math.round(bodies[0].length / 1024);
console.log(
  `A = ${trees[0]}, B = ${trees[1]}: ${count} bodies of ~${kib} KiB (gzip ~${Math.round(gzipped[0].length / 1024)} KiB), ${concurrency} at once`,
);
console.log(
  `median main-thread ms/body A ${a.cpu.toFixed(3)}, B ${b.cpu.toFixed(3)} (B/A ${(b.cpu / a.cpu).toFixed(2)}); wall A ${a.wall.toFixed(3)}, B ${b.wall.toFixed(3)} (B/A ${(b.wall / a.wall).toFixed(2)})`,
);
console.log(`load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
