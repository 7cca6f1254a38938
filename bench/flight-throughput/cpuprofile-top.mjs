// Summarises a V8 .cpuprofile (node --cpu-prof): self time by function and by file.
//   node bench/flight-throughput/cpuprofile-top.mjs <file.cpuprofile> [top=15] [--callers]
// --callers: for each of the top functions, which callers its self time came through.
// Self time is summed from sample time deltas. Percentages are of all samples and of busy
// samples (everything but "(idle)", which is the main thread waiting in the event loop).
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

const showCallers = process.argv.includes('--callers');
const [file, topArg] = process.argv.slice(2).filter((a) => a !== '--callers');
if (!file) {
  console.error('usage: cpuprofile-top.mjs <file.cpuprofile> [top]');
  process.exit(2);
}
const top = Number(topArg ?? 15);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const root = new URL('../..', import.meta.url).pathname;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const selfUs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}

const shortUrl = (url) => {
  if (!url) return '';
  const path = url.startsWith('file://') ? new URL(url).pathname : url;
  const rel = path.startsWith(root) ? relative(root, path) : path;
  return rel.replace(/^node_modules\//, '');
};

const keyOf = (id) => {
  const { callFrame } = byId.get(id);
  const name = callFrame.functionName || '(anonymous)';
  const url = shortUrl(callFrame.url);
  return url ? `${name}  ${url}:${callFrame.lineNumber + 1}` : name;
};
const callers = new Map();
const functions = new Map();
const files = new Map();
let total = 0;
let idle = 0;
for (const [id, us] of selfUs) {
  const { callFrame } = byId.get(id);
  const name = callFrame.functionName || '(anonymous)';
  const url = shortUrl(callFrame.url);
  const key = url ? `${name}  ${url}:${callFrame.lineNumber + 1}` : name;
  functions.set(key, (functions.get(key) ?? 0) + us);
  const parent = parentOf.get(id);
  if (parent !== undefined) {
    const perKey = callers.get(key) ?? new Map();
    const parentKey = keyOf(parent);
    perKey.set(parentKey, (perKey.get(parentKey) ?? 0) + us);
    callers.set(key, perKey);
  }
  const fileKey = url || name;
  files.set(fileKey, (files.get(fileKey) ?? 0) + us);
  total += us;
  if (name === '(idle)') idle += us;
}
const busy = total - idle;
const pct = (us, of) => `${((100 * us) / of).toFixed(1).padStart(5)}%`;
const ms = (us) => `${(us / 1000).toFixed(0).padStart(7)} ms`;

console.log(`${file}`);
console.log(
  `total ${(total / 1e6).toFixed(2)} s sampled on the main thread, busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`,
);
console.log(`\ntop ${top} functions by self time          self      %all  %busy`);
for (const [key, us] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${ms(us)} ${pct(us, total)} ${key === '(idle)' ? '     ' : pct(us, busy)}  ${key}`);
  if (showCallers && key !== '(idle)') {
    for (const [caller, cus] of [...(callers.get(key) ?? [])].sort((a, b) => b[1] - a[1]).slice(0, 3)) {
      console.log(`${' '.repeat(26)}<- ${((100 * cus) / us).toFixed(0).padStart(3)}%  ${caller}`);
    }
  }
}
console.log(`\nby file / package                          self      %all  %busy`);
for (const [key, us] of [...files].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${ms(us)} ${pct(us, total)} ${key === '(idle)' ? '     ' : pct(us, busy)}  ${key}`);
}
