// What a commit group's write costs as one object per group (today: a file created, written, fsynced and closed;
// the folder fsynced once per 8 new files, as ObjectStore.reserveNew does) against the lead of issue 16's s19 brief,
// one append-only segment per writer (the group appended to an open file, then fdatasync), on this machine's
// filesystem, in two states: none of its inodes freed lately, and right after CHURN files were written and deleted
// in the same folder tree (what a bench run's cleanup or a retention pass does). Without a journal, ext4 walks the
// free inodes deleted in the last seconds (up to 5 minutes while their table block is dirty) at every creation.
//
//   node bench/ingestion/segment-write.mjs [GROUPS=384] [CHURN=5000] [DIR=<a folder on the lake's filesystem>]
//
// Each group is two 40 KB payloads and a 400-byte manifest (a 4-sender group). The two ways run in alternate blocks of
// 48 groups; printed per way and state: process CPU (user + system) and wall time per group, medians of the blocks,
// and the ratio segment / object. The calls are synchronous, on one thread, so process CPU is the calls' own.
import {
  closeSync,
  fdatasyncSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writevSync,
} from 'node:fs';
import { join } from 'node:path';
import { cpuUsage } from 'node:process';

const groups = Number(process.argv[2] ?? 384);
const churn = Number(process.argv[3] ?? 5000);
const root = process.argv[4] ?? join(process.env.TMPDIR ?? '/tmp', `orrery-segment-write-${process.pid}`);
const BLOCK = 48; // a multiple of the 8 objects reserved at once
const parts = [Buffer.alloc(40_000, 1), Buffer.alloc(40_000, 2), Buffer.alloc(400, 3)];

let made = 0;
function syncFolder(dir) {
  const folder = openSync(dir, 'r');
  fsyncSync(folder);
  closeSync(folder);
}

function objects(dir, n) {
  let reserved = [];
  for (let i = 0; i < n; i++) {
    // Reserved 8 at a time: created, then one fsync of the folder for the eight names.
    if (reserved.length === 0) {
      reserved = Array.from({ length: 8 }, () => openSync(join(dir, `g${made++}`), 'wx'));
      syncFolder(dir);
    }
    const fd = reserved.shift();
    writevSync(fd, parts, 0);
    fsyncSync(fd);
    closeSync(fd);
  }
  for (const fd of reserved) closeSync(fd);
}

function segment(dir, n) {
  const path = join(dir, `s${made++}`);
  const fd = openSync(path, 'wx');
  syncFolder(dir);
  for (let i = 0; i < n; i++) {
    writevSync(fd, parts);
    fdatasyncSync(fd);
  }
  closeSync(fd);
}

function timed(way, dir) {
  const c0 = cpuUsage();
  const t0 = process.hrtime.bigint();
  way(dir, BLOCK);
  const c = cpuUsage(c0);
  return { cpu: (c.user + c.system) / 1000 / BLOCK, wall: Number(process.hrtime.bigint() - t0) / 1e6 / BLOCK };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function measure(state, dir) {
  const runs = { object: [], segment: [] };
  for (let b = 0; b < groups / BLOCK; b++) {
    const order = b % 2 === 0 ? ['object', 'segment'] : ['segment', 'object'];
    for (const way of order) runs[way].push(timed(way === 'object' ? objects : segment, dir));
  }
  const line = (way) =>
    `${way.padEnd(8)} CPU ${median(runs[way].map((r) => r.cpu)).toFixed(3)} ms, wall ${median(runs[way].map((r) => r.wall)).toFixed(3)} ms per group`;
  const ratio = median(runs.segment.map((r) => r.cpu)) / median(runs.object.map((r) => r.cpu));
  console.log(`${state}:\n  ${line('object')}\n  ${line('segment')}\n  segment / object CPU ${ratio.toFixed(2)}x`);
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

mkdirSync(root, { recursive: true });
try {
  console.log(`segment-write: ${groups} groups of 2 x 40 KB + 400 B per way and state, in ${root}, load ${load()}`);
  const quiet = join(root, 'quiet');
  mkdirSync(quiet);
  measure('no inodes freed lately', quiet);
  const gone = join(root, 'churn');
  mkdirSync(gone);
  for (let i = 0; i < churn; i++) writeFileSync(join(gone, `f${i}`), parts[0]);
  rmSync(gone, { recursive: true });
  const after = join(root, 'after');
  mkdirSync(after);
  measure(`right after ${churn} files of 40 KB were deleted beside them`, after);
  console.log(`load at the end ${load()}`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
