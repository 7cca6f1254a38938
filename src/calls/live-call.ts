import { AsyncLocalStorage } from 'node:async_hooks';

// The call a state-changing statement runs for, as every commit under it sees it: a transaction commits only while
// the call's client is still there, since a client that gave up (cancelled, or its deadline passed) was told the call
// failed and may send it again. Held in the statement's async context rather than passed down: a procedure reaches
// Postgres and DuckDB through many paths, and each of their transactions asks here right before COMMIT.

/** A statement's call: why its changes may no longer be committed (its client gave up), or undefined while they may. */
export interface LiveCall {
  gone(): Error | undefined;
  /** Aborted when the client gives up: what waits for the statement (a Postgres lock, say) is stopped then. */
  readonly signal?: AbortSignal;
}

interface Running {
  readonly call: LiveCall;
  /**
   * Set by the first commit that found the client there, of a transaction that wrote (one that only read calls no
   * checkLive): the statement's commit point. What follows it (dropping a dropped rollup's tables, rebuilding a
   * replaced view set) is what the committed change entails, done whatever the client does, as a cancel arriving
   * during a database's COMMIT comes too late.
   */
  committed: boolean;
  /** Cleared when the statement ends: work it started that outlives it (a listener, a cache fill) is no longer its. */
  running: boolean;
}

const running = new AsyncLocalStorage<Running>();

/** Runs a statement's work for `call`: each transaction under it commits only while the call is live (checkLive). */
export async function whileLive<T>(call: LiveCall, work: () => Promise<T>): Promise<T> {
  const state: Running = { call, committed: false, running: true };
  try {
    return await running.run(state, work);
  } finally {
    state.running = false;
  }
}

/** whileLive for a statement whose work is streamed: each step of `steps` runs for `call`. */
export async function* liveSteps<T>(call: LiveCall, steps: AsyncIterable<T>): AsyncGenerator<T> {
  const state: Running = { call, committed: false, running: true };
  const iterator = steps[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await running.run(state, () => iterator.next());
      if (step.done) return;
      yield step.value;
    }
  } finally {
    state.running = false;
    await iterator.return?.();
  }
}

/**
 * Runs each step of `steps` for no call, within a statement's: work that is kept whatever its client does (a long
 * maintenance procedure, whose every step is idempotent), none of whose transactions checkLive refuses.
 */
export async function* regardlessOfClient<T>(steps: AsyncIterable<T>): AsyncGenerator<T> {
  const iterator = steps[Symbol.asyncIterator]();
  try {
    for (;;) {
      const step = await running.exit(() => iterator.next());
      if (step.done) return;
      yield step.value;
    }
  } finally {
    await iterator.return?.();
  }
}

const current = (): Running | undefined => {
  const state = running.getStore();
  return state?.running ? state : undefined;
};

/**
 * Called right before the COMMIT of a transaction that wrote: throws why the running statement's client gave up,
 * before its commit point; the first commit it lets through is that point. Outside a statement's call (the daemon's passes, start-up)
 * nothing is checked.
 */
export function checkLive(): void {
  const state = current();
  if (!state || state.committed) return;
  const gone = state.call.gone();
  if (gone) throw gone;
  state.committed = true;
}

/** Whether a statement runs that has not reached its commit point: the next commit that passes checkLive will be it. */
export function beforeCommitPoint(): boolean {
  const state = current();
  return state !== undefined && !state.committed;
}

/** The running statement's signal until its commit point (what follows it is done whatever the client does). */
export function liveSignal(): AbortSignal | undefined {
  const state = current();
  return state && !state.committed ? state.call.signal : undefined;
}

/** Why the running statement's client gave up, whether or not the statement committed; undefined while it is there. */
export function clientGone(): Error | undefined {
  return current()?.call.gone();
}
