import type { RecordBatch } from 'apache-arrow';
import {
  engineErrors,
  type Deadline,
  type DuckDBEngine,
  type RunOptions,
  type StatementDescription,
} from '../engine/index.js';
import { followSignal } from '../calls/index.js';
import type { OrreryMetrics } from '../metrics/index.js';
import { readsKeptTail } from '../rollups/index.js';
import { QueryAdmission } from './query-admission.js';

// Two lanes for SELECTs, so heavy statements cannot take every core from small ones and ingestion
// (issue 9, item 3). DuckDB runs a statement on its caller's thread and on every thread of its
// instance, and it cannot pause a statement nor give one fewer threads: four cross joins on one
// instance kept every core busy, and a small query or an OTLP POST waited its turn for a CPU. So a
// statement starts in the small lane (the query engine); one that has not produced its first batch
// after `smallMs` is interrupted and runs again in the heavy lane: an engine of its own with few
// threads, which runs at most `running` statements at once (one per key at a time, in arrival order),
// the others waiting, still bound by the statement timeout and cancellable. What heavy statements can
// take is then bounded by the lane's threads, and the small lane's cores stay for everything else.

/** The heavy lane's settings. */
export interface LaneLimits {
  /** ORRERY_SMALL_QUERY_MS: how long a statement may run in the small lane before its first batch; 0: one lane. */
  readonly smallMs: number;
  /** ORRERY_MAX_HEAVY_QUERIES: heavy statements running at once, all keys together (one per key). */
  readonly running: number;
}

export const defaultLaneLimits: LaneLimits = { smallMs: 1000, running: 1 };

/** Runs SELECTs in the small lane, and in the heavy lane once they run past the small lane's time. */
export class QueryLanes {
  private readonly admission: QueryAdmission;

  constructor(
    private readonly small: DuckDBEngine,
    /** The heavy lane's engine (ORRERY_HEAVY_QUERY_THREADS threads), made when first needed. */
    private readonly heavy: (() => Promise<DuckDBEngine>) | undefined,
    private readonly limits: LaneLimits,
    /** At most this many statements of one key wait for the heavy lane (they hold their key's slots). */
    queuedPerKey: number,
    private readonly metrics?: OrreryMetrics,
  ) {
    this.admission = new QueryAdmission(
      { running: limits.running, runningPerKey: 1, queuedPerKey },
      {
        onLevels: (running, queued) => {
          metrics?.heavyQueriesRunning.set(running);
          metrics?.heavyQueriesQueued.set(queued);
        },
      },
    );
  }

  /** The batches of a SELECT of `key`'s: see the module's comment. */
  async *batches(
    key: string,
    sql: string,
    options: RunOptions,
    described: StatementDescription,
  ): AsyncGenerator<RecordBatch> {
    // A statement on a held connection (a transaction) stays on it; one reading a rollup's kept tail
    // (a table of this engine's in-memory database, which the heavy lane's engine has not) stays here.
    if (!this.heavy || this.limits.smallMs <= 0 || options.session || readsKeptTail(options.setup)) {
      yield* (await this.small.query(sql, options, described)).batches;
      return;
    }
    // The small run stops when its caller gives up or when it is demoted (its time ran out before its first batch).
    const { controller: smallStop, unfollow } = followSignal(options.signal);
    try {
      let first = false;
      let demoted = false;
      const timer = setTimeout(() => {
        if (first) return;
        demoted = true;
        smallStop.abort();
      }, this.limits.smallMs);
      const smallRun = (await this.small.query(sql, { ...options, signal: smallStop.signal }, described)).batches[
        Symbol.asyncIterator
      ]();
      let head: IteratorResult<RecordBatch> | undefined;
      try {
        head = await smallRun.next();
        first = true;
      } catch (error) {
        if (!demoted || options.signal?.aborted) throw error;
      } finally {
        clearTimeout(timer);
      }
      // The time may run out while the first batch is on its way: the small run is stopped then (its
      // next batch would fail as cancelled), so the statement moves to the heavy lane all the same.
      if (head && demoted && !options.signal?.aborted) {
        await smallRun.return?.();
        head = undefined;
      }
      if (head) {
        try {
          for (let next = head; !next.done; next = await smallRun.next()) yield next.value;
        } finally {
          await smallRun.return?.();
        }
        return;
      }
    } finally {
      unfollow();
    }
    this.metrics?.queryDemotions.inc();
    const never = new AbortController().signal;
    const release = await this.admission.acquire(key, options.signal ?? never, options.deadline);
    try {
      // Making the engine (at the first demotion) is waiting too: bounded by the deadline and the caller.
      const engine = await bounded(this.heavy(), options.signal ?? never, options.deadline);
      // The small lane's prepared statement stays there: the heavy engine prepares its own.
      yield* (await engine.query(sql, { ...options, held: undefined }, described)).batches;
    } finally {
      release();
    }
  }
}

/** `work`, or QUERY_CANCELLED / QUERY_DEADLINE_EXCEEDED when the caller cancels or the deadline passes first. */
async function bounded<T>(work: Promise<T>, signal: AbortSignal, deadline: Deadline | undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const stop = new Promise<never>((_, reject) => {
    onAbort = () => reject(engineErrors.error('QUERY_CANCELLED', 'query cancelled'));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort);
    if (deadline)
      timer = setTimeout(
        () => reject(engineErrors.error('QUERY_DEADLINE_EXCEEDED', deadline.message)),
        Math.max(0, deadline.at - Date.now()),
      );
  });
  try {
    return await Promise.race([work, stop]);
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort!);
  }
}
