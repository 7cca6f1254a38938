import { engineErrors } from '../engine/index.js';
import type { OrreryError } from '../errors/index.js';
import { sqlErrors } from './errors.js';

/** How many statements may run at once, per key and in all, and how many may wait per key. */
export interface AdmissionLimits {
  /** ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY */
  readonly runningPerKey: number;
  /** ORRERY_MAX_QUEUED_QUERIES_PER_KEY: statements of one key waiting for a slot; one more is refused. */
  readonly queuedPerKey: number;
  /** ORRERY_MAX_CONCURRENT_QUERIES: statements running at once, all keys together. */
  readonly running: number;
}

/** What admission reports as it goes (metrics). */
export interface AdmissionObserver {
  /** Statements running and waiting changed. */
  onLevels?(running: number, queued: number): void;
  /** A statement waited for its slot this long (it got one, or gave up). */
  onWaited?(seconds: number): void;
  /** A statement was refused at once: its key's queue was full. */
  onRefused?(key: string): void;
}

interface Waiter {
  readonly key: string;
  readonly admit: () => void;
}

/**
 * Admission of statements: each key runs at most `runningPerKey` at a time and the server at
 * most `running`; a statement beyond that waits in line (first come, first served among the
 * keys that have room), and one beyond its key's queue is refused with RESOURCE_EXHAUSTED, so one
 * caller cannot take every DuckDB thread nor queue without bound. A waiting statement leaves the
 * line when its caller cancels or its deadline passes.
 */
export class QueryAdmission {
  private readonly runningByKey = new Map<string, number>();
  private readonly queuedByKey = new Map<string, number>();
  private readonly line: Waiter[] = [];
  private runningTotal = 0;

  constructor(
    private readonly limits: AdmissionLimits,
    private readonly observer: AdmissionObserver = {},
  ) {}

  /**
   * Waits for a slot for `key`; resolves to the function that gives it back (call it once, when
   * the statement is done). `deadline` (ms since the epoch) bounds the wait with DEADLINE_EXCEEDED.
   */
  async acquire(key: string, signal: AbortSignal, deadline?: { at: number; message: string }): Promise<() => void> {
    if (signal.aborted) throw engineErrors.error('QUERY_CANCELLED', 'query cancelled');
    if (this.hasRoom(key) && !this.line.some((w) => w.key === key)) return this.take(key);
    const queued = this.queuedByKey.get(key) ?? 0;
    if (queued >= this.limits.queuedPerKey) {
      this.observer.onRefused?.(key);
      throw sqlErrors.error(
        'TOO_MANY_STATEMENTS',
        `too many statements from key '${key}': ${this.runningByKey.get(key) ?? 0} running and ${queued} waiting ` +
          `(ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY=${this.limits.runningPerKey}, ORRERY_MAX_QUEUED_QUERIES_PER_KEY=${this.limits.queuedPerKey}); retry when one has finished`,
      );
    }
    const started = Date.now();
    return new Promise<() => void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const leave = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        const at = this.line.indexOf(waiter);
        if (at >= 0) this.line.splice(at, 1);
        const left = (this.queuedByKey.get(key) ?? 1) - 1;
        if (left === 0) this.queuedByKey.delete(key);
        else this.queuedByKey.set(key, left);
        this.observer.onWaited?.((Date.now() - started) / 1000);
      };
      const giveUp = (error: OrreryError): void => {
        leave();
        this.report();
        // Leaving may let the next in line of another key run.
        this.admitWaiting();
        reject(error);
      };
      const onAbort = (): void => giveUp(engineErrors.error('QUERY_CANCELLED', 'query cancelled'));
      const waiter: Waiter = {
        key,
        admit: () => {
          leave();
          resolve(this.take(key));
        },
      };
      this.line.push(waiter);
      this.queuedByKey.set(key, queued + 1);
      signal.addEventListener('abort', onAbort);
      if (deadline)
        timer = setTimeout(
          () => giveUp(engineErrors.error('QUERY_DEADLINE_EXCEEDED', deadline.message)),
          Math.max(0, deadline.at - Date.now()),
        );
      this.report();
    });
  }

  private hasRoom(key: string): boolean {
    return this.runningTotal < this.limits.running && (this.runningByKey.get(key) ?? 0) < this.limits.runningPerKey;
  }

  private take(key: string): () => void {
    this.runningTotal++;
    this.runningByKey.set(key, (this.runningByKey.get(key) ?? 0) + 1);
    this.report();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.runningTotal--;
      const left = (this.runningByKey.get(key) ?? 1) - 1;
      if (left === 0) this.runningByKey.delete(key);
      else this.runningByKey.set(key, left);
      this.admitWaiting();
      this.report();
    };
  }

  /** Lets in, in order, every waiting statement whose key now has room. */
  private admitWaiting(): void {
    for (let i = 0; i < this.line.length && this.runningTotal < this.limits.running;) {
      const waiter = this.line[i];
      if (this.hasRoom(waiter.key)) waiter.admit();
      else i++;
    }
  }

  private report(): void {
    let queued = 0;
    for (const n of this.queuedByKey.values()) queued += n;
    this.observer.onLevels?.(this.runningTotal, queued);
  }
}
