import pg from 'pg';
import { checkLive, clientGone, liveSignal } from '../calls/index.js';

/** Runs one statement on the metadata: the store (a pooled connection per statement) or an open transaction. */
export interface MetadataQueries {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * The one way Orrery runs a transaction: `work` runs between BEGIN and COMMIT on one pooled connection and is rolled
 * back if it throws, or if the statement it runs for lost its client (checkLive, right before COMMIT). A connection
 * whose ROLLBACK failed is in an unknown state (still inside the transaction, or with a statement pending), so it is
 * destroyed instead of going back to the pool for the next caller.
 */
export async function transaction<T>(pool: pg.Pool, work: (tx: MetadataQueries) => Promise<T>): Promise<T> {
  const signal = liveSignal();
  const gone = signal?.aborted ? clientGone() : undefined;
  if (gone) throw gone;
  const client = await pool.connect();
  let broken: Error | undefined;
  const stop = stopWhenGivenUp(pool, client, signal);
  try {
    await client.query('BEGIN');
    const result = await work(stop.queries);
    await stop.end();
    checkLive();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await stop.end();
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw stop.cancelled ? (clientGone() ?? error) : error;
  } finally {
    client.release(broken);
  }
}

/**
 * Cancels (pg_cancel_backend) what the transaction's connection runs when the client of the statement it runs for
 * gives up: a statement waiting on a lock, which could only roll back then, stops waiting. `end` is awaited before
 * the connection runs anything else, so no cancel reaches a later statement (Postgres ignores one that finds it idle).
 */
function stopWhenGivenUp(
  pool: pg.Pool,
  client: pg.PoolClient,
  signal: AbortSignal | undefined,
): { end(): Promise<void>; readonly cancelled: boolean; readonly queries: MetadataQueries } {
  let cancelling: Promise<unknown> | undefined;
  const cancel = (): void => {
    const pid = (client as unknown as { processID: number }).processID;
    // On a connection of its own, not the pool's: every pooled one may be a transaction waiting (on this lock, say),
    // and a cancel queued behind them would wait with them, holding this transaction's connection.
    const own = new pg.Client(pool.options);
    cancelling = own
      .connect()
      .then(() => own.query('SELECT pg_cancel_backend($1)', [pid]))
      .catch(() => {})
      .finally(() => own.end().catch(() => {}));
  };
  signal?.addEventListener('abort', cancel, { once: true });
  return {
    async end() {
      signal?.removeEventListener('abort', cancel);
      await cancelling;
    },
    get cancelled() {
      return cancelling !== undefined;
    },
    // A statement sent once the client gave up is refused here: Postgres drops a cancel that finds the connection
    // idle (between two statements of `work`), so the next one, a lock's waiter say, would wait on until the lock goes.
    queries: !signal
      ? client
      : {
          query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) {
            const gone = signal.aborted ? clientGone() : undefined;
            return gone ? Promise.reject(gone) : client.query<R>(text, values);
          },
        },
  };
}
