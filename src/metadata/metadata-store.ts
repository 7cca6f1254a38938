import pg from 'pg';
import { closeAll } from '../errors/index.js';
import { AdvisoryLocks } from './advisory-locks.js';
import { ChangeFeed } from './change-feed.js';
import { EmbeddedPostgres } from './embedded-postgres.js';
import { MetadataError, messageOf } from './errors.js';
import type { MetadataLog } from './metadata-log.js';
import { migrate } from './migrations.js';
import { unavailableOr } from './unavailable.js';
import { transaction, type MetadataQueries } from './transaction.js';

export interface MetadataStoreOptions {
  /** An external server (MICROMEGAS_SQL_CONNECTION_STRING); without it, an embedded server under `dataDir`. */
  readonly connectionString?: string;
  /** Orrery's data folder (ORRERY_DATA_DIR); the embedded cluster lives in `<dataDir>/postgres`. */
  readonly dataDir: string;
  readonly log?: MetadataLog;
  /** Most connections the pool opens (default 10). */
  readonly maxConnections?: number;
}

/**
 * Orrery's Postgres: the embedded server or an external one, migrated to the current schema,
 * behind one connection pool. The one owner of the pool and of the embedded server: other
 * components receive the store and reach the metadata through its methods only.
 */
export class MetadataStore implements MetadataQueries {
  private closing: Promise<void> | undefined;
  /** Locks held across a piece of work (a materialization range), on a connection outside the pool. */
  readonly locks: AdvisoryLocks;
  /** What other processes change, for caches (started by the process that keeps one). */
  readonly changes: ChangeFeed;

  private constructor(
    private readonly pool: pg.Pool,
    /** Where the database is (the embedded server's address when embedded). */
    readonly connectionString: string,
    /** The migrations this open applied (empty when the schema was up to date). */
    readonly appliedMigrations: readonly number[],
    private readonly server: EmbeddedPostgres | undefined,
    log: MetadataLog,
  ) {
    this.locks = new AdvisoryLocks(connectionString, log);
    this.changes = new ChangeFeed(connectionString, (text, values) => this.query(text, values), log);
  }

  /** Starts the embedded server when no connection string is given, connects and migrates. */
  static async open(options: MetadataStoreOptions): Promise<MetadataStore> {
    const log = options.log ?? (() => {});
    const server = options.connectionString
      ? undefined
      : await EmbeddedPostgres.start({ dataDir: options.dataDir, log });
    const connectionString = server?.connectionString ?? options.connectionString ?? '';
    const pool = new pg.Pool({
      connectionString,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: 15_000,
      // Every statement here is written for READ COMMITTED, whatever the database's default: e.g. ingestion's
      // orrery_insert_blocks checks, after taking the lock on `blocks`, for the process and stream retention may just
      // have deleted; under REPEATABLE READ it would read a snapshot from before the delete and insert neither.
      // (A connection string's own `options` replaces this.)
      options: '-c default_transaction_isolation=read\\ committed',
    });
    // The pool listens for a connection's end only while it is idle: one Postgres ends while it is checked out (a
    // failover, pg_terminate_backend, idle_in_transaction_session_timeout) would otherwise end the process with an
    // uncaught 'error'. Heard here, it is the statement in flight's to report (METADATA_UNAVAILABLE, see
    // unavailableOr) or the next one's on it, and the connection, released with that failure, is discarded.
    pool.on('connect', (client) => client.on('error', () => {}));
    // Connections the server ends while it is being stopped are not failures.
    pool.on('error', (error) => {
      if (!pool.ending && !server?.stopping)
        log('warn', `metadata database: an idle connection failed: ${error.message}`);
    });
    try {
      const client = await pool.connect().catch((error: unknown) => {
        throw new MetadataError(
          'CONNECT_FAILED',
          `cannot connect to the metadata database ${redact(connectionString)}: ${messageOf(error)}`,
          {
            cause: error,
          },
        );
      });
      client.release();
      const applied = await migrate(pool, log);
      return new MetadataStore(pool, connectionString, applied, server, log);
    } catch (error) {
      await pool.end().catch(() => {});
      await server?.close();
      throw error;
    }
  }

  /** Runs `work` in a transaction on one pooled connection: committed if it resolves, rolled back if it throws (see {@link transaction}). */
  async transaction<T>(work: (tx: MetadataQueries) => Promise<T>): Promise<T> {
    if (this.closing) throw closedError();
    return transaction(this.pool, work).catch((error: unknown) => {
      throw unavailableOr(error);
    });
  }

  /** Runs one statement on a pooled connection. */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>> {
    if (this.closing) throw closedError();
    return this.pool.query<R>(text, values).catch((error: unknown) => {
      throw unavailableOr(error);
    });
  }

  /**
   * Runs one statement prepared under `name` on each pooled connection the first time it runs there (parsed and
   * planned once per connection, then only bound and executed): for a statement run many times a second.
   */
  async prepared<R extends pg.QueryResultRow = pg.QueryResultRow>(
    name: string,
    text: string,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    if (this.closing) throw closedError();
    return this.pool.query<R>({ name, text, values }).catch((error: unknown) => {
      throw unavailableOr(error);
    });
  }

  /**
   * Releases the locks, ends the pool (waiting for checked-out connections), then stops the embedded
   * server: each step even when an earlier one failed, every failure reported. Idempotent.
   */
  close(): Promise<void> {
    return (this.closing ??= closeAll([
      { name: 'the metadata change feed', close: () => this.changes.close() },
      { name: 'the advisory locks', close: () => this.locks.close() },
      { name: 'the metadata pool', close: () => this.pool.end() },
      { name: 'the embedded Postgres server', close: () => this.server?.close() },
    ]));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function closedError(): MetadataError {
  return new MetadataError('METADATA_CLOSED', 'the metadata store has been closed');
}

/** The connection string without its password, for messages. */
function redact(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = '***';
    return `'${url.toString()}'`;
  } catch {
    return '(from the connection string)';
  }
}
