import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

/**
 * Idle DuckDB connections kept for the next statement, so a statement does not open one and run
 * `USE` and its setup (temporary views over partition files) every time. Each idle connection is
 * filed under the exact setup statements run on it: a statement gets a connection whose temporary
 * objects are exactly the ones its own setup would create, or a clean one on which its setup is
 * run, never one left with another setup (another caller's views). Only connections on which
 * nothing but SELECT statements ran to their end come back (the caller says so); the rest are
 * closed. Bounded: at most `maxIdle` idle connections, the least recently used closed first.
 */
export class ConnectionPool {
  /** Idle connections, least recently released first. */
  private idle: Array<{ key: string; connection: DuckDBConnection }> = [];
  /**
   * Connections still finishing their statement (a read transaction committing after its stream
   * ended), by setup: one statement of the same setup waits for each instead of setting up another.
   */
  private finishing: Array<{ key: string; released: Promise<void> }> = [];
  private closed = false;

  constructor(
    private readonly instance: DuckDBInstance,
    /** Run once on every new connection. */
    private readonly initialSql: readonly string[],
    private readonly maxIdle = 16,
    /** Told of each connection the pool closes, before it closes it. */
    private readonly closing: (connection: DuckDBConnection) => void = () => {},
  ) {}

  /** A connection with exactly `setup` run on it (beyond the initial statements). */
  async acquire(setup: readonly string[]): Promise<{ connection: DuckDBConnection; key: string }> {
    const key = setupKey(setup);
    const same = this.take(key) ?? (await this.handedOver(key));
    if (same) return { connection: same, key };
    const connection = this.take('') ?? (await this.open());
    try {
      for (const statement of setup) await connection.run(statement);
    } catch (error) {
      this.closeConnection(connection);
      throw error;
    }
    return { connection, key };
  }

  /** Gives a connection back: kept for its setup when `reusable`, closed otherwise. */
  release(connection: DuckDBConnection, key: string, reusable: boolean): void {
    if (!reusable || this.closed) {
      this.closeConnection(connection);
      return;
    }
    this.idle.push({ key, connection });
    if (this.idle.length > this.maxIdle) this.closeConnection(this.idle.shift()!.connection);
  }

  /**
   * A connection with setup `key` that its holder releases once `released` settles (and not before):
   * until then the next acquire of that setup finding no idle one waits for it, so a statement that
   * follows a read whose COMMIT still runs takes that read's connection rather than opening and
   * setting up another (one more DuckLake transaction).
   */
  finishingWith(key: string, released: Promise<void>): void {
    const entry = { key, released };
    this.finishing.push(entry);
    const unlist = (): void => this.unlist(entry);
    released.then(unlist, unlist);
  }

  /** Closes every idle connection; later releases close theirs. Idempotent. */
  close(): void {
    this.closed = true;
    for (const { connection } of this.idle.splice(0)) this.closeConnection(connection);
  }

  private closeConnection(connection: DuckDBConnection): void {
    this.closing(connection);
    connection.closeSync();
  }

  /** Waits for a connection of setup `key` that is finishing and that no other acquire waits for. */
  private async handedOver(key: string): Promise<DuckDBConnection | undefined> {
    const entry = this.finishing.find((f) => f.key === key);
    if (!entry) return undefined;
    this.unlist(entry);
    await entry.released.catch(() => {});
    return this.take(key);
  }

  private unlist(entry: { key: string; released: Promise<void> }): void {
    const at = this.finishing.indexOf(entry);
    if (at >= 0) this.finishing.splice(at, 1);
  }

  private take(key: string): DuckDBConnection | undefined {
    for (let i = this.idle.length - 1; i >= 0; i--) {
      if (this.idle[i].key === key) return this.idle.splice(i, 1)[0].connection;
    }
    return undefined;
  }

  private async open(): Promise<DuckDBConnection> {
    const connection = await this.instance.connect();
    try {
      for (const statement of this.initialSql) await connection.run(statement);
    } catch (error) {
      this.closeConnection(connection);
      throw error;
    }
    return connection;
  }
}

function setupKey(setup: readonly string[]): string {
  return setup.join('\u0000;\n');
}
