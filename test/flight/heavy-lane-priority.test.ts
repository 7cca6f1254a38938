// Issue 9, item 3: with ORRERY_HEAVY_QUERY_NICE the heavy lane's DuckDB work runs on threads at a
// lower CPU priority, so Linux lets small statements and ingestion go first. The server runs
// in this process: its threads are read from /proc/self/task (nice value and CPU time, as the
// kernel keeps them). Only threads that work for the heavy lane alone are lowered: the heavy
// engine's background threads and a thread per heavy statement; the event loop and libuv's pool,
// which small statements share, keep the server's priority. Latency is measured by
// bench/isolation (compare.sh), not here.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { nativeExportProblem } from '../../src/engine/index.js';
import { metricValue } from '../support/metric-value.js';
import { useOrrery } from '../support/orrery-process.js';
import { doGetSql, failure, hugeCrossJoin } from '../support/statement-calls.js';

/** 2.5 * 10^7 pairs (3,571,429 of them counted): a few seconds of the heavy lane's work. */
const mediumCrossJoin = 'SELECT count(*) AS n FROM range(5000) a, range(5000) b WHERE (a.range + b.range) % 7 = 0';

interface ThreadState {
  readonly nice: number;
  /** user + system time, in clock ticks */
  readonly cpu: number;
}

/** This process's threads by id, as /proc/self/task/<tid>/stat has them (proc(5): fields 14, 15 and 19). */
function threads(): Map<number, ThreadState> {
  const states = new Map<number, ThreadState>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // Fields after the command name, which is in parentheses and may hold spaces: state is field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    states.set(Number(tid), { cpu: Number(fields[11]) + Number(fields[12]), nice: Number(fields[16]) });
  }
  return states;
}

const lowered = (): number[] => [...threads()].filter(([, t]) => t.nice === 19).map(([tid]) => tid);

/** The nice value this process started at (the event loop's thread), which every shared thread keeps. */
const serverNice = threads().get(process.pid)!.nice;
const native = process.env.ORRERY_NATIVE !== 'off' && !nativeExportProblem() && serverNice < 19;

describe("issue 9: the heavy lane's threads run at a lower priority", { timeout: 120_000, skip: !native }, () => {
  const fixture = useOrrery({
    ORRERY_SMALL_QUERY_MS: '1',
    ORRERY_HEAVY_QUERY_NICE: '19',
    ORRERY_HEAVY_QUERY_THREADS: '2',
    ORRERY_QUERY_TIMEOUT_SECONDS: '12',
  });
  const metric = (name: string): Promise<number> => metricValue(fixture.orrery.httpPort, name);

  it('a heavy statement works on a thread of its own at nice 19; shared threads keep the server’s priority', async () => {
    // The event loop, libuv's pool and the small lane's engine exist once a statement has run (not
    // a SELECT: it never moves to the heavy lane, even at 1 ms).
    assert.ok((await fixture.admin.query('EXPLAIN SELECT 7')).numRows > 0);
    assert.deepEqual(lowered(), [], 'no thread is lowered before the heavy lane is used');
    const sharedBefore = new Set(threads().keys());
    // A first heavy statement makes the heavy lane's engine (its setup runs on libuv's threads):
    // then its one background thread (ORRERY_HEAVY_QUERY_THREADS 2) is lowered, and nothing else.
    assert.equal(Number((await fixture.admin.query(mediumCrossJoin)).getChild('n')?.get(0)), 3_571_429);
    assert.equal(await metric('orrery_query_demotions_total'), 1);
    // The statement's own thread ends after its last batch is sent, not always at once under load:
    // what must hold is that every lowered thread is new (none of the threads that existed before).
    const shared = new Map([...threads()].map(([tid, t]) => [tid, t.nice]));
    const loweredNow = lowered();
    assert.ok(loweredNow.length >= 1, "the heavy engine's background thread");
    assert.deepEqual(
      loweredNow.filter((tid) => sharedBefore.has(tid)),
      [],
      'no thread that existed before is lowered',
    );
    assert.equal(shared.get(process.pid), serverNice);

    const heavy = failure(doGetSql(fixture.reader.client, hugeCrossJoin));
    while ((await metric('orrery_heavy_queries_running')) !== 1) await sleep(20);
    // Over a window in which the lowered threads used 10 clock ticks, the busiest thread is lowered
    // (the statement's own thread, or the engine's background thread: DuckDB's tasks go to either).
    const cpuOf = (states: Map<number, ThreadState>, tids: number[]): number =>
      tids.reduce((sum, tid) => sum + (states.get(tid)?.cpu ?? 0), 0);
    const before = threads();
    let after = threads();
    for (let i = 0; i < 200 && cpuOf(after, lowered()) - cpuOf(before, lowered()) < 10; i++) {
      await sleep(50);
      after = threads();
    }
    const used = [...after].map(([tid, t]) => ({ tid, nice: t.nice, cpu: t.cpu - (before.get(tid)?.cpu ?? 0) }));
    const busiest = used.reduce((a, b) => (b.cpu > a.cpu ? b : a));
    assert.equal(busiest.nice, 19, `the busiest thread while the heavy statement runs: ${JSON.stringify(used)}`);
    // The statement runs on a thread of its own, lowered, which was not there before.
    const own = lowered().filter((tid) => !shared.has(tid));
    assert.equal(own.length, 1);

    // Meanwhile small statements answer, and no shared thread changed priority (a thread without
    // privileges cannot raise its priority again).
    assert.ok((await fixture.admin.query('EXPLAIN SELECT 8')).numRows > 0);
    const now = threads();
    assert.deepEqual(
      [...shared].filter(([tid, nice]) => now.has(tid) && now.get(tid)!.nice !== nice),
      [],
    );

    // The statement's thread ends with it.
    assert.equal((await heavy).status, 'DEADLINE_EXCEEDED');
    while ((await metric('orrery_heavy_queries_running')) !== 0) await sleep(20);
    for (let i = 0; i < 1000 && threads().has(own[0]); i++) await sleep(20);
    assert.ok(!threads().has(own[0]));
  });
});
