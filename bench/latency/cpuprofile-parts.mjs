// The main thread's busy time of a server's .cpuprofile (node --cpu-prof) by part of a statement's path, over
// the timed part of a run only (V8's compilation and the start-up leave the share of the warm path otherwise):
// the window from `from` to `to` seconds before the profile's end (thread-cpu.sh's CLIENT=go with SECONDS_TIMED=8
// times two phases of 8 s, then stops the server: 17 to 1). Self time, each sample to the first part whose test
// its own frame passes (PROFILE.md, seventeenth pass).
//
//   node bench/latency/cpuprofile-parts.mjs <file.cpuprofile> [from=17] [to=1]
import { readFileSync } from 'node:fs';

const [file, from = '17', to = '1'] = process.argv.slice(2);
if (!file) {
  console.error('usage: cpuprofile-parts.mjs <file.cpuprofile> [from seconds before the end] [to]');
  process.exit(2);
}
const parts = [
  ['(idle)', (f) => f.functionName === '(idle)'],
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['native code below no JavaScript frame (program)', (f) => f.functionName === '(program)'],
  ["Node's errors built (NodeError)", (f) => f.functionName === 'NodeError'],
  ['DuckDB run + Arrow export (the exporter, @duckdb/node-api)', (f) => /native-export|@duckdb\/node-api/.test(f.url)],
  [
    'planning and running (sql/, engine/, views, rollups, tables, resources)',
    (f) => /dist\/src\/(sql|engine|views|rollups|tables|resources|lakehouse)\//.test(f.url),
  ],
  ["auth (the key's SHA-256, keyring)", (f) => /crypto\/hash|dist\/src\/auth\//.test(f.url)],
  ['AbortController, AbortSignal', (f) => /abort_controller/.test(f.url)],
  [
    'Flight layer (flight/, wire/, arrow/, apache-arrow, protobufjs)',
    (f) => /dist\/src\/(flight|wire|arrow)\/|apache-arrow|protobufjs/.test(f.url),
  ],
  ['grpc-js', (f) => /@grpc\/grpc-js/.test(f.url)],
  [
    "Node's HTTP/2, streams, events, buffers, microtasks",
    (f) =>
      /node:internal\/(http2|streams|stream_base|timers|buffer|process\/task_queues)|node:events|node:buffer/.test(
        f.url,
      ) || ['runMicrotasks', 'writeBuffer', 'writev', 'read', 'writeUtf8String'].includes(f.functionName),
  ],
];
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const byPart = new Map();
let sampled = 0;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0;
  at += delta;
  const before = (profile.endTime - at) / 1e6;
  if (before > Number(from) || before < Number(to)) continue;
  const frame = nodes.get(profile.samples[i]).callFrame;
  const part = parts.find(([, test]) => test(frame))?.[0] ?? 'other';
  byPart.set(part, (byPart.get(part) ?? 0) + delta);
  sampled += delta;
}
const busy = sampled - (byPart.get('(idle)') ?? 0);
console.log(
  `${from} to ${to} s before the end: ${(sampled / 1e6).toFixed(2)} s sampled, busy ${(busy / 1e6).toFixed(2)} s`,
);
for (const [part, us] of [...byPart].sort((a, b) => b[1] - a[1]))
  if (part !== '(idle)')
    console.log(`${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1e3).toFixed(0).padStart(6)} ms  ${part}`);
