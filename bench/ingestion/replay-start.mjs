// How long a server's start takes after another server crashed (issue 16): the start replays every mark's window
// (src/ingestion/group-replay.ts) before it serves a request. For built trees taken in turn, each on a fresh data
// folder (its own embedded Postgres, a local lake), with 1,000-record requests (one group each, as at 4 senders): the
// server that will crash stores BEFORE groups, sets its mark, stores TAIL groups more and is killed (its mark left as
// a kill -9 leaves it); meanwhile another server stores AFTER groups (named in the crashed mark's window: the other
// servers go on storing until the start). LOST (a fraction, default 0: the server crashed, Postgres did not) of the
// TAIL groups' blocks lose their rows, as a crash of Postgres would lose them. Then a new server's recover() is timed:
// what a user waits for between `orrery serve` and its first answer. Run in turn (A B A B ...), ROUNDS times. The page
// cache is warm (the groups were just written): a start after the machine's crash also reads them from disk.
//
//   node bench/ingestion/replay-start.mjs <tree A> <tree B> [BEFORE=2000] [TAIL=200] [AFTER=2000] [LOST=0] [ROUNDS=2]
//
// A tree is a built checkout (dist/ compiled): e.g. /tmp/orrery-bench-build-<sha> from ORRERY_REF (bench/lib.sh).
import { readFileSync } from 'node:fs';
import { buildTemplates, makeBody } from './bodies.mjs';
import { alternate, openTree } from './tree.mjs';

const [treeA, treeB, beforeArg, tailArg, afterArg, lostArg, roundsArg] = process.argv.slice(2);
if (!treeA || !treeB) {
  console.error(
    'usage: node bench/ingestion/replay-start.mjs <tree A> <tree B> [before] [tail] [after] [lost] [rounds]',
  );
  process.exit(2);
}
const before = Number(beforeArg ?? 2000);
const tail = Number(tailArg ?? 200);
const after = Number(afterArg ?? 2000);
const lost = Number(lostArg ?? 0);
const rounds = Number(roundsArg ?? 2);
const batch = 1000;
const templates = buildTemplates(4, 2, batch);

async function measure(tree, round) {
  const { db, service, close } = await openTree(tree, 'replay-start');
  try {
    const [crashed, other] = [service(), service()];
    for (const s of [crashed, other]) await s.recover();
    const runId = `s${round}${tree.length % 10}${Date.now() % 1000}`.slice(0, 6).padEnd(6, 'x');
    let n = 0;
    const ingest = async (server, count) => {
      for (const end = n + count; n < end; n++)
        await server.ingest('logs', makeBody(templates, n, runId, batch).body, 'protobuf', 'public');
    };
    const now = async () => (await db.query('SELECT now() AS t')).rows[0].t;
    await ingest(crashed, before);
    // Its last mark: what a server that marks, then stores TAIL groups and is killed, leaves.
    const replayFrom = BigInt(Date.now() - 1000) * 1_000_000n; // the next group's name, reserved ahead, included
    const marked = await now();
    await ingest(crashed, tail);
    const killed = await now();
    await ingest(other, after);
    // Clean stops (their own marks go), then the crashed server's mark as it was (its writer's id: its groups' names
    // carry it, see payloadGroupKey).
    for (const s of [crashed, other]) await s.close();
    await db.query(
      `INSERT INTO ingest_marks (writer, replay_from, postgres_started, marked_at) VALUES ($1, $2, now(), $3)`,
      [crashed.marks.writer, replayFrom, marked],
    );
    const { rows } = await db.query(
      `SELECT block_id FROM blocks WHERE insert_time > $1 AND insert_time <= $2 ORDER BY block_id LIMIT $3`,
      [marked, killed, Math.round(tail * lost)],
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
  `replay-start: ${before} groups before the crashed server's mark, ${tail} after it, ${after} by another server; ` +
    `${lost * 100}% of the ${tail} lost; ` +
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
