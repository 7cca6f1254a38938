import type { RecordBatch, Table } from 'apache-arrow';
import { engineErrors, type Deadline } from '../engine/index.js';
import { OrreryError } from '../errors/index.js';
import { sqlErrors } from './errors.js';
import type { OrreryMetrics } from '../metrics/index.js';
import { QueryAdmission, type AdmissionLimits } from './query-admission.js';
import { defaultLaneLimits, type LaneLimits } from './query-lanes.js';

/** What one caller's statements may take of the server. */
export interface QueryLimits {
  readonly admission: AdmissionLimits;
  /** ORRERY_QUERY_TIMEOUT_SECONDS: how long a statement may take from arrival to its last batch; 0: no limit. */
  readonly timeoutSeconds: number;
  /** ORRERY_MAX_BIND_ROWS: parameter rows one execution of a prepared statement may bind. */
  readonly maxBindRows: number;
  /** The small and heavy lanes of SELECTs (query-lanes.ts). */
  readonly lanes: LaneLimits;
}

export const defaultQueryLimits: QueryLimits = {
  admission: { runningPerKey: 4, queuedPerKey: 32, running: 16 },
  timeoutSeconds: 300,
  maxBindRows: 1000,
  lanes: defaultLaneLimits,
};

const clientDeadlineMarginMs = 50;

/** One statement between its admission and its end. */
export interface StatementRun {
  /** When its DuckDB work must stop: the statement timeout or the client's deadline, whichever comes first. */
  readonly deadline: Deadline | undefined;
  /** Gives the slot back and records the outcome; once (later calls do nothing). */
  end(error?: unknown): void;
  /** The batches, ending the run when the last one is read, when one fails, or when the reader stops. */
  track(batches: AsyncIterable<RecordBatch>): AsyncIterable<RecordBatch>;
}

/**
 * The limits on statements: admission per key (concurrency, queue), the statement timeout and
 * the client's deadline, the number of bound parameter rows; and the query metrics.
 */
export class StatementLimits {
  private readonly admission: QueryAdmission;

  constructor(
    private readonly limits: QueryLimits,
    private readonly metrics?: OrreryMetrics,
  ) {
    this.admission = new QueryAdmission(limits.admission, {
      onLevels: (running, queued) => {
        metrics?.queriesRunning.set(running);
        metrics?.queriesQueued.set(queued);
      },
      onWaited: (seconds) => metrics?.queryQueueWait.observe(seconds),
      onRefused: (key) => metrics?.queriesRefused.inc({ key }),
    });
  }

  /** Refuses more bound parameter rows than one execution may take. */
  checkParameters(parameters: Table | undefined): void {
    if (parameters && parameters.numRows > this.limits.maxBindRows) {
      throw sqlErrors.error(
        'TOO_MANY_BIND_ROWS',
        `${parameters.numRows} parameter rows bound to one statement; at most ${this.limits.maxBindRows} (ORRERY_MAX_BIND_ROWS): bind them in smaller batches`,
      );
    }
  }

  /**
   * Waits for the key's turn and starts the statement's clock. `executes` is false for a
   * statement only described (GetFlightInfo, CreatePreparedStatement): it counts in
   * orrery_queries_total only when it fails, so each statement a client sends counts once.
   */
  async begin(key: string, call: { signal: AbortSignal; deadline?: number }, executes: boolean): Promise<StatementRun> {
    const arrival = Date.now();
    const deadline = this.deadline(arrival, call.deadline);
    let release: () => void;
    try {
      release = await this.admission.acquire(key, call.signal, deadline);
    } catch (error) {
      this.record(error, undefined, executes);
      throw error;
    }
    const started = Date.now();
    let ended = false;
    const end = (error?: unknown): void => {
      if (ended) return;
      ended = true;
      release();
      this.record(error, started, executes);
    };
    return { deadline, end, track: (batches) => tracked(batches, end, deadline) };
  }

  private deadline(arrival: number, clientDeadline: number | undefined): Deadline | undefined {
    const seconds = this.limits.timeoutSeconds;
    const timeout: Deadline | undefined =
      seconds > 0
        ? {
            at: arrival + seconds * 1000,
            message: `statement timeout: the statement did not finish within ${seconds} s (ORRERY_QUERY_TIMEOUT_SECONDS) and was stopped`,
          }
        : undefined;
    // Stopped a little before the client's deadline, so that the client reads why rather than
    // grpc-js's bare "Deadline exceeded".
    const client = clientDeadline === undefined ? undefined : clientDeadline - clientDeadlineMarginMs;
    if (client === undefined || (timeout && timeout.at <= client)) return timeout;
    return { at: client, message: "the client's deadline passed: the statement was stopped" };
  }

  /** Counts the outcome; `started` is when the statement got its slot (undefined: it never did). */
  private record(error: unknown, started: number | undefined, executes: boolean): void {
    if (!this.metrics || (!executes && !error)) return;
    const status = error === undefined ? 'OK' : error instanceof OrreryError ? error.status : 'INTERNAL';
    this.metrics.queries.inc({ outcome: status.toLowerCase() });
    if (status === 'DEADLINE_EXCEEDED') this.metrics.queryTimeouts.inc();
    if (executes && started !== undefined) this.metrics.queryDuration.observe((Date.now() - started) / 1000);
  }
}

/**
 * Batches that call `end` once: after the last, with the error of a failing one, or when the reader stops
 * early with CANCELLED (DEADLINE_EXCEEDED once the deadline has passed: a reader that stopped reading is
 * ended then by the front end).
 */
function tracked(
  batches: AsyncIterable<RecordBatch>,
  end: (error?: unknown) => void,
  deadline: Deadline | undefined,
): AsyncIterable<RecordBatch> {
  return {
    [Symbol.asyncIterator]() {
      const inner = batches[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const next = await inner.next();
            if (next.done) end();
            return next;
          } catch (error) {
            end(error);
            throw error;
          }
        },
        async return() {
          try {
            return (await inner.return?.()) ?? { done: true, value: undefined };
          } finally {
            end(
              deadline && Date.now() >= deadline.at
                ? engineErrors.error('QUERY_DEADLINE_EXCEEDED', deadline.message)
                : engineErrors.error('QUERY_CANCELLED', 'query cancelled'),
            );
          }
        },
      };
    },
  };
}
