// CPU of storing one lone OTLP logs request (a group of one: what nearly every request is at 4 senders), in Node
// and in the embedded Postgres, for built trees taken in turn (issue 16). Each tree's IngestionService runs in
// this process on a fresh data folder (its own embedded Postgres, a local lake) with the native seal when built;
// REQUESTS bodies of 1,000 records (bench/ingestion/bodies.mjs, each unique) are ingested one after the other,
// ROUNDS times per tree, alternately. Prints per tree and round: the wall time per request, this process's CPU per
// request (all threads), its main thread's (the event loop: /proc schedstat) and the Postgres server's (postmaster
// and backends, from /proc). CPU time is what a loaded machine stretches least; the wall times are for reading, not
// comparing, under load.
//
//   node bench/ingestion/store-cpu.mjs <tree A> <tree B> [REQUESTS=300] [ROUNDS=3]
//
// A tree is a built checkout (dist/ compiled): e.g. /tmp/orrery-bench-build-<sha> from ORRERY_REF (bench/lib.sh).
import { readFileSync, readdirSync } from 'node:fs';
import { buildTemplates, makeBody } from './bodies.mjs';
import { alternate, openTree } from './tree.mjs';

const [treeA, treeB, requestsArg, roundsArg] = process.argv.slice(2);
if (!treeA || !treeB) {
  console.error('usage: node bench/ingestion/store-cpu.mjs <tree A> <tree B> [requests] [rounds]');
  process.exit(2);
}
const requests = Number(requestsArg ?? 300);
const rounds = Number(roundsArg ?? 3);
const batch = 1000;
const templates = buildTemplates(4, 2, batch);
const ticks = 100; // USER_HZ

/** CPU seconds (user + system) of a process and its children that are alive (the backends of a postmaster). */
function treeCpu(pid) {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(entry) === pid || Number(fields[1]) === pid) total += (Number(fields[11]) + Number(fields[12])) / ticks;
  }
  return total;
}

/** CPU time of this process's main thread (the event loop), in ns: the first field of its schedstat. */
function mainThreadNs() {
  return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ')[0]);
}

/** The postmaster of a data folder (its command line names the cluster under it). */
function postmasterOf(dataDir) {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'latin1');
      if (cmdline.includes(dataDir) && cmdline.includes('-D')) return Number(entry);
    } catch {
      // gone
    }
  }
  throw new Error(`no postmaster for ${dataDir}`);
}

async function measure(tree, round) {
  const { dataDir, service: newService, close } = await openTree(tree, 'store-cpu');
  let service;
  try {
    service = newService();
    await service.recover?.();
    const postmaster = postmasterOf(dataDir);
    const runId = `r${round}${tree.length % 10}${Date.now() % 1000}`.slice(0, 6).padEnd(6, 'x');
    for (let n = 0; n < 20; n++)
      await service.ingest('logs', makeBody(templates, n, runId, batch).body, 'protobuf', 'public');
    const bodies = Array.from({ length: requests }, (_, n) => makeBody(templates, 20 + n, runId, batch).body);
    const pg0 = treeCpu(postmaster);
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadNs();
    const t0 = performance.now();
    for (const body of bodies) await service.ingest('logs', body, 'protobuf', 'public');
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const mainMs = (mainThreadNs() - main0) / 1e6 / requests;
    const pg = treeCpu(postmaster) - pg0;
    return {
      wallMs: wall / requests,
      nodeMs: (cpu.user + cpu.system) / 1000 / requests,
      mainMs,
      pgMs: (pg * 1000) / requests,
    };
  } finally {
    await service?.close?.();
    await close();
  }
}

console.log(
  `store-cpu: ${requests} lone requests per run, load ${readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ')}`,
);
console.log('round side  wall ms/req  node cpu ms/req  main thread ms/req  postgres cpu ms/req');
await alternate(
  [treeA, treeB],
  rounds,
  measure,
  (r) =>
    `${r.wallMs.toFixed(2).padStart(12)} ${r.nodeMs.toFixed(3).padStart(16)} ${r.mainMs.toFixed(3).padStart(19)} ${r.pgMs.toFixed(3).padStart(20)}`,
  [
    ['wallMs', 3],
    ['nodeMs', 3],
    ['mainMs', 3],
    ['pgMs', 3],
  ],
);
