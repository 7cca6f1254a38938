import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';

/**
 * Idle DuckDB connections kept for the next statement, so a statement does not open one and run
 * `USE` and its setup (temporary views over partition files) every time. Each idle connection is
 * filed under the exact setup statements run on it: a statement gets a connection whose temporary
 * objects are exactly the ones its own setup would create, or a clean one on which its setup is
 * run, never one left with another setup (another caller's views). Only connections on which
 * nothing but SELECT statements ran to their end come back (the caller says so); the rest are
 * closed. Bounded: at most `maxIdle` idle connections, the least recently used closed first.
 *
 * A setup of temporary views alone may also be run on the idle connection the next release would
 * close (the pool full), when its own setup made views of those names alone: each is replaced, so its
 * objects are then exactly the new setup's. A rollup's never-stale read under steady ingestion has a
 * new setup at every read (the files written since), and its earlier reads' connections fill the pool:
 * set up again, the oldest spares it opening a connection (and closing another).
 */
export class ConnectionPool {
  /** Idle connections, least recently released first, with the views their setup made (see viewsOf). */
  private idle: Array<{ key: string; views: ReadonlySet<string> | null; connection: DuckDBConnection }> = [];
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
    /** Told of each connection the pool closes, or sets up again for other views, before it does. */
    private readonly closing: (connection: DuckDBConnection) => void = () => {},
  ) {}

  /** A connection with exactly `setup` run on it (beyond the initial statements). */
  async acquire(setup: readonly string[]): Promise<{ connection: DuckDBConnection; key: string }> {
    const key = setupKey(setup);
    const same = this.take(key) ?? (await this.handedOver(key));
    if (same) return { connection: same, key };
    // Before a clean one, which statements without a setup take as it is.
    const replaced = this.takeReplaceable(setup);
    if (replaced) {
      this.closing(replaced);
      const done = await this.setUp(replaced, setup).then(
        () => true,
        () => false,
      );
      // Failed on views it had (not the setup's own fault, as far as can be told): set up on a new one.
      if (done) return { connection: replaced, key };
    }
    const connection = this.take('') ?? (await this.open());
    await this.setUp(connection, setup);
    return { connection, key };
  }

  /** Runs `setup` on `connection`, closed if it fails. */
  private async setUp(connection: DuckDBConnection, setup: readonly string[]): Promise<void> {
    try {
      for (const statement of setup) await connection.run(statement);
    } catch (error) {
      this.closeConnection(connection);
      throw error;
    }
  }

  /** Gives a connection back: kept for its setup when `reusable`, closed otherwise. */
  release(connection: DuckDBConnection, key: string, reusable: boolean): void {
    if (!reusable || this.closed) {
      this.closeConnection(connection);
      return;
    }
    this.idle.push({ key, views: viewsOf(key), connection });
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

  /**
   * The idle connection the next release would close, when the pool is full and its setup made views
   * alone, all of names `setup` replaces (views alone).
   */
  private takeReplaceable(setup: readonly string[]): DuckDBConnection | undefined {
    const oldest = this.idle[0];
    if (!oldest || this.idle.length < this.maxIdle || !oldest.views || oldest.views.size === 0) return undefined;
    const views = viewsOf(setupKey(setup));
    if (!views || ![...oldest.views].every((v) => views.has(v))) return undefined;
    return this.idle.shift()!.connection;
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

const separator = '\u0000;\n';

function setupKey(setup: readonly string[]): string {
  return setup.join(separator);
}

/** `CREATE OR REPLACE TEMP VIEW "<name>" AS` (the name as quoted): a setup statement that replaces a view. */
const viewStatement = /^CREATE OR REPLACE TEMP VIEW ("(?:[^"]|"")+") AS /;

/** The views a setup (its key) makes, by quoted name, when it makes nothing else (null otherwise). */
function viewsOf(key: string): Set<string> | null {
  const views = new Set<string>();
  if (key === '') return views;
  for (const statement of key.split(separator)) {
    const name = viewStatement.exec(statement)?.[1];
    if (name === undefined) return null;
    views.add(name);
  }
  return views;
}
