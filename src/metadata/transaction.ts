import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { beforeCommitPoint, checkLive, clientGone, liveSignal } from '../calls/index.js';

/** Runs one statement on the metadata: the store (a pooled connection per statement) or an open transaction. */
export interface MetadataQueries {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * The one way Orrery runs a transaction: `work` runs between BEGIN and COMMIT on one pooled connection and is rolled
 * back if it throws, or if it wrote and the statement it runs for lost its client (checkLive, right before COMMIT). A
 * connection whose ROLLBACK failed is in an unknown state (still inside the transaction, or with a statement pending),
 * so it is destroyed instead of going back to the pool for the next caller.
 */
export async function transaction<T>(pool: pg.Pool, work: (tx: MetadataQueries) => Promise<T>): Promise<T> {
  const signal = liveSignal();
  const gone = signal?.aborted ? clientGone() : undefined;
  if (gone) throw gone;
  const client = await pool.connect();
  let broken: Error | undefined;
  const watched = watch(pool, client, signal);
  try {
    await client.query('BEGIN');
    const result = await work(watched.queries);
    await watched.end();
    // Only a transaction that wrote is the statement's commit point: committing a read keeps nothing, and a read that
    // passed the check first would let the statement's real commit through after its client gave up.
    if (watched.live && (await watched.wrote())) checkLive();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await watched.end();
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw watched.cancelled ? (clientGone() ?? error) : error;
  } finally {
    client.release(broken);
  }
}

/** Statements' commands that change nothing; a transaction of only these may still have written (see wrote). */
const reads = new Set(['SELECT', 'SHOW']);

/** How long a cancel is given to end the statements out before it is sent again. */
const cancelAgainMs = 20;

/**
 * The transaction's queries as `work` runs them, watched for a statement before its commit point (whileLive):
 * whether one wrote, and, once the statement's client gives up, what the connection runs is cancelled
 * (pg_cancel_backend), so a statement waiting on a lock, which could only roll back, stops waiting. `end` is awaited
 * before the connection runs anything else, so no cancel reaches a later statement (Postgres ignores one that finds
 * it idle).
 */
function watch(
  pool: pg.Pool,
  client: pg.PoolClient,
  signal: AbortSignal | undefined,
): {
  end(): Promise<void>;
  readonly live: boolean;
  wrote(): Promise<boolean>;
  readonly cancelled: boolean;
  readonly queries: MetadataQueries;
} {
  // Outside a statement's call, or past its commit point, nothing is watched (and nothing checked at COMMIT).
  const live = beforeCommitPoint();
  let cancelling: Promise<void> | undefined;
  let changed = false;
  let statements = 0;
  /** The statements sent and not yet answered. */
  const out = new Set<Promise<unknown>>();
  const settled = (): Promise<unknown> => Promise.allSettled(out);
  const cancel = (): void => {
    cancelling = cancelWhileOut((client as unknown as { processID: number }).processID);
  };
  // On a connection of its own, not the pool's: every pooled one may be a transaction waiting (on this lock, say),
  // and a cancel queued behind them would wait with them, holding this transaction's connection. Postgres drops a
  // cancel that reaches the backend before it has read the statement sent just before (as one finding it idle), so
  // the cancel is sent again while a statement is still out. (pg's protocol-level cancel request, Client#cancel,
  // ends the same way in the backend, and tells nothing of when it has been delivered.)
  const cancelWhileOut = async (pid: number): Promise<void> => {
    const own = new pg.Client(pool.options);
    // Postgres ending this connection between two cancels (an admin, a failover) is an 'error' event with no query to
    // fail: unheard, it would end the process. The next cancel then fails, and the loop ends below.
    own.on('error', () => {});
    try {
      await own.connect();
      for (;;) {
        await own.query('SELECT pg_cancel_backend($1)', [pid]);
        if (out.size === 0) return;
        const pause = new AbortController();
        const ended = await Promise.race([
          settled().then(() => true),
          sleep(cancelAgainMs, false, { signal: pause.signal }).catch(() => true),
        ]);
        pause.abort();
        if (ended) return;
      }
    } catch {
      // Left to the statement's own end (the cancel's connection could not be had).
    } finally {
      await own.end().catch(() => {});
    }
  };
  signal?.addEventListener('abort', cancel, { once: true });
  return {
    async end() {
      signal?.removeEventListener('abort', cancel);
      await cancelling;
    },
    live,
    async wrote() {
      if (changed || statements === 0) return changed;
      // A SELECT may call a function that writes: Postgres gives a transaction an id at its first write. A
      // transaction a failed statement aborted (one `work` caught) answers nothing: checked as one that wrote, its
      // COMMIT then rolls back as before.
      const asked = await client
        .query<{ wrote: boolean }>('SELECT txid_current_if_assigned() IS NOT NULL AS wrote')
        .catch(() => undefined);
      return asked?.rows[0].wrote ?? true;
    },
    get cancelled() {
      return cancelling !== undefined;
    },
    queries: !live
      ? client
      : {
          // A statement sent once the client gave up is refused here: Postgres drops a cancel that finds the
          // connection idle (between two statements of `work`), so the next one, a lock's waiter say, would wait on
          // until the lock goes.
          query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) {
            const gone = signal?.aborted ? clientGone() : undefined;
            if (gone) return Promise.reject(gone);
            statements++;
            const sent = client.query<R>(text, values);
            out.add(sent);
            const answered = (): void => void out.delete(sent);
            return sent.then(
              (result) => {
                answered();
                for (const one of Array.isArray(result) ? (result as pg.QueryResult[]) : [result])
                  if (!reads.has(one.command)) changed = true;
                return result;
              },
              (error: unknown) => {
                answered();
                throw error;
              },
            );
          },
        },
  };
}
