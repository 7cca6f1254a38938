// How long a housekeeping pass holds OTLP ingestion back (its retention deletes of streams and processes run behind
// LOCK TABLE blocks IN SHARE MODE, see MaintenanceDaemon.housekeeping). A throwaway embedded Postgres under <dir> holds
// <n> processes and streams past the retention period, 90% of them still named by a block (a service running for
// longer) and 10% not; a loop inserts one block at a time (as an ingest flush does) while the daemon's housekeeping runs
// twice: the first pass deletes the 10%, the second has nothing to delete (every pass after). Prints one JSON line per
// pass: the pass's time and the longest insert during it, beside the longest insert in the half second before (what
// a sender would see otherwise). Run it against two builds to compare (BEFORE/AFTER):
//   node bench/maintenance/retention-stall.mjs <dir> [n=200000] [root=ORRERY_ROOT or the repo]
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
const n = Number(process.argv[3] ?? 200000);
const root = process.argv[4] ?? process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const { MetadataStore } = await import(join(root, 'dist/src/metadata/index.js'));
const { MaintenanceDaemon } = await import(join(root, 'dist/src/maintenance/index.js'));
const { FileObjectStore } = await import(join(root, 'dist/src/lakehouse/index.js'));

mkdirSync(join(dir, 'lake'), { recursive: true });
const db = await MetadataStore.open({ dataDir: dir, log: () => {} });
await db.query('TRUNCATE blocks, streams, processes');
const old = "now() - interval '40 days'";
await db.query(
  `INSERT INTO processes (process_id, insert_time, audience) SELECT gen_random_uuid(), ${old}, 'a' FROM generate_series(1, $1)`,
  [n],
);
await db.query(
  `INSERT INTO streams (stream_id, process_id, insert_time) SELECT gen_random_uuid(), process_id, ${old} FROM processes`,
);
// Blocks of now: retention keeps them (and so their streams), and they name no object.
await db.query(
  `INSERT INTO blocks (block_id, stream_id, process_id, audience) SELECT gen_random_uuid(), stream_id, process_id, 'a' FROM streams WHERE random() < 0.9`,
);
for (const table of ['processes', 'streams', 'blocks']) await db.query(`VACUUM ANALYZE ${table}`);
const daemon = new MaintenanceDaemon({
  db,
  store: new FileObjectStore(join(dir, 'lake')),
  materializer: undefined,
  viewSets: () => [],
  retentionDays: 30,
  housekeepingSeconds: 3600,
  orphanGraceSeconds: 3600,
  log: () => {},
});
for (const pass of [1, 2]) {
  let stop = false;
  let longest = 0;
  const inserts = (async () => {
    while (!stop) {
      const start = performance.now();
      await db.query(
        `INSERT INTO blocks (block_id, stream_id, process_id, audience) VALUES (gen_random_uuid(), gen_random_uuid(), gen_random_uuid(), 'a')`,
      );
      longest = Math.max(longest, performance.now() - start);
    }
  })();
  await new Promise((r) => setTimeout(r, 500));
  const quiet = longest;
  longest = 0;
  const start = performance.now();
  await daemon.housekeeping();
  const took = performance.now() - start;
  stop = true;
  await inserts;
  const left = (
    await db.query('SELECT (SELECT count(*) FROM streams) AS streams, (SELECT count(*) FROM processes) AS processes')
  ).rows[0];
  console.log(
    JSON.stringify({
      ref: process.env.ORRERY_REF_SHA ?? root,
      n,
      pass,
      passMs: Math.round(took),
      longestInsertMs: Math.round(longest),
      longestInsertMsBefore: Math.round(quiet),
      streamsLeft: Number(left.streams),
      processesLeft: Number(left.processes),
    }),
  );
}
await db.close();
rmSync(dir, { recursive: true, force: true });
