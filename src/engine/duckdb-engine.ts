import {
  DuckDBInstance,
  DuckDBTypeId,
  StatementType,
  type DuckDBConnection,
  type DuckDBPreparedStatement,
  type DuckDBResult,
  type DuckDBType,
} from '@duckdb/node-api';
import { availableParallelism } from 'node:os';
import { Field, Null, Schema, Type, Utf8, type RecordBatch, type Table } from 'apache-arrow';
import { arrowType, type ArrowTypeOptions } from './arrow-types.js';
import { ChunkConverter } from './chunk-converter.js';
import {
  connectionHandle,
  nativeBatches,
  nativeExportProblem,
  nativeStatementBatches,
  nativeTailRows,
  registerNativeOtlpLogs,
  registerNativeSketches,
  resultError,
  setThreadsAtPriority,
  type BatchSource,
  type NativeSketchParameters,
} from './native-export.js';
import { checkLive } from '../calls/index.js';
import { isErrorOf, messageOf, type OrreryError } from '../errors/index.js';
import { DuckDBResultFailure, engineClosed, engineErrors, sqlError } from './errors.js';
import { bindRow, parameterRowCount } from './parameters.js';
import { nanosecondTimestamps } from './dialect.js';
import { insertBatches } from './batch-insert.js';
import { StatementGuard, type Deadline } from './statement-guard.js';
import { ConnectionPool } from './connection-pool.js';
import { KeptStatements } from './kept-statements.js';
import { sizeBytes } from './memory-limit.js';

export interface EngineOptions {
  /** Folders queries may read; every other file is out of reach. */
  readonly readableDirectories?: readonly string[];
  /** DuckDB worker threads (default: DuckDB's own, the core count). */
  readonly threads?: number;
  readonly memoryLimit?: string;
  /**
   * The folder DuckDB spills to when an operator (a sort, a hash aggregate or join) outgrows memoryLimit;
   * unset: DuckDB's default, `.tmp` under the process's working folder.
   */
  readonly tempDirectory?: string;
  /**
   * Target size of each Arrow batch produced (default 2 MiB). Against 1 MiB, ADBC's Go driver spends ~15 % less
   * CPU per large result (it pays per batch), and the server and pyarrow no more; a batch stays well under the
   * 4 MiB that grpc-go clients accept by default (bench/latency/PROFILE.md, twelfth pass). The native exporter cuts
   * before the row that would pass it; the JavaScript converter (lists, structs) after the chunk that did.
   */
  readonly batchBytes?: number;
  /**
   * Extension files LOADed at start-up, before anything else, with DuckDB's signature checks on
   * (unsigned extensions are never allowed). A file that does not load fails create().
   */
  readonly extensions?: readonly string[];
  /**
   * Statements holding credentials (the object store's CREATE SECRET), run after the extensions
   * load. Their text is never shown: a failure says only that the secret was refused.
   */
  readonly secrets?: readonly string[];
  /** Other spellings of readable locations that DuckDB's errors may show (an S3 endpoint's URL). */
  readonly locationAliases?: readonly string[];
  /** ATTACH statements run after the extensions load (the DuckLake catalog); one that fails fails create(). */
  readonly attach?: readonly string[];
  /** Statements run once at start-up, before the configuration is locked (macros). */
  readonly startupSql?: readonly string[];
  /**
   * Fill Arrow batches of flat column types in native code off the event loop (default: when
   * the module is built). False keeps every result on the JavaScript converter.
   */
  readonly nativeExport?: boolean;
  /**
   * Register the native sketch aggregates (native/sketch-aggregates.cc) with these parameters
   * (views' nativeSketchParameters) before startupSql, which then holds sketchStatements(true);
   * create() fails when the native module is not built.
   */
  readonly nativeSketches?: NativeSketchParameters;
  /**
   * Register the native addon's __orrery_tail_row (native/tail-rows.cc): statements are then told which rows of
   * rollups' kept tails they read without a statement (RunOptions.tailReads); create() fails when it is not built.
   */
  readonly nativeTailRows?: boolean;
  /**
   * Register the native OTLP logs payload table function (native/otlp-logs-table.cc), reading payload files
   * under this folder only (the materializer's scratch folder); create() fails when the addon is not built.
   */
  readonly nativeLogsPayloads?: string;
  /**
   * > 0 (the heavy lane's engine, issue 9): DuckDB's work for this instance runs on threads at this
   * nice value, which work for it alone: its background threads, and for statements the native
   * exporter runs (flat column types, no parameters) a thread of the statement's own. The caller
   * checked that this process may lower a thread's priority (lowPriorityProblem); needs the native
   * exporter. Other statements run on libuv's shared threads at their priority.
   */
  readonly nice?: number;
  /** Told each time a client's statement is run once more after a conflict refused its commit (see execute). */
  readonly onConflictRerun?: () => void;
}

/** What a statement is, learnt by preparing it (nothing runs). */
export interface StatementDescription {
  readonly statementType: StatementType;
  /** True for statements that return rows (SELECT, EXPLAIN, PRAGMA, CALL). */
  readonly returnsRows: boolean;
  /** Result schema (DML answers a `Count` column); columns whose type depends on unbound parameters are Null-typed. */
  readonly schema: Schema;
  /** One field per `?`; parameters DuckDB cannot type yet are Utf8. */
  readonly parameterSchema: Schema;
}

/** One overload of a function DuckDB knows (duckdb_functions()). */
export interface FunctionDescription {
  readonly catalog: string;
  readonly schema: string;
  readonly name: string;
  /** scalar, aggregate, macro, table, table_macro, pragma */
  readonly type: string;
  /** CONSISTENT, CONSISTENT_WITHIN_QUERY, VOLATILE; null for macros and table functions. */
  readonly stability: string | null;
  /** A macro's body, parsed as `SELECT <body>` (json_serialize_sql); null for other functions. */
  readonly macroTree: { statements: Record<string, unknown>[] } | null;
}

export interface TableDescription {
  readonly catalog: string;
  readonly schema: string;
  readonly name: string;
  readonly type: 'TABLE' | 'VIEW';
}

export interface RunOptions {
  readonly parameters?: Table;
  /** Stops the statement (CANCELLED) when aborted. */
  readonly signal?: AbortSignal;
  /** Stops the statement (DEADLINE_EXCEEDED, with the deadline's message) when it passes. */
  readonly deadline?: Deadline;
  /** Stop after this many rows. */
  readonly limit?: number;
  /** Send ENUM columns as dictionaries rather than text. */
  readonly preserveDictionary?: boolean;
  /** Statements run first on the statement's connection (temporary views, macros). */
  readonly setup?: readonly string[];
  /**
   * A statement run on the statement's connection after its setup, at each statement: it changes rows of the
   * setup's temporary tables alone (an UPDATE), so the connection stays the setup's and a statement kept on it
   * stays kept (a rollup's kept tails: which rows the setup's views read, tail-values.ts). A query's runs it just
   * before the statement's run, in the same trip to DuckDB's thread when the native exporter runs the statement
   * (its prepare, describeAndHold's, reads no rows); describe and execute, before the prepare.
   */
  readonly fill?: string;
  /**
   * The row of each ring of a rollup's kept tails (by its database) the statement reads, told to its connection
   * natively before it is prepared or run (engines created with nativeTailRows; tail-values.ts tailReadsByRing).
   */
  readonly tailReads?: ReadonlyMap<string, number>;
  /**
   * The statement's fixed clock, a UTC time's text (`2026-12-06 22:03:00.123`): Orrery's now() and its twins read
   * it instead of DuckDB's clock (fixedClockVariable), so DuckDB binds the statement's text as written, and names
   * its columns itself, while every read of the clock is one value, the one pruning compared (PartitionPruning).
   */
  readonly clock?: string;
  /** Run on this held connection (a transaction) instead of a fresh one. */
  readonly session?: EngineSession;
  /**
   * The same statement as prepared by describeAndHold, with the same setup: run on its
   * connection without preparing again, when it is still held (else as if absent).
   */
  readonly held?: HeldStatement;
  /**
   * The statement (execute) and its setup attach, fill or detach a database of their own under a name no
   * statement kept can bind to: a new name, or one no statement is set up with any more (a rollup's kept
   * tail, tail-values.ts). No statement kept read that database, so none is let go (see KeptStatements).
   */
  readonly ownTable?: boolean;
  /**
   * execute without a session: a statement that changes data or the catalog (INSERT, UPDATE, DELETE, CREATE, ALTER,
   * DROP), every parameter row of it, runs in a transaction of its own, committed only when neither `signal` nor
   * `deadline` stopped it and the running statement's call is live (checkLive): a client told its call failed (it
   * gave up while the statement ran) is kept to nothing.
   */
  readonly committedIfLive?: boolean;
}

/**
 * The variable Orrery's clock macros read (views/sql-functions.ts): set on a statement's connection for its run when
 * its clock is fixed (RunOptions.clock), unset otherwise. A prepared statement reading the clock is bound again at
 * each run (DuckDB's clock is CONSISTENT_WITHIN_QUERY, which the macros call), so a kept one reads each run's value.
 */
export const fixedClockVariable = '__orrery_clock';

/** How lease sets a statement's clock: the text of a UTC time JS wrote, nothing else. */
const clockText = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})?$/;

/** How json_serialize_sql answers a statement other than SELECT (DuckDB's own message). */
const SERIALIZE_REFUSES_NON_SELECT = /^Only SELECT statements can be serialized/;

/**
 * One DuckDB connection held across statements, for a transaction: what runs with it as
 * `RunOptions.session` sees the same uncommitted changes. One statement at a time. Idempotent close.
 */
export class EngineSession {
  private closed = false;
  /**
   * The series tables (by name) this transaction has written: its rows of them are its own until it commits, so
   * what reads them elsewhere than through DuckLake in it (rollups' stored rows, their files) leaves them out.
   */
  readonly written = new Set<string>();
  private failedBy: OrreryError | undefined;

  constructor(
    readonly connection: DuckDBConnection,
    /** Closes the connection (and tells the engine, whose close() waits for it). */
    private readonly release: (connection: DuckDBConnection) => void,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  /** TRANSACTION_ABORTED once a statement failed the transaction (fail): it runs nothing more and commits nothing. */
  get failure(): OrreryError | undefined {
    return this.failedBy;
  }

  /**
   * Fails the transaction, as Postgres does after a failed statement: DuckDB has no savepoints to take one statement's
   * changes out, so a statement cancelled after it wrote (or one DuckDB failed the transaction for) leaves it unusable.
   */
  fail(why: string): void {
    this.failedBy ??= engineErrors.error(
      'TRANSACTION_ABORTED',
      `the transaction failed (${why}): it runs no more statements and commits nothing; roll it back`,
    );
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.release(this.connection);
  }
}

/**
 * A statement describeAndHold prepared, kept with its connection for one later run (a
 * GetFlightInfo's, for the DoGet that follows), so that run neither leases a connection nor
 * prepares again. Let go (the statement destroyed, the connection back to the pool) when a run
 * takes it and ends, on close(), after the engine's hold time, or when the engine holds too many.
 * Prepared `inTransaction`, the run ends the transaction the prepare began (see describeAndHold);
 * a statement let go without a run rolls it back before its connection goes back to the pool.
 */
export class HeldStatement {
  private parts: HeldParts | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    lease: Lease,
    prepared: DuckDBPreparedStatement,
    readonly inTransaction: boolean,
    holdMs: number,
    /** Called once, when the statement is taken or closed. */
    private readonly gone: (held: HeldStatement) => void,
    /** The text to keep the statement under after its run (KeptStatements), if it may be. */
    keepAs?: string,
    /** What is known of it already (kept with it after its run). */
    known?: Known,
  ) {
    this.parts = { lease, prepared, inTransaction, keepAs, known };
    this.timer = setTimeout(() => this.close(), holdMs);
    this.timer.unref();
  }

  /** The connection and prepared statement, for the run that now owns them; once. */
  take(): HeldParts | undefined {
    const parts = this.parts;
    if (!parts) return undefined;
    this.parts = undefined;
    clearTimeout(this.timer);
    this.gone(this);
    return parts;
  }

  /** Lets the statement and its connection go, unless a run took them. Idempotent. */
  close(): void {
    const parts = this.take();
    if (!parts) return;
    parts.prepared.destroySync();
    if (!parts.inTransaction) return parts.lease.release(true);
    parts.lease.connection.run('ROLLBACK').then(
      () => parts.lease.release(true),
      () => parts.lease.release(false),
    );
  }
}

interface HeldParts {
  readonly lease: Lease;
  readonly prepared: DuckDBPreparedStatement;
  /** Prepared in a transaction of its own, which the run (or close) ends. */
  readonly inTransaction: boolean;
  readonly keepAs?: string;
  readonly known?: Known;
}

/** What is known of a held statement without asking DuckDB again (see KeptStatement). */
interface Known {
  description?: StatementDescription;
  columnTypes?: DuckDBType[] | null;
}

/**
 * A connection for one statement: `release` gives it back to the pool (kept for the next
 * statement with the same setup when `reusable`: only SELECT statements ran on it, to their end),
 * or does nothing when it is a session's.
 */
interface Lease {
  readonly connection: DuckDBConnection;
  /** The pool's key of the connection's setup (none for a session's connection). */
  readonly setupKey?: string;
  readonly release: (reusable: boolean) => void;
}

/** The catalog user tables live in. */
export const catalogName = 'orrery';

/**
 * The functions (DuckDB's and the macros Orrery made) and the tables and views Orrery made in the engine's own
 * in-memory catalogs when its start-up ended, by lower-case name: every statement of every key binds its names
 * to them, so no statement may replace, shadow or drop them (see sql/engine-objects.ts).
 */
export interface StartupObjects {
  readonly functions: ReadonlySet<string>;
  readonly relations: ReadonlySet<string>;
}

const startupFunctionsSql = 'SELECT DISTINCT lower(function_name) FROM duckdb_functions()';
const startupRelationsSql = `SELECT DISTINCT lower(name) FROM (
    SELECT database_name, view_name AS name FROM duckdb_views() WHERE NOT internal
    UNION ALL SELECT database_name, table_name FROM duckdb_tables() WHERE NOT internal)
  WHERE database_name IN (SELECT database_name FROM duckdb_databases() WHERE type = 'duckdb' AND NOT internal)`;

/** How many statement texts keep their parse tree, and the longest text kept. */
const parsedTreeEntries = 512;
const parsedTreeMaxText = 16 * 1024;
/** The largest parse tree (as JSON) whose SQL text is kept. */
const deparsedTreeMaxJson = 256 * 1024;

/** How long describeAndHold keeps a statement for its run, and how many it keeps at most. */
const holdMs = 10_000;
const maxHeld = 64;
/** How many of them at most hold a transaction open (describeAndHold's `inTransaction`). */
const maxHeldInTransaction = 16;

const rowReturning = new Set([StatementType.SELECT, StatementType.EXPLAIN, StatementType.PRAGMA, StatementType.CALL]);
/** Statements that change rows, never what a text binds to: kept statements stay (see KeptStatements). */
const keepsCatalog = new Set([StatementType.SELECT, StatementType.INSERT, StatementType.UPDATE, StatementType.DELETE]);
/** The statements RunOptions.committedIfLive runs in a transaction of their own (DuckDB runs them in one). */
const transactional = new Set([
  StatementType.INSERT,
  StatementType.UPDATE,
  StatementType.DELETE,
  StatementType.MERGE_INTO,
  StatementType.CREATE,
  StatementType.ALTER,
  StatementType.DROP,
]);
/**
 * Of those, the ones that change rows: run once (one parameter row set) under a signal that interrupts them, DuckDB's
 * own transaction around one statement (autocommit) keeps nothing of one it interrupted, as committedIfLive asks,
 * without a BEGIN and a COMMIT of their own around it.
 */
const rowChanges = new Set([
  StatementType.INSERT,
  StatementType.UPDATE,
  StatementType.DELETE,
  StatementType.MERGE_INTO,
]);

/**
 * One DuckDB database, sandboxed: no file access outside the readable folders, no
 * extension installs, configuration locked after set-up. Each statement runs on its own
 * connection, so statements run side by side and one failing leaves the others alone.
 */
export class DuckDBEngine {
  private closed = false;
  private closing: Promise<void> | undefined;
  private readonly pool: ConnectionPool;
  /** Every connection in use now (statements, sessions); close() interrupts them and waits for them. */
  private readonly busy = new Set<DuckDBConnection>();
  private drained: (() => void) | undefined;
  /** Parse trees by statement text, least recently used first (see serializedTree). */
  private readonly parsedTrees = new Map<string, string>();
  /** Statements describeAndHold keeps, oldest first. */
  private readonly held = new Set<HeldStatement>();
  /** SQL texts by parse tree (JSON), least recently used first (see deparse). */
  private readonly deparsedTrees = new Map<string, string>();
  /** SELECTs' prepared statements kept on idle connections for the next run of the same text. */
  private readonly kept = new KeptStatements();
  /** Connections whose fixedClockVariable is set (see lease): unset before any statement without a fixed clock. */
  private readonly clocked = new WeakSet<DuckDBConnection>();

  private constructor(
    /** The folders queries may read, and other spellings of them (error messages may name files in them). */
    readonly hiddenLocations: readonly string[],
    private readonly instance: DuckDBInstance,
    private readonly batchBytes: number,
    private readonly nativeExport: boolean,
    private readonly nice: number,
    /** What the engine had made when start-up ended (see StartupObjects). */
    readonly startupObjects: StartupObjects,
    /**
     * The instance's number where __orrery_tail_row is registered (EngineOptions.nativeTailRows): statements may
     * be given tailReads.
     */
    private readonly tailRowsInstance: number | undefined,
    private readonly onConflictRerun: (() => void) | undefined,
  ) {
    this.pool = new ConnectionPool(instance, [`USE ${catalogName}`], undefined, (c) => {
      this.kept.drop(c);
      if (tailRowsInstance !== undefined) nativeTailRows()?.forgetTailReads(connectionHandle(c), tailRowsInstance);
    });
  }

  /** Whether __orrery_tail_row is registered (EngineOptions.nativeTailRows): statements may be given tailReads. */
  get tailRows(): boolean {
    return this.tailRowsInstance !== undefined;
  }

  /**
   * Changes whenever a statement or a transaction's end may have changed what a text binds to (its columns):
   * what was described under another value may be stale.
   */
  get catalogGeneration(): number {
    return this.kept.catalogGeneration;
  }

  static async create(options: EngineOptions = {}): Promise<DuckDBEngine> {
    // Said outright although it is DuckDB's default: extensions load only when DuckDB's signature checks pass.
    const config: Record<string, string> = { allow_unsigned_extensions: 'false' };
    const nice = options.nice ?? 0;
    // At a nice value the instance starts with no background thread (threads 1): they are launched
    // below, from a lowered thread, and inherit its priority.
    const threads = options.threads ?? (nice > 0 ? availableParallelism() : undefined);
    if (threads) config.threads = nice > 0 ? '1' : String(threads);
    if (options.memoryLimit) config.memory_limit = options.memoryLimit;
    if (options.tempDirectory) config.temp_directory = options.tempDirectory;
    const instance = await DuckDBInstance.create(':memory:', config);
    const setup = await instance.connect();
    let startupObjects: StartupObjects;
    let tailRows: number | undefined;
    try {
      if (nice > 0 && threads! > 1) setThreadsAtPriority(setup, threads!, nice);
      await setup.run(`ATTACH ':memory:' AS ${catalogName}`);
      await setup.run(`SET GLOBAL TimeZone = 'UTC'`);
      await setup.run(`USE ${catalogName}`);
      for (const file of options.extensions ?? []) await loadExtension(setup, file);
      for (const statement of options.secrets ?? []) await createSecret(setup, statement);
      for (const statement of options.attach ?? []) await attach(setup, statement);
      if (options.nativeSketches) {
        // As DuckDB settled it (its default is a share of the machine's memory), in its own syntax.
        const [[limit]] = (await setup.runAndReadAll(`SELECT current_setting('memory_limit')`)).getRows();
        registerNativeSketches(setup, options.nativeSketches, sizeBytes(String(limit)));
      }
      if (options.nativeLogsPayloads) registerNativeOtlpLogs(setup, options.nativeLogsPayloads);
      if (options.nativeTailRows) {
        const native = nativeTailRows();
        if (!native) throw new Error(`__orrery_tail_row is not available: ${nativeExportProblem()}`);
        tailRows = native.registerTailRowFunction(connectionHandle(setup));
      }
      for (const statement of options.startupSql ?? []) await setup.run(statement);
      const [functions, objects] = await Promise.all(
        [startupFunctionsSql, startupRelationsSql].map(async (sql) =>
          (await setup.runAndReadAll(sql)).getRows().map(([name]) => String(name)),
        ),
      );
      startupObjects = { functions: new Set(functions), relations: new Set(objects) };
      const dirs = (options.readableDirectories ?? []).map((d) => `'${d.replaceAll("'", "''")}'`).join(', ');
      await setup.run(`SET allowed_directories = [${dirs}]`);
      await setup.run('SET enable_external_access = false');
      await setup.run('SET autoinstall_known_extensions = false');
      await setup.run('SET autoload_known_extensions = false');
      await setup.run('SET lock_configuration = true');
    } catch (error) {
      setup.closeSync();
      instance.closeSync();
      throw error;
    }
    setup.closeSync();
    return new DuckDBEngine(
      [...(options.readableDirectories ?? []), ...(options.locationAliases ?? [])],
      instance,
      options.batchBytes ?? 2 * 1024 * 1024,
      options.nativeExport ?? true,
      nice,
      startupObjects!,
      tailRows,
      options.onConflictRerun,
    );
  }

  /** Prepares a statement to learn its kind and schemas. */
  async describe(sql: string, options: RunOptions = {}): Promise<StatementDescription> {
    const { parameters } = options;
    const typeOptions: ArrowTypeOptions = options.preserveDictionary ? { dictionaryIds: { next: 0 } } : {};
    return this.withPrepared(sql, options, async (prepared, guard) => {
      const description = describePrepared(prepared, typeOptions);
      if (!parameters || parameters.numRows === 0) return description;
      bindRow(prepared, parameters, 0);
      if (description.schema.fields.every((f) => f.typeId !== Type.Null)) return description;
      // Column types that hang on parameter types are known once bound values meet the
      // plan: start the statement (streaming, so nothing is computed ahead) and read them.
      guard.check();
      const result = await prepared.stream();
      const names = Array.from({ length: result.columnCount }, (_, i) => result.columnName(i));
      const types = columnTypesOf(result);
      const fields = names.map(
        (name, i) => new Field(name, arrowType(types[i], typeOptions), true, columnMetadata(types[i])),
      );
      return { ...description, schema: new Schema(fields) };
    });
  }

  /**
   * describe, keeping the prepared statement and its connection for one run of the same
   * statement with the same setup (pass `held` in that run's options). For statements without
   * parameters outside a session; anything else is described as by describe, holding nothing.
   *
   * `inTransaction`: the prepare begins a transaction that the run commits, so the statement reads
   * the DuckLake catalog at one snapshot in one DuckLake transaction (each transaction costs DuckLake a
   * Postgres transaction and a snapshot read, and a prepared statement is bound again when it runs).
   * Only for a run that follows at once: the run reads the lake as it was when the statement was prepared.
   *
   * `keep`: once run to its end, the prepared statement stays on its connection for the next
   * describeAndHold of the same text with the same setup (see KeptStatements); not for statements
   * reading the lake (DuckLake binds them again at each run, and other processes change its catalog).
   */
  async describeAndHold(
    sql: string,
    options: RunOptions = {},
    inTransaction = false,
    keep = false,
  ): Promise<{ description: StatementDescription; held?: HeldStatement }> {
    if (options.session || (options.parameters && options.parameters.numRows > 0))
      return { description: await this.describe(sql, options) };
    const typeOptions: ArrowTypeOptions = options.preserveDictionary ? { dictionaryIds: { next: 0 } } : {};
    // The fill runs with the held statement's run (stream).
    const lease = await this.lease({ ...options, fill: undefined });
    let prepared: DuckDBPreparedStatement | undefined;
    try {
      // A connection whose transaction is left open never goes back to the pool: every failure below closes it.
      if (inTransaction) await lease.connection.run('BEGIN TRANSACTION');
      const keepAs = keep && !inTransaction && lease.setupKey !== undefined ? sql : undefined;
      const kept = keepAs !== undefined ? this.kept.take(lease.connection, lease.setupKey!, keepAs) : undefined;
      prepared = kept?.prepared ?? (await prepare(lease.connection, sql));
      // Dictionaries are numbered per statement: such a description is made for this statement alone.
      const shared = !typeOptions.dictionaryIds;
      const description = (shared ? kept?.description : undefined) ?? describePrepared(prepared, typeOptions);
      if (this.closed) throw engineClosed();
      if (prepared.statementType !== StatementType.SELECT) {
        prepared.destroySync();
        lease.release(false);
        return { description };
      }
      const known = { description: shared ? description : kept?.description, columnTypes: kept?.columnTypes };
      const held = new HeldStatement(lease, prepared, inTransaction, holdMs, (h) => this.held.delete(h), keepAs, known);
      this.held.add(held);
      if (this.held.size > maxHeld) this.held.values().next().value!.close();
      // Each open DuckLake transaction holds a Postgres connection: a few at most wait for their run.
      const waiting = [...this.held].filter((h) => h.inTransaction);
      if (waiting.length > maxHeldInTransaction) waiting[0].close();
      return { description, held };
    } catch (error) {
      prepared?.destroySync();
      lease.release(false);
      throw this.failure(error);
    }
  }

  /**
   * Runs a row-returning statement; batches stream as DuckDB produces them, the results of
   * each parameter row in turn (one connection, one prepared statement for them all). Pass the
   * description a caller already has (from describe with the same options) to skip
   * preparing the statement twice.
   */
  async query(
    sql: string,
    options: RunOptions = {},
    described?: StatementDescription,
  ): Promise<{ schema: Schema; batches: AsyncIterable<RecordBatch> }> {
    const description = described ?? (await this.describe(sql, options));
    const batches = async function* (this: DuckDBEngine): AsyncGenerator<RecordBatch> {
      let remaining = options.limit ?? Number.POSITIVE_INFINITY;
      if (remaining === 0) return;
      for await (const batch of this.stream(sql, description.schema, options)) {
        if (batch.numRows >= remaining) {
          yield batch.numRows > remaining ? batch.slice(0, remaining) : batch;
          return;
        }
        remaining -= batch.numRows;
        yield batch;
      }
    };
    return { schema: description.schema, batches: batches.call(this) };
  }

  /**
   * Runs a statement for its effect; the number of rows changed (summed over parameter rows). A client's statement
   * outside a transaction (committedIfLive without a session) whose commit DuckLake refused for a conflict is run
   * once more: nothing of it was kept, and a publication's ALTER of a series table (its sort) fails every INSERT into
   * it then running. In a transaction the client hears TRANSACTION_CONFLICT, its work being its own to run again.
   */
  async execute(sql: string, options: RunOptions = {}): Promise<number> {
    try {
      return await this.executeOnce(sql, options);
    } catch (error) {
      if (!options.committedIfLive || options.session || !isErrorOf(error, engineErrors, 'TRANSACTION_CONFLICT'))
        throw error;
      this.onConflictRerun?.();
      return this.executeOnce(sql, options);
    }
  }

  private async executeOnce(sql: string, options: RunOptions): Promise<number> {
    return this.withPrepared(sql, options, async (prepared, guard, connection) => {
      const rowSets = Math.max(1, parameterRowCount(options.parameters));
      const own =
        options.committedIfLive &&
        !options.session &&
        transactional.has(prepared.statementType) &&
        !(rowSets === 1 && options.signal && rowChanges.has(prepared.statementType));
      if (own) await connection.run('BEGIN TRANSACTION');
      try {
        let changed = 0;
        for (let row = 0; row < rowSets; row++) {
          guard.check();
          if (options.parameters && options.parameters.numRows > 0) bindRow(prepared, options.parameters, row);
          const result = await prepared.run();
          changed += result.rowsChanged;
        }
        if (own) {
          guard.check();
          checkLive();
          // Past this point the write stands: a stop arriving now must not interrupt DuckLake's commit midway.
          guard.dispose();
          await connection.run('COMMIT');
        }
        return changed;
      } catch (error) {
        if (own) {
          guard.dispose();
          await connection.run('ROLLBACK').catch(() => {});
        }
        throw error;
      }
    });
  }

  /**
   * Runs a statement for its effect and the rows it returns (an INSERT … RETURNING: what it wrote, answered by the one
   * statement instead of a second reading it back), as DuckDB's JS values.
   */
  async returned(sql: string, options: Pick<RunOptions, 'setup' | 'session' | 'ownTable'> = {}): Promise<unknown[][]> {
    return this.withPrepared(sql, options, async (prepared) => (await prepared.runAndReadAll()).getRows());
  }

  /**
   * Runs `work` in a transaction on `session` (one of Orrery's own, not a client's), committed when `keep` accepts its
   * result and the running statement's call is live (checkLive), rolled back otherwise.
   */
  async transaction<T>(
    session: EngineSession,
    work: () => Promise<T>,
    keep: (result: T) => boolean = () => true,
  ): Promise<T> {
    await this.execute('BEGIN TRANSACTION', { session });
    try {
      const result = await work();
      if (keep(result)) checkLive();
      await this.execute(keep(result) ? 'COMMIT' : 'ROLLBACK', { session });
      return result;
    } catch (error) {
      await this.execute('ROLLBACK', { session }).catch(() => {});
      throw error;
    }
  }

  /**
   * DuckDB's own parse tree of a SELECT (json_serialize_sql), or null when the text is not
   * made of SELECT statements; syntax errors throw.
   */
  async parseSelect(sql: string): Promise<{ statements: Record<string, unknown>[] } | null> {
    const tree = JSON.parse(await this.serializedTree(sql)) as {
      error: boolean;
      error_type?: string;
      error_message?: string;
      statements: Record<string, unknown>[];
    };
    if (!tree.error) return tree;
    // DuckDB serializes SELECT statements only and answers anything else with this message: not a read.
    if (tree.error_type !== 'parser' && SERIALIZE_REFUSES_NON_SELECT.test(tree.error_message ?? '')) return null;
    throw engineErrors.error('QUERY_INVALID', tree.error_message ?? 'cannot parse the statement');
  }

  /**
   * json_serialize_sql of a text, big integers marked. Kept for the last texts parsed: a
   * dashboard sends the same statements over and over, and the tree depends on the text alone.
   */
  private async serializedTree(sql: string): Promise<string> {
    const cached = this.parsedTrees.get(sql);
    if (cached !== undefined) {
      this.parsedTrees.delete(sql);
      this.parsedTrees.set(sql, cached);
      return cached;
    }
    const { connection, release } = await this.lease();
    let json: string;
    try {
      const reader = await connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR)', [sql]);
      json = markBigIntegers(String(reader.getRows()[0][0]));
    } finally {
      release(true);
    }
    if (sql.length <= parsedTreeMaxText) {
      this.parsedTrees.set(sql, json);
      if (this.parsedTrees.size > parsedTreeEntries) this.parsedTrees.delete(this.parsedTrees.keys().next().value!);
    }
    return json;
  }

  /** Every function of the database: DuckDB's built-ins and the macros created at start-up. */
  async functions(): Promise<FunctionDescription[]> {
    const { connection, release } = await this.lease();
    try {
      const reader = await connection.runAndReadAll(
        `SELECT database_name, schema_name, function_name, function_type, stability,
                CASE WHEN function_type = 'macro' THEN json_serialize_sql('SELECT ' || macro_definition) END
           FROM duckdb_functions()`,
      );
      return reader.getRows().map(([catalog, schema, name, type, stability, macro]) => {
        const tree =
          macro === null
            ? null
            : (JSON.parse(String(macro)) as { error: boolean; statements: Record<string, unknown>[] });
        return {
          catalog: String(catalog),
          schema: String(schema),
          name: String(name),
          type: String(type),
          stability: stability === null ? null : String(stability),
          macroTree: tree && !tree.error ? tree : null,
        };
      });
    } finally {
      release(true);
    }
  }

  /**
   * SQL text of a json_serialize_sql tree (after a rewrite of it). Kept for the last trees, as
   * parse trees are: the rewrites of a dashboard's statements give the same trees over and over.
   */
  async deparse(tree: { statements: Record<string, unknown>[] }): Promise<string> {
    const json = JSON.stringify({ error: false, ...tree }).replace(markedInteger, '$1');
    const cached = this.deparsedTrees.get(json);
    if (cached !== undefined) {
      this.deparsedTrees.delete(json);
      this.deparsedTrees.set(json, cached);
      return cached;
    }
    const { connection, release } = await this.lease();
    let sql: string;
    try {
      const reader = await connection.runAndReadAll('SELECT json_deserialize_sql($1::JSON)', [json]);
      sql = String(reader.getRows()[0][0]);
    } finally {
      release(true);
    }
    if (json.length <= deparsedTreeMaxJson) {
      this.deparsedTrees.set(json, sql);
      if (this.deparsedTrees.size > parsedTreeEntries)
        this.deparsedTrees.delete(this.deparsedTrees.keys().next().value!);
    }
    return sql;
  }

  /** The rows of an internal query (catalog functions), as DuckDB's JS values. */
  async values(sql: string, session?: EngineSession): Promise<unknown[][]> {
    const { connection, release } = await this.lease({ session });
    let reusable = false;
    try {
      const rows = (await connection.runAndReadAll(sql)).getRows();
      reusable = true;
      return rows;
    } catch (error) {
      throw this.failure(error);
    } finally {
      // Callers read catalog functions with a SELECT; anything else leaves nothing behind.
      const select = /^\s*SELECT\b/i.test(sql);
      if (!select) this.kept.catalogMayHaveChanged();
      release(reusable && select);
    }
  }

  /**
   * The values of constant expressions (parse trees of a call's arguments, such as
   * `now() - INTERVAL 1 DAY`) as text; timestamps as UTC nanosecond text. Throws DuckDB's
   * error for an expression that is not constant.
   */
  async constantTexts(expressions: readonly Record<string, unknown>[]): Promise<Array<string | null>> {
    if (expressions.length === 0) return [];
    const tree = (await this.parseSelect('SELECT 1'))!;
    const node = tree.statements[0].node as Record<string, unknown>;
    node.select_list = expressions.map((child) => ({
      class: 'CAST',
      type: 'OPERATOR_CAST',
      alias: '',
      query_location: (child as { query_location?: unknown }).query_location,
      child,
      cast_type: { id: 'VARCHAR', type_info: null },
      try_cast: false,
    }));
    nanosecondTimestamps(tree);
    const sql = await this.deparse(tree);
    const { connection, release } = await this.lease();
    try {
      const reader = await connection.runAndReadAll(sql);
      return reader.getRows()[0].map((value) => (value === null ? null : String(value)));
    } catch (error) {
      throw this.failure(error);
    } finally {
      release(true);
    }
  }

  /**
   * Bulk ingest, within the session's transaction: runs `sqlFor(relation)`, an INSERT ... SELECT
   * FROM `relation`, over the stream's batches (see batch-insert.ts); answers the rows changed.
   */
  async insertBatches(
    session: EngineSession,
    schema: Schema,
    batches: AsyncIterable<RecordBatch>,
    sqlFor: (relation: string) => string,
  ): Promise<number> {
    const { connection } = await this.lease({ session });
    const run = async (sql: string): Promise<number> => {
      try {
        return (await connection.run(sql)).rowsChanged;
      } catch (error) {
        throw this.failure(error);
      }
    };
    // The stream's own connection is never a pooled one: it attaches a database and changes its default.
    const connect = (): Promise<EngineSession> => this.openSession();
    const target = { connection, catalog: catalogName, native: this.nativeExport, run, connect };
    try {
      return await insertBatches(target, schema, batches, sqlFor);
    } catch (error) {
      await this.checkTransaction(session, error);
      throw error;
    } finally {
      this.kept.catalogMayHaveChanged(); // a bulk ingest may create its table
    }
  }

  /** Tables and views of the user catalog. */
  async tables(): Promise<TableDescription[]> {
    const rows = await this.internalRows(
      `SELECT database_name, schema_name, table_name, 'TABLE' FROM duckdb_tables() WHERE NOT internal AND database_name = '${catalogName}'
       UNION ALL
       SELECT database_name, schema_name, view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal AND database_name = '${catalogName}'`,
    );
    return rows.map(([catalog, schema, name, type]) => ({ catalog, schema, name, type: type as 'TABLE' | 'VIEW' }));
  }

  /** Schemas of the user catalog. */
  async schemas(): Promise<string[]> {
    const rows = await this.internalRows(
      `SELECT schema_name FROM duckdb_schemas() WHERE database_name = '${catalogName}' AND NOT internal OR (database_name = '${catalogName}' AND schema_name = 'main')`,
    );
    return [...new Set(rows.map(([schema]) => schema))];
  }

  /** The Arrow schema of a table or view, with Flight SQL column metadata. */
  async tableSchema(table: TableDescription): Promise<Schema> {
    const name = [table.catalog, table.schema, table.name].map(quoteIdentifier).join('.');
    return this.withPrepared(`SELECT * FROM ${name}`, {}, async (prepared) => {
      const fields = columns(prepared).map(({ name: column, type }) => {
        const metadata = columnMetadata(type);
        metadata.set('ARROW:FLIGHT:SQL:CATALOG_NAME', table.catalog);
        metadata.set('ARROW:FLIGHT:SQL:SCHEMA_NAME', table.schema);
        metadata.set('ARROW:FLIGHT:SQL:TABLE_NAME', table.name);
        metadata.set('ARROW:FLIGHT:SQL:IS_READ_ONLY', table.type === 'VIEW' ? '1' : '0');
        return new Field(column, type ? arrowType(type) : new Null(), true, metadata);
      });
      return new Schema(fields);
    });
  }

  /**
   * Refuses new work (ENGINE_CLOSED), interrupts the statements running, waits until each has let
   * go of its connection (at most `graceMs`: a result whose consumer never resumes it holds one),
   * then releases DuckDB. Statements interrupted this way fail with ENGINE_CLOSED. Idempotent.
   */
  close(graceMs = 5000): Promise<void> {
    return (this.closing ??= this.shutdown(graceMs));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async shutdown(graceMs: number): Promise<void> {
    this.closed = true;
    for (const held of [...this.held]) held.close();
    this.pool.close();
    for (const connection of this.busy) connection.interrupt();
    if (this.busy.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.drained = resolve;
        timer = setTimeout(resolve, graceMs);
      });
      clearTimeout(timer);
    }
    this.instance.closeSync();
  }

  /** Marks a connection in use (closed() interrupts it), or refuses it when the engine has closed since. */
  private claim(connection: DuckDBConnection, giveBack: () => void): void {
    if (this.closed) {
      giveBack();
      throw engineClosed();
    }
    this.busy.add(connection);
  }

  /** A connection is no longer in use; the last one lets a pending close() go on. */
  private unclaim(connection: DuckDBConnection): void {
    this.busy.delete(connection);
    if (this.busy.size === 0) this.drained?.();
  }

  /** The error to report for a failure: the guard's stop, ENGINE_CLOSED once closing, else DuckDB's. */
  private failure(error: unknown, guard?: StatementGuard): OrreryError {
    return guard?.stopped ?? (this.closed ? engineClosed() : sqlError(error));
  }

  /** Streams the statement's batches, for each parameter row in turn. */
  private async *stream(sql: string, schema: Schema, options: RunOptions): AsyncGenerator<RecordBatch> {
    const held = options.session ? undefined : options.held?.take();
    // Outside a session the fill runs with the statement's first run, in its trip (streamResult).
    const { connection, release, setupKey } =
      held?.lease ?? (await this.lease(options.session ? options : { ...options, fill: undefined }));
    let fill = options.session || options.fill === undefined ? undefined : { connection, sql: options.fill };
    // A held statement's connection was told at its describe; told again, as its reads may be another's since.
    if (held) this.tellTailReads(connection, options.tailReads);
    const guard = new StatementGuard(connection, options.signal, options.deadline);
    let reusable = false;
    let committing: Promise<boolean> | undefined;
    try {
      const prepared =
        held?.prepared ??
        (await prepare(connection, sql).catch((error: OrreryError) => {
          throw this.failure(error, guard);
        }));
      try {
        const rowSets = Math.max(1, parameterRowCount(options.parameters));
        for (let row = 0; row < rowSets; row++) {
          guard.check();
          const bound = Boolean(options.parameters && options.parameters.numRows > 0);
          if (bound) bindRow(prepared, options.parameters!, row);
          yield* this.streamResult(prepared, schema, guard, bound, held?.known, !options.session, fill);
          fill = undefined;
        }
        reusable = prepared.statementType === StatementType.SELECT && !guard.stopped;
      } finally {
        if (!keepsCatalog.has(prepared.statementType)) this.kept.catalogMayHaveChanged();
        if (reusable && held?.keepAs !== undefined && held.lease.setupKey !== undefined)
          this.kept.put(connection, held.lease.setupKey, held.keepAs, { ...held.known, prepared });
        else prepared.destroySync();
      }
      // The transaction describeAndHold began ends with the run; a connection it stays open on is closed.
      // The read transaction commits after the stream has ended (every row is read by then), so the
      // client does not wait for it (DuckLake's COMMIT and its Postgres connection's reset); the
      // connection stays the statement's until it is done, and the next statement of the same setup
      // waits for it (ConnectionPool.finishingWith).
      if (held?.inTransaction && reusable)
        committing = connection.run('COMMIT').then(
          () => true,
          () => false,
        );
    } catch (error) {
      if (options.session) {
        guard.dispose();
        await this.checkTransaction(options.session, error);
      }
      throw error;
    } finally {
      guard.dispose();
      // A read its client gave up on ends without an error here (the consumer stopped), but the stop interrupted
      // DuckDB, which may have failed the client's transaction: its COMMIT would then answer success and keep nothing.
      if (options.session && guard.stopped) await this.checkTransaction(options.session, guard.stopped);
      // (A held statement's lease is always the pool's, with a setup key.)
      if (committing) this.pool.finishingWith(setupKey!, committing.then(release));
      else release(reusable);
    }
  }

  /** Streams one execution of a prepared statement (`bound`: with parameter values bound). */
  private async *streamResult(
    prepared: DuckDBPreparedStatement,
    schema: Schema,
    guard: StatementGuard,
    bound: boolean,
    /** What is known of a held statement already; its column types are read here once and kept with it. */
    known?: Known,
    /**
     * Whether a consumer stopping early interrupts DuckDB's work: not in a client's transaction, which the interrupt
     * would fail (DuckDB then refuses its statements, and its COMMIT commits nothing): the rest is left unread there.
     */
    halting = true,
    /** Run on the statement's connection just before its run (RunOptions.fill). */
    fill?: { readonly connection: DuckDBConnection; readonly sql: string },
  ): AsyncGenerator<RecordBatch> {
    const batchBytes = this.batchBytes;
    // Without parameters, the prepared statement's column types are its result's: the native
    // exporter runs the statement itself, its run and first batch in one trip to a worker thread
    // (at `nice`, on a thread of the statement's own).
    let types: DuckDBType[] | null = null;
    if (this.nativeExport && !bound) {
      types = known?.columnTypes !== undefined ? known.columnTypes : preparedColumnTypes(prepared);
      if (known) known.columnTypes = types;
    }
    const source =
      (types && nativeStatementBatches(prepared, schema, types, batchBytes, this.nice, fill)) ||
      (await this.resultBatches(prepared, schema, guard, fill));
    // Ask for the next batch before handing this one on, so DuckDB works while the consumer
    // sends. It is awaited only later: until then its failure must not count as an unhandled
    // rejection (which ends the process).
    const ahead = (): Promise<RecordBatch | null> => {
      const next = source.next();
      next.catch(() => {});
      return next;
    };
    let pending: Promise<RecordBatch | null> | null = ahead();
    try {
      for (;;) {
        const batch = await pending.catch((error) => {
          throw this.failure(error, guard);
        });
        pending = null;
        if (!batch) break;
        pending = ahead();
        yield batch;
        guard.check();
      }
    } finally {
      if (pending) {
        // The consumer stopped early (or a batch failed): stop DuckDB and let the batch in
        // flight settle before closing. In a client's transaction, DuckDB is not interrupted: the batch in flight
        // ends at DuckDB's next chunk instead of filling up.
        if (halting) guard.halt();
        else source.stop?.();
        await pending.catch(() => null);
      }
      source.close();
    }
  }

  /** Runs the statement through @duckdb/node-api and reads its result natively or, failing that, in JavaScript. */
  private async resultBatches(
    prepared: DuckDBPreparedStatement,
    schema: Schema,
    guard: StatementGuard,
    fill?: { readonly connection: DuckDBConnection; readonly sql: string },
  ): Promise<BatchSource> {
    if (fill)
      await fill.connection.run(fill.sql).catch((error) => {
        throw this.failure(error, guard);
      });
    const result = await prepared.stream().catch((error) => {
      throw this.failure(error, guard);
    });
    const types = columnTypesOf(result);
    return (
      (this.nativeExport && nativeBatches(result, schema, types, this.batchBytes)) ||
      chunkBatches(result, schema, types, this.batchBytes, this.nativeExport)
    );
  }

  private async withPrepared<T>(
    sql: string,
    options: Pick<RunOptions, 'setup' | 'fill' | 'clock' | 'session' | 'signal' | 'deadline' | 'ownTable'>,
    use: (prepared: DuckDBPreparedStatement, guard: StatementGuard, connection: DuckDBConnection) => Promise<T>,
  ): Promise<T> {
    const { connection, release } = await this.lease(options);
    const guard = new StatementGuard(connection, options.signal, options.deadline);
    let reusable = false;
    try {
      const prepared = await prepare(connection, sql);
      try {
        guard.check();
        const result = await use(prepared, guard, connection);
        reusable = prepared.statementType === StatementType.SELECT && !guard.stopped;
        return result;
      } catch (error) {
        throw this.failure(error);
      } finally {
        if (!options.ownTable && !keepsCatalog.has(prepared.statementType)) this.kept.catalogMayHaveChanged();
        prepared.destroySync();
      }
    } catch (error) {
      const reported = this.failure(error, guard);
      if (options.session) {
        guard.dispose();
        await this.checkTransaction(options.session, reported);
      }
      throw reported;
    } finally {
      guard.dispose();
      release(reusable);
    }
  }

  /**
   * After a statement failed on a session: fails the session (EngineSession.fail) when DuckDB failed its
   * transaction, which then refuses every statement and whose COMMIT would roll back and answer success.
   */
  private async checkTransaction(session: EngineSession, error: unknown): Promise<void> {
    if (session.isClosed || session.failure) return;
    await session.connection.run('SELECT 1').catch(() => session.fail(`a statement of it failed: ${messageOf(error)}`));
  }

  private async internalRows(sql: string): Promise<string[][]> {
    const { connection, release } = await this.lease();
    try {
      const reader = await connection.runAndReadAll(sql);
      return reader.getRows().map((row) => row.map((v) => String(v)));
    } finally {
      release(true);
    }
  }

  /** A connection held for a transaction (see EngineSession): its own, never one of the pool's. */
  async openSession(): Promise<EngineSession> {
    if (this.closed) throw engineClosed();
    const connection = await this.instance.connect();
    this.claim(connection, () => connection.closeSync());
    const session = new EngineSession(connection, (closing) => {
      closing.closeSync();
      this.unclaim(closing);
      this.kept.catalogMayHaveChanged(); // what the transaction changed is seen by all from now
    });
    try {
      await connection.run(`USE ${catalogName}`);
    } catch (error) {
      session.close();
      throw this.failure(error);
    }
    return session;
  }

  /**
   * The session's connection (with the setup run on it), or one of the pool's with exactly that setup; either
   * with `fill` run on it then (RunOptions.fill).
   */
  private async lease(
    options: Pick<RunOptions, 'setup' | 'session' | 'fill' | 'tailReads' | 'clock'> = {},
  ): Promise<Lease> {
    const { setup = [], session, fill, tailReads, clock } = options;
    if (!session) {
      if (this.closed) throw engineClosed();
      const { connection, key } = await this.pool.acquire(setup).catch((error) => {
        throw this.failure(error);
      });
      this.claim(connection, () => this.pool.release(connection, key, false));
      const release = (reusable: boolean): void => {
        this.unclaim(connection);
        this.pool.release(connection, key, reusable && !this.closed);
      };
      try {
        this.tellTailReads(connection, tailReads);
        if (fill !== undefined) await connection.run(fill);
        await this.setClock(connection, clock);
      } catch (error) {
        release(false);
        throw this.failure(error);
      }
      return { connection, setupKey: key, release };
    }
    if (session.isClosed) throw engineErrors.error('TRANSACTION_ENDED', 'the transaction has ended');
    if (session.failure) throw session.failure;
    try {
      this.tellTailReads(session.connection, tailReads);
      for (const statement of [...setup, ...(fill === undefined ? [] : [fill])])
        await session.connection.run(statement);
      await this.setClock(session.connection, clock);
    } catch (error) {
      throw this.failure(error);
    }
    return { connection: session.connection, release: () => {} };
  }

  /** Tells a connection which rows of kept tails its next statements read (RunOptions.tailReads). */
  private tellTailReads(connection: DuckDBConnection, reads: ReadonlyMap<string, number> | undefined): void {
    if (reads && this.tailRowsInstance !== undefined)
      nativeTailRows()?.setTailReads(
        connectionHandle(connection),
        this.tailRowsInstance,
        [...reads.keys()],
        [...reads.values()],
      );
  }

  /** A ring of kept tails (its database) was made: statements told to read its rows may (see forgetTailRing). */
  tailRingMade(ring: string): void {
    if (this.tailRows) nativeTailRows()?.tailRingMade(ring);
  }

  /** A row of a ring of kept tails is about to be deleted: a statement told to read it fails (namesDroppedTail) from now on. */
  tailRowGone(ring: string, id: number): void {
    if (this.tailRows) nativeTailRows()?.tailRowGone(ring, id);
  }

  /** A ring of kept tails (its database) was dropped: a statement told to read it fails from now on, and what tailRowGone kept of it goes. */
  forgetTailRing(ring: string): void {
    if (this.tailRows) nativeTailRows()?.forgetTailRing(ring);
  }

  /**
   * Sets a connection's fixedClockVariable to a statement's fixed clock, or unsets it where an earlier statement set
   * it: a pooled connection goes on to other statements, and a clock left fixed would be theirs (a DuckDB call only
   * then, or for a statement whose clock is fixed).
   */
  private async setClock(connection: DuckDBConnection, clock: string | undefined): Promise<void> {
    if (clock !== undefined) {
      if (!clockText.test(clock)) throw new Error(`not a fixed clock: ${clock}`);
      this.clocked.add(connection);
      await connection.run(`SET VARIABLE ${fixedClockVariable} = TIMESTAMP_NS '${clock}'`);
    } else if (this.clocked.has(connection)) {
      await connection.run(`RESET VARIABLE ${fixedClockVariable}`);
      this.clocked.delete(connection);
    }
  }
}

// Integers past 2^53 (literals, positions) would lose digits in JSON.parse: they stay text,
// marked, in a parse tree, and become numbers again when a tree is turned back into SQL.
const bigIntegerMark = '#orrery-integer#';
const bareBigInteger = /"(?:[^"\\]|\\.)*"|(?<![\d.])-?\d{16,}(?![\d.eE])/g;
const markedInteger = new RegExp(`"${bigIntegerMark}(-?\\d+)"`, 'g');

function markBigIntegers(json: string): string {
  return json.replace(bareBigInteger, (token) => (token.startsWith('"') ? token : `"${bigIntegerMark}${token}"`));
}

/**
 * Batches converted from DuckDB chunks in JavaScript: any column type. `useNative`: the native
 * module may be asked for the error a result ended with.
 */
function chunkBatches(
  result: DuckDBResult,
  schema: Schema,
  types: DuckDBType[],
  batchBytes: number,
  useNative: boolean,
): BatchSource {
  const converter = new ChunkConverter(schema, types, batchBytes);
  let done = false;
  let rows = 0;
  return {
    async next() {
      while (!done) {
        const chunk = await result.fetchChunk();
        if (!chunk || chunk.rowCount === 0) {
          done = true;
          const failure = resultError(result, rows, useNative);
          if (failure) throw new DuckDBResultFailure(failure.type, failure.message);
        } else {
          rows += chunk.rowCount;
          const batch = converter.add(chunk.chunk, chunk.rowCount);
          if (batch) return batch;
        }
      }
      return converter.flush();
    },
    close() {},
  };
}

async function loadExtension(connection: DuckDBConnection, file: string): Promise<void> {
  try {
    await connection.run(`LOAD '${file.replaceAll("'", "''")}'`);
  } catch (error) {
    throw engineErrors.error(
      'EXTENSION_LOAD_FAILED',
      `cannot load the DuckDB extension ${file}: ${(error as Error).message}`,
    );
  }
}

async function createSecret(connection: DuckDBConnection, statement: string): Promise<void> {
  try {
    await connection.run(statement);
  } catch (error) {
    // DuckDB's message may quote the statement, credentials included: only its first words are kept.
    const reason = (error as Error).message.split('\n')[0].replace(/'[^']*'/g, "'…'");
    throw engineErrors.error('STORE_SECRET_FAILED', `DuckDB refused the object store's S3 secret: ${reason}`);
  }
}

async function attach(connection: DuckDBConnection, statement: string): Promise<void> {
  try {
    await connection.run(statement);
  } catch (error) {
    throw engineErrors.error(
      'CATALOG_ATTACH_FAILED',
      `cannot attach the DuckLake catalog: ${(error as Error).message}`,
    );
  }
}

async function prepare(connection: DuckDBConnection, sql: string): Promise<DuckDBPreparedStatement> {
  try {
    return await connection.prepare(sql);
  } catch (error) {
    throw sqlError(error);
  }
}

function columns(prepared: DuckDBPreparedStatement): Array<{ name: string; type: DuckDBType | null }> {
  const out: Array<{ name: string; type: DuckDBType | null }> = [];
  for (let i = 0; i < prepared.columnCount; i++) {
    out.push({
      name: prepared.columnName(i),
      type: prepared.columnTypeId(i) === DuckDBTypeId.INVALID ? null : prepared.columnType(i),
    });
  }
  return out;
}

type DescribedSchemas = Pick<StatementDescription, 'schema' | 'parameterSchema'>;

/**
 * Schemas of prepared statements by what they are made of (column names, DuckDB types, parameter
 * types), least recently used first: statements of the same shape share one pair of Schema
 * objects, so their wire encoding (kept per Schema object by wire/ipc) is made once, not once per
 * statement (#10: a measurable share of a small statement's CPU). Schemas are never modified
 * after they are made (schemaForClient and the like make new ones).
 */
const describedSchemas = new Map<string, DescribedSchemas>();
const describedSchemaEntries = 256;
/** A longer description (an ENUM of many members, a wide table) is built each time, not kept. */
const describedSchemaMaxKey = 8 * 1024;

function describePrepared(prepared: DuckDBPreparedStatement, typeOptions: ArrowTypeOptions): StatementDescription {
  const statementType = prepared.statementType;
  const returnsRows = rowReturning.has(statementType);
  const resultColumns = columns(prepared);
  const parameterTypes: Array<DuckDBType | null> = [];
  for (let i = 1; i <= prepared.parameterCount; i++) {
    const typed =
      prepared.parameterTypeId(i) !== DuckDBTypeId.INVALID && prepared.parameterTypeId(i) !== DuckDBTypeId.ANY;
    parameterTypes.push(typed ? prepared.parameterType(i) : null);
  }
  // Dictionaries are numbered per statement: those schemas are not shared.
  const key = typeOptions.dictionaryIds ? undefined : schemasKey(resultColumns, parameterTypes);
  let schemas = key === undefined ? undefined : describedSchemas.get(key);
  if (schemas) {
    describedSchemas.delete(key!);
  } else {
    const fields = resultColumns.map(
      ({ name, type }) => new Field(name, type ? arrowType(type, typeOptions) : new Null(), true, columnMetadata(type)),
    );
    const parameters = parameterTypes.map(
      (type, i) => new Field(`$${i + 1}`, type ? arrowType(type) : new Utf8(), true),
    );
    schemas = { schema: new Schema(fields), parameterSchema: new Schema(parameters) };
  }
  if (key !== undefined) {
    describedSchemas.set(key, schemas);
    if (describedSchemas.size > describedSchemaEntries) describedSchemas.delete(describedSchemas.keys().next().value!);
  }
  return { statementType, returnsRows, ...schemas };
}

/** What a statement's schemas are made of, as text; undefined when too long to keep. */
function schemasKey(
  resultColumns: ReadonlyArray<{ name: string; type: DuckDBType | null }>,
  parameterTypes: ReadonlyArray<DuckDBType | null>,
): string | undefined {
  const key = JSON.stringify([
    resultColumns.map(({ name, type }) => [name, type?.toJson() ?? null]),
    parameterTypes.map((type) => type?.toJson() ?? null),
  ]);
  return key.length <= describedSchemaMaxKey ? key : undefined;
}

/** A prepared statement's column types, or null when one is not known before the run. */
function preparedColumnTypes(prepared: DuckDBPreparedStatement): DuckDBType[] | null {
  for (let i = 0; i < prepared.columnCount; i++) if (prepared.columnTypeId(i) === DuckDBTypeId.INVALID) return null;
  return columnTypesOf(prepared);
}

function columnTypesOf(result: { columnCount: number; columnType(i: number): DuckDBType }): DuckDBType[] {
  return Array.from({ length: result.columnCount }, (_, i) => result.columnType(i));
}

/** Flight SQL column metadata for a DuckDB type. */
function columnMetadata(type: DuckDBType | null): Map<string, string> {
  const metadata = new Map<string, string>();
  if (!type) return metadata;
  metadata.set('ARROW:FLIGHT:SQL:TYPE_NAME', type.toString());
  if (type.typeId === DuckDBTypeId.DECIMAL) {
    const { width, scale } = type as unknown as { width: number; scale: number };
    metadata.set('ARROW:FLIGHT:SQL:PRECISION', String(width));
    metadata.set('ARROW:FLIGHT:SQL:SCALE', String(scale));
  }
  metadata.set('ARROW:FLIGHT:SQL:IS_CASE_SENSITIVE', type.typeId === DuckDBTypeId.VARCHAR ? '1' : '0');
  metadata.set('ARROW:FLIGHT:SQL:IS_SEARCHABLE', '1');
  metadata.set('ARROW:FLIGHT:SQL:IS_AUTO_INCREMENT', '0');
  return metadata;
}

/** Double-quotes an identifier for DuckDB. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
