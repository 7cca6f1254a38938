import pg from 'pg';
import { MetadataError } from './errors.js';
import type { MetadataLog } from './metadata-log.js';
import { unavailableOr } from './unavailable.js';

/**
 * Postgres advisory locks that may be held for as long as a piece of work runs (a
 * materialization), on one connection of their own outside the pool: holding a lock never
 * keeps a pooled connection from the work it guards. The connection is opened on first use and
 * again after it fails (the server has then released its locks). Several processes sharing one
 * database take turns through these locks; within this process a key is held at most once,
 * since Postgres lets one session take the same lock twice.
 */
export class AdvisoryLocks {
  private connection: Promise<pg.Client> | undefined;
  private readonly held = new Set<string>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly log: MetadataLog,
  ) {}

  /** Runs `work` holding the lock named `key`; `undefined` at once, without running it, when anyone holds the lock. */
  async tryWhileHolding<T>(key: string, work: () => Promise<T>): Promise<T | undefined> {
    if (this.closing) throw new MetadataError('METADATA_CLOSED', 'the metadata store has been closed');
    if (this.held.has(key)) return undefined;
    this.held.add(key);
    try {
      const lost = (error: unknown): never => {
        throw unavailableOr(error);
      };
      const client = await this.connect().catch(lost);
      const { rows } = await client
        .query<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [key])
        .catch(lost);
      if (!rows[0].locked) return undefined;
      try {
        return await work();
      } finally {
        // Fails only when the connection is gone, and the server released the lock with it.
        await client.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).catch(() => {});
      }
    } finally {
      this.held.delete(key);
    }
  }

  /** Releases every lock still held, then closes the connection. Idempotent. */
  close(): Promise<void> {
    return (this.closing ??= (async () => {
      const connection = this.connection;
      this.connection = undefined;
      const client = await connection?.catch(() => undefined);
      // Explicitly: the server drops a closed session's locks only once its backend has exited.
      await client?.query('SELECT pg_advisory_unlock_all()').catch(() => {});
      await client?.end().catch(() => {});
    })());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private connect(): Promise<pg.Client> {
    const opening = (this.connection ??= (async () => {
      const client = new pg.Client({ connectionString: this.connectionString });
      const forget = (): void => {
        if (this.connection === opening) this.connection = undefined;
      };
      client.on('error', (error) => {
        this.log('warn', `metadata database: the advisory lock connection failed: ${error.message}`);
        forget();
      });
      client.on('end', forget);
      await client.connect();
      return client;
    })());
    opening.catch(() => {
      if (this.connection === opening) this.connection = undefined;
    });
    return opening;
  }
}
