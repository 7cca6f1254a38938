// How long a server's start takes after another server crashed (issue 16): the start replays every mark's window
// (src/ingestion/group-replay.ts) before it serves a request. For built trees taken in turn, each on a fresh data
// folder (its own embedded Postgres, a local lake): BEFORE groups are stored (1,000-record requests, one group each,
// as at 4 senders), then a crashed server's mark is set (its mark 200 ms old, as a kill -9 leaves it), then AFTER
// groups more (named in its window: the other servers go on storing until the start); LOST (a fraction, default 0:
// the server crashed, Postgres did not) of the window's blocks lose their rows, as a crash of Postgres would lose
// them. Then a new server's recover() is timed: what a user waits for between `orrery serve` and its first answer.
// Run in turn (A B A B ...), ROUNDS times. The page cache is warm (the groups were just written): a start after the
// machine's crash also reads them from disk.
//
//   node bench/ingestion/replay-start.mjs <tree A> <tree B> [BEFORE=2000] [AFTER=2000] [LOST=0] [ROUNDS=2]
//
// A tree is a built checkout (dist/ compiled): e.g. /tmp/orrery-bench-build-<sha> from ORRERY_REF (bench/lib.sh).
import { readFileSync } from 'node:fs';
import { buildTemplates, makeBody } from './bodies.mjs';
import { alternate, openTree } from './tree.mjs';

const [treeA, treeB, beforeArg, afterArg, lostArg, roundsArg] = process.argv.slice(2);
if (!treeA || !treeB) {
  console.error('usage: node bench/ingestion/replay-start.mjs <tree A> <tree B> [before] [after] [lost] [rounds]');
  process.exit(2);
}
const before = Number(beforeArg ?? 2000);
const after = Number(afterArg ?? 2000);
const lost = Number(lostArg ?? 0);
const rounds = Number(roundsArg ?? 2);
const batch = 1000;
const templates = buildTemplates(4, 2, batch);

async function measure(tree, round) {
  const { db, service, close } = await openTree(tree, 'replay-start');
  try {
    const writer = service();
    await writer.recover();
    const runId = `s${round}${tree.length % 10}${Date.now() % 1000}`.slice(0, 6).padEnd(6, 'x');
    let n = 0;
    const ingest = async (count) => {
      for (const end = n + count; n < end; n++)
        await writer.ingest('logs', makeBody(templates, n, runId, batch).body, 'protobuf', 'public');
    };
    await ingest(before);
    // The crashed server's mark: a server that marks, then is killed 200 ms later.
    const replayFrom = BigInt(Date.now() - 200) * 1_000_000n;
    const marked = await db.query('SELECT now() AS t');
    await ingest(after);
    await writer.close(); // a clean stop: its own mark goes, the crashed one's stays
    await db.query(
      `INSERT INTO ingest_marks (writer, replay_from, postgres_started, marked_at)
       VALUES (gen_random_uuid(), $1, now(), $2)`,
      [replayFrom, marked.rows[0].t],
    );
    const { rows } = await db.query(
      `SELECT block_id FROM blocks WHERE begin_time IS NOT NULL ORDER BY insert_time DESC LIMIT $1`,
      [Math.round(after * lost)],
    );
    await db.query('DELETE FROM blocks WHERE block_id = ANY($1::uuid[])', [rows.map((r) => r.block_id)]);
    const starting = service();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const replayed = await starting.recover();
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    await starting.close();
    const { rows: count } = await db.query('SELECT count(*)::int AS n FROM blocks');
    return {
      wallMs: wall,
      cpuMs: (cpu.user + cpu.system) / 1000,
      replayed: typeof replayed === 'number' ? `${replayed} read whole` : JSON.stringify(replayed),
      blocks: count[0].n,
    };
  } finally {
    await close();
  }
}

console.log(
  `replay-start: ${before} groups before the crashed server's mark, ${after} after, ${lost * 100}% of those lost; ` +
    `load ${readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ')}`,
);
console.log('round side  start ms  node cpu ms  blocks  replay');
await alternate(
  [treeA, treeB],
  rounds,
  measure,
  (r) =>
    `${r.wallMs.toFixed(0).padStart(9)} ${r.cpuMs.toFixed(0).padStart(12)} ${String(r.blocks).padStart(7)}  ${r.replayed}`,
  [
    ['wallMs', 0],
    ['cpuMs', 0],
  ],
);
