import type pg from 'pg';
import { checkLive } from '../calls/index.js';

/** Runs one statement on the metadata: the store (a pooled connection per statement) or an open transaction. */
export interface MetadataQueries {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * The one way Orrery runs a transaction: `work` runs between BEGIN and COMMIT on one pooled
 * connection and is rolled back if it throws, or if the statement it runs for lost its client (checkLive). A connection whose ROLLBACK failed is in an unknown
 * state (still inside the transaction, or with a statement pending), so it is destroyed instead
 * of going back to the pool for the next caller.
 */
export async function transaction<T>(pool: pg.Pool, work: (tx: MetadataQueries) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await work(client);
    checkLive();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
