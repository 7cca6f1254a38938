import type { DuckDBConnection, DuckDBPreparedStatement, DuckDBType } from '@duckdb/node-api';
import type { StatementDescription } from './duckdb-engine.js';

/**
 * A kept statement, with what was read of it when it was first described: a kept statement is bound
 * to the same columns at each run or fails its run and is not kept again (see KeptStatements), so its
 * description and column types are those of its next run too, and reading them from DuckDB again at
 * each statement (~30 us of the main thread's ~1 ms per hot `SELECT 1`) is saved.
 */
export interface KeptStatement {
  readonly prepared: DuckDBPreparedStatement;
  /** As described for a client that does not ask for dictionaries (undefined: describe it again). */
  readonly description?: StatementDescription;
  /** Its result's column types (null: not a statement the native exporter runs; undefined: not read yet). */
  readonly columnTypes?: DuckDBType[] | null;
}

/**
 * SELECTs' prepared statements kept on the pool's idle connections after their run, by text, so the
 * next GetFlightInfo of the same text with the same setup on that connection is described without a
 * trip to DuckDB's thread to prepare it again (a dashboard sends the same statements over and over;
 * #10). A kept statement serves only its own connection, under the same setup (the pool's key: the
 * same temporary views), and only while nothing that may change the catalog has ended since it was
 * kept (`catalogMayHaveChanged`: any statement other than a SELECT, INSERT, UPDATE or DELETE, any
 * transaction's end). DuckDB also binds a prepared statement again at its run when a catalog it read
 * has changed, and the run checks its result's column types against the described ones, so a
 * description gone stale is refused (QUERY_INVALID), never sent as a wrong schema. A database of its own
 * attached, filled or detached (a rollup's kept tail, RunOptions.ownTable) changes nothing a kept
 * statement read: DuckDB 1.5.5 binds a prepared statement again at every run, not once, after a table of
 * a database it read was made or dropped, but not after another database was attached or detached.
 */
export class KeptStatements {
  private readonly byConnection = new WeakMap<DuckDBConnection, Kept>();
  private generation = 0;

  constructor(private readonly perConnection = 16) {}

  /** Something may have changed what a text binds to: every statement kept so far is let go. */
  catalogMayHaveChanged(): void {
    this.generation++;
  }

  /** Changes at each catalogMayHaveChanged: what was read of the catalog before another value may be stale. */
  get catalogGeneration(): number {
    return this.generation;
  }

  /** The statement kept for `sql` on this connection under this setup, now the caller's; once. */
  take(connection: DuckDBConnection, setupKey: string, sql: string): KeptStatement | undefined {
    const kept = this.current(connection, setupKey);
    const statement = kept?.statements.get(sql);
    if (statement) kept!.statements.delete(sql);
    return statement;
  }

  /** Keeps a statement that ran to its end on this connection (which goes back to the pool idle). */
  put(connection: DuckDBConnection, setupKey: string, sql: string, statement: KeptStatement): void {
    let kept = this.current(connection, setupKey);
    if (!kept) {
      kept = { setupKey, generation: this.generation, statements: new Map() };
      this.byConnection.set(connection, kept);
    }
    kept.statements.get(sql)?.prepared.destroySync();
    kept.statements.delete(sql);
    kept.statements.set(sql, statement);
    if (kept.statements.size <= this.perConnection) return;
    const [oldest, { prepared }] = kept.statements.entries().next().value!;
    kept.statements.delete(oldest);
    prepared.destroySync();
  }

  /** Lets go of what a connection kept (it is being closed, or its setup changes). */
  drop(connection: DuckDBConnection): void {
    const kept = this.byConnection.get(connection);
    if (!kept) return;
    this.byConnection.delete(connection);
    for (const { prepared } of kept.statements.values()) prepared.destroySync();
  }

  private current(connection: DuckDBConnection, setupKey: string): Kept | undefined {
    const kept = this.byConnection.get(connection);
    const stale = kept && (kept.setupKey !== setupKey || kept.generation !== this.generation);
    if (stale) this.drop(connection);
    return this.byConnection.get(connection);
  }
}

interface Kept {
  readonly setupKey: string;
  readonly generation: number;
  /** Least recently kept first. */
  readonly statements: Map<string, KeptStatement>;
}
