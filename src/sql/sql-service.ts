import { Field, Int32, Int64, Null, Schema, TimestampNanosecond, Utf8, type RecordBatch } from 'apache-arrow';
import type { Keyring, Principal } from '../auth/index.js';
import { liveSteps, whileLive } from '../calls/index.js';
import {
  StatementType,
  isFileReadFailure,
  quoteIdentifier,
  type DuckDBEngine,
  type EngineSession,
  type RunOptions,
  type StatementDescription,
} from '../engine/index.js';
import {
  attachesDatabases,
  ingest,
  lakeTable,
  namesLakeInternals,
  reachesLakeIndirectly,
  tableColumnsSelect,
  type SeriesTable,
  type SeriesTables,
} from '../tables/index.js';
import {
  batchFromRows,
  type CallContext,
  type CancelResult,
  type DbSchemaInfo,
  type IngestRequest,
  type IngestStream,
  type FlightSqlBackend,
  type PreparedStatementInfo,
  type QueryResult,
  type SqlInfoValues,
  type Statement,
  type TableInfo,
  type XdbcTypeInfo,
} from '../flight/index.js';
import {
  compatibilityTableFunctions,
  denyManagementFunctions,
  emptyRelation,
  orreryFunctionKind,
  quoteLiteral,
  orreryFunctionNames,
  type ViewSet,
} from '../views/index.js';
import { functionSetup, isLakehouseFunction, viewSetsNamedBy, viewsReadBy } from './lakehouse-functions.js';
import { publicationTables } from '../resources/index.js';
import { referencedViews, scopeOf, viewSetup, type Lakehouse, type PartitionFilter } from './lakehouse-session.js';
import type { Statement as ResourceStatement } from './partition-pruning.js';
import { searchesText } from './partition-pruning.js';
import { keepItemNames, parsedItems } from './item-names.js';
import { QueryLanes } from './query-lanes.js';
import { relationSources } from './relation-sources.js';
import { resourceReaders, type ExplainedReads } from './resource-reads.js';
import { seriesColumnReads, seriesColumnViews, type SeriesColumnRead } from './series-column-reads.js';
import { seriesTextRead } from './series-text-reads.js';
import { DdlError } from './ddl-errors.js';
import { sqlErrors } from './errors.js';
import { messageOf, type OrreryError } from '../errors/index.js';
import { parseDdl, type DdlStatement } from './ddl-parser.js';
import { permissionDenied, type DdlService } from './ddl-service.js';
import { procedureOf, procedureResult, runProcedure, type ProcedureContext } from './procedures.js';
import {
  baseTables,
  jobsRelation,
  jobsUpdate,
  namesDroppedTail,
  snouttimeNames,
  type RollupReadPoint,
  type Rollups,
} from '../rollups/index.js';
import { checkUnchangedRollups, rollupReadSetup } from './rollup-reads.js';
import { changesStartupObject } from './engine-objects.js';
import { macroDefaultProblem } from './macro-defaults.js';
import {
  isColumnsListing,
  isTablesListing,
  isTablesShow,
  nanosecondTimestamps,
  scanTimeBounds,
  queryShape,
  substituteListings,
  type QueryShape,
  type RelationRef,
  type TableFunctionCall,
} from '../engine/index.js';
import { partitionKeysIn } from '../lakehouse/index.js';
import { sqlInfo } from './sql-info-values.js';
import { readerError } from './reader-errors.js';
import { readerFunctionNames } from './reader-functions.js';
import {
  adminFileAccess,
  changesSecrets,
  checkReaderQuery,
  checkSingleStatement,
  fileRelation,
  type ReaderCatalog,
} from './statement-policy.js';
import { xdbcTypes } from './xdbc-types.js';
import {
  inClientTransaction,
  inTransaction,
  liveCall,
  type Live,
  microsecondTimeColumns,
  namedTables,
  planSeriesWrite,
  seriesReadSetup,
  type SeriesWrite,
} from './series-plans.js';
import { Transactions, savepointRefusal } from './transactions.js';
import { StatementLimits, defaultQueryLimits, type QueryLimits, type StatementRun } from './statement-limits.js';
import type { OrreryMetrics } from '../metrics/index.js';
import type { Log } from '../app.js';
import { PlanCache } from './plan-cache.js';
import { dataFusionNames, withProvenance } from './result-schemas.js';

/** The temporary views information_schema.tables (and SHOW TABLES) and .columns read instead of DuckDB's catalog. */
const tablesListing = '__orrery_tables';
const columnsListing = '__orrery_columns';

/** DataFusion's information_schema.columns columns, as DuckDB types. */
const columnsListingColumns = [
  ['table_catalog', 'VARCHAR'],
  ['table_schema', 'VARCHAR'],
  ['table_name', 'VARCHAR'],
  ['column_name', 'VARCHAR'],
  ['ordinal_position', 'UBIGINT'],
  ['column_default', 'VARCHAR'],
  ['is_nullable', 'VARCHAR'],
  ['data_type', 'VARCHAR'],
  ['character_maximum_length', 'UBIGINT'],
  ['character_octet_length', 'UBIGINT'],
  ['numeric_precision', 'UBIGINT'],
  ['numeric_precision_radix', 'UBIGINT'],
  ['numeric_scale', 'UBIGINT'],
  ['datetime_precision', 'UBIGINT'],
  ['interval_type', 'VARCHAR'],
] as const;

/** The table functions a key that is not an admin may call (a set built once: each reader statement is checked against it). */
const readerTableFunctions: ReadonlySet<string> = new Set([
  ...orreryFunctionNames('table'),
  ...compatibilityTableFunctions,
]);

/** The rows every admin procedure streams: when, and what happened. */
const progressSchema = new Schema([
  new Field('time', new TimestampNanosecond('UTC'), false),
  new Field('msg', new Utf8(), false),
]);

/** What a CREATE or DROP MATERIALIZED VIEW answers: one row. */
/**
 * How many times a statement runs again after partition files it read were contained: DuckDB names
 * one unreadable file per failure, so each run may meet the next.
 */
const maxReruns = 3;

const ddlSchema = new Schema([new Field('view_set_name', new Utf8(), false), new Field('action', new Utf8(), false)]);

/** What a write to a series table answers when run as a query: the rows changed, as DuckDB's DML does. */
const countSchema = new Schema([new Field('Count', new Int64(), false)]);

/** How a statement runs: on DuckDB, as an admin procedure, or as view set DDL, the last two run by Orrery itself. */
type Plan =
  | EnginePlan
  | { kind: 'procedure'; call: TableFunctionCall; schema: Schema; scalar?: boolean }
  | { kind: 'ddl'; statement: DdlStatement }
  | { kind: 'series'; write: SeriesWrite; session?: EngineSession };

/** A statement DuckDB runs: its text as rewritten, what it answers, its setup (temporary views) and run options. */
interface EnginePlan {
  readonly kind: 'engine';
  readonly sql: string;
  readonly description: StatementDescription;
  readonly options: RunOptions;
  /** A latest-n top-N read bounded by time (see TopNBound): its n, which its run must give, or it runs again unbounded. */
  readonly boundedRows?: number;
  /** What the deny rules judged (checkDenied); undefined for a statement that only manages them (isRuleManagementAlone). */
  readonly judged?: DenyJudged;
}

/** The text a deny rule was checked against and what it reads (null: a statement DuckDB does not parse as SELECT). */
interface DenyJudged {
  readonly query: string;
  readonly shape: QueryShape | null;
}

/** What CreatePreparedStatement answered, remembered (PlanCache.remember) with what the deny rules judged. */
interface PreparedAnswer {
  readonly info: PreparedStatementInfo;
  readonly judged?: DenyJudged;
}

/** The lakehouse plus what its admin procedures and DDL need. */
export type LakehouseBackend = Omit<ProcedureContext, 'lakehouse' | 'engine'> & {
  readonly lakehouse: Lakehouse;
  readonly ddl: DdlService;
};

/**
 * What statements mean in Orrery: keys decide who may run what; admin procedures run here;
 * everything else runs on DuckDB with the view sets it reads set up for the caller's
 * audiences. This is the backend the Flight SQL front end talks to.
 */
export class SqlService implements FlightSqlBackend<Principal> {
  /** The functions non-admins may call, worked out once from the engine's own list. */
  private readerFunctions: Promise<ReadonlySet<string>> | undefined;
  /** Flight SQL transactions, offered where series tables are (there is something to commit). */
  readonly transactions?: Transactions;
  private readonly limits: StatementLimits;
  private readonly metrics?: OrreryMetrics;
  private readonly log: Log;
  /** The kinds of failure of Rollups.prime logged so far (see primeRollups). */
  private readonly primeFailures = new Set<string>();
  private readonly lanes: QueryLanes;
  /** Statements run in orrery.main: Flight sessions accept those and answer them. */
  readonly sessionOptions = { catalog: 'orrery', schema: 'main' } as const;
  /** DDL statements and procedures run here (see describedUnder). */
  private adminChanges = 0;
  /** Plans of GetFlightInfo kept for their DoGet, with the statement DuckDB prepared for it. */
  private readonly plans = new PlanCache<EnginePlan, PreparedAnswer>({ dispose: (plan) => plan.options.held?.close() });

  constructor(
    private readonly keyring: Keyring,
    private readonly engine: DuckDBEngine,
    private readonly serverVersion: string,
    private readonly backend?: LakehouseBackend,
    options: {
      limits?: QueryLimits;
      metrics?: OrreryMetrics;
      /** The heavy lane's engine, made when first needed (without it, one lane). */
      heavyEngine?: () => Promise<DuckDBEngine>;
      /** The server's log (failures of work a client is not waiting for). */
      log?: Log;
    } = {},
  ) {
    this.log = options.log ?? (() => {});
    const limits = options.limits ?? defaultQueryLimits;
    this.metrics = options.metrics;
    this.limits = new StatementLimits(limits, options.metrics);
    this.lanes = new QueryLanes(
      engine,
      options.heavyEngine,
      limits.lanes,
      limits.admission.runningPerKey,
      options.metrics,
    );
    if (backend?.lakehouse.tables) this.transactions = new Transactions(engine);
  }

  private get tables(): SeriesTables | undefined {
    return this.backend?.lakehouse.tables;
  }

  /** Rolls back open transactions. Idempotent. */
  close(): void {
    this.transactions?.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.close();
    return Promise.resolve();
  }

  private get lakehouse(): Lakehouse | undefined {
    return this.backend?.lakehouse;
  }

  async authenticateBasic(username: string, password: string): Promise<{ principal: Principal; token: string }> {
    const principal = this.keyring.byNameAndKey(username, password);
    if (!principal) throw sqlErrors.error('KEY_REFUSED', 'invalid user name or key');
    return { principal, token: password };
  }

  async authenticateBearer(token: string): Promise<Principal> {
    const principal = this.keyring.byKey(token);
    if (!principal) throw sqlErrors.error('KEY_REFUSED', 'invalid key');
    return principal;
  }

  async describeQuery(ctx: CallContext<Principal>, statement: Statement): Promise<Schema> {
    return this.limited(ctx, statement, false, async (run) => planSchema(await this.plan(ctx, statement, run)));
  }

  /** The plan GetFlightInfo kept for this DoGet, with this call's signal and deadline. */
  private keptPlan(ctx: CallContext<Principal>, statement: Statement, run: StatementRun): EnginePlan | undefined {
    if (statement.parameters || statement.transactionId) return undefined;
    const plan = this.plans.take(statement.planId, ctx, statement.query);
    return plan && { ...plan, options: { ...plan.options, signal: ctx.signal, deadline: run.deadline } };
  }

  /**
   * GetFlightInfo: the schema, and for a statement DuckDB runs (no parameters, no transaction)
   * the id of its plan, kept for the DoGet that follows.
   */
  async planQuery(ctx: CallContext<Principal>, statement: Statement): Promise<{ schema: Schema; planId?: Uint8Array }> {
    const keepable = !statement.parameters && !statement.transactionId;
    try {
      return await this.limited(ctx, statement, false, async (run) => {
        const under = this.describedUnder();
        const prepared = keepable ? this.plans.reuse(ctx, statement.query) : undefined;
        const plan = prepared ?? (await this.plan(ctx, statement, run, keepable ? 'transaction' : false, true));
        if (plan.kind !== 'engine') return { schema: planSchema(plan) };
        const keep = keepable && plan.description.returnsRows;
        if (!keep) plan.options.held?.close();
        // What CreatePreparedStatement answers for this text next time: as this plan found it.
        if (keep && !prepared && statement.prepared)
          this.plans.refresh(ctx, statement.query, preparedAnswer(plan), under);
        return {
          schema: plan.description.schema,
          planId: keep ? this.plans.put(ctx, statement.query, plan) : undefined,
        };
      });
    } catch (error) {
      // Refused or failed: the text is planned again (and refused there) when it is prepared again.
      if (keepable && statement.prepared) this.plans.forget(ctx, statement.query);
      throw error;
    }
  }

  /** DoGet; a statement whose ticket names a plan can be stopped by CancelFlightInfo while it runs. */
  async executeQuery(call: CallContext<Principal>, statement: Statement): Promise<QueryResult> {
    const redeemed = this.plans.redeem(statement.planId, call);
    call.signal.addEventListener('abort', redeemed.end, { once: true });
    try {
      const result = await this.runQuery({ ...call, signal: redeemed.signal }, statement);
      return { ...result, batches: untilDone(result.batches, redeemed.end) };
    } catch (error) {
      redeemed.end();
      throw error;
    }
  }

  /** CancelFlightInfo / CancelQuery of a statement whose ticket names a plan of the caller's. */
  async cancelStatement(ctx: CallContext<Principal>, statement: Statement): Promise<CancelResult> {
    return this.plans.cancel(statement.planId, ctx);
  }

  private async runQuery(ctx: CallContext<Principal>, statement: Statement, reruns = 0): Promise<QueryResult> {
    const run = await this.limits.begin(ctx.principal.name, ctx, true);
    try {
      const kept = reruns > 0 ? undefined : this.keptPlan(ctx, statement, run);
      const plan = kept ?? (await this.plan(ctx, statement, run, false, reruns === 0));
      const call = { signal: ctx.signal, deadline: run.deadline };
      // What changes state commits only while its client is there (whileLive), each step as the client reads it.
      const live = liveCall(call);
      if (plan.kind === 'procedure')
        return {
          schema: plan.schema,
          batches: run.track(liveSteps(live, this.progress(plan, ctx.principal.name))),
          deadline: run.deadline,
        };
      if (plan.kind === 'ddl')
        return {
          schema: ddlSchema,
          batches: run.track(liveSteps(live, this.ddl(plan.statement, ctx.principal))),
          deadline: run.deadline,
        };
      if (plan.kind === 'series') {
        const { write, session } = plan;
        const written = (): Promise<number> => this.seriesWrite(write, session, call);
        const counted = async function* (): AsyncGenerator<RecordBatch> {
          yield batchFromRows(countSchema, [[BigInt(await written())]]);
        };
        return { schema: countSchema, batches: run.track(liveSteps(live, counted())), deadline: run.deadline };
      }
      // Planned again: over every partition (never bounded, see TopNBound).
      const rerun = async (): Promise<AsyncIterable<RecordBatch>> => {
        const planned = await this.plan(ctx, statement, run);
        if (planned.kind !== 'engine') throw new Error(`a statement planned for DuckDB was planned as ${planned.kind}`);
        return this.engineBatches(ctx, planned);
      };
      const first = await this.engineBatches(ctx, plan);
      const checked =
        plan.boundedRows === undefined
          ? first
          : boundedOrAgain(first, Math.min(plan.boundedRows, ctx.options.limit ?? Infinity), rerun);
      const contained = this.containedBatches(checked, rerun, reruns);
      const batches = ctx.principal.admin ? contained : this.guardedBatches(statement, contained);
      return { schema: plan.description.schema, batches: run.track(batches), deadline: run.deadline };
    } catch (error) {
      let failure = error;
      try {
        if (reruns < maxReruns && (await this.contained(error))) {
          run.end();
          return this.runQuery(ctx, statement, reruns + 1);
        }
      } catch (containing) {
        failure = containing;
      }
      const reported = this.reported(ctx, statement, failure);
      run.end(reported);
      throw reported;
    }
  }

  async executeUpdate(ctx: CallContext<Principal>, statement: Statement): Promise<number> {
    return this.limited(ctx, statement, true, async (run) => {
      const plan = await this.plan(ctx, statement, run);
      const call = { signal: ctx.signal, deadline: run.deadline };
      // What it changes commits only while its client is there (whileLive).
      return whileLive(liveCall(call), async () => {
        if (plan.kind === 'engine') {
          const { session } = plan.options;
          const write = (): Promise<number> =>
            this.engine.execute(plan.sql, { ...plan.options, committedIfLive: true });
          return session ? inClientTransaction(session, write) : write();
        }
        if (plan.kind === 'series') return this.seriesWrite(plan.write, plan.session, call);
        let rows = 0;
        const batches =
          plan.kind === 'ddl' ? this.ddl(plan.statement, ctx.principal) : this.progress(plan, ctx.principal.name);
        for await (const batch of batches) rows += batch.numRows;
        return rows;
      });
    });
  }

  /**
   * Runs a write into a series table; once it has committed (not in a client's transaction, whose writes no other
   * statement sees yet), makes its rollups' tails for the lake's new snapshot (Rollups.prime), so the reads that
   * follow it scan them instead of aggregating the rows it wrote. The write stands whether or not that succeeds.
   */
  private async seriesWrite(write: SeriesWrite, session: EngineSession | undefined, call: Live): Promise<number> {
    const rows = await (session
      ? inClientTransaction(session, () => write.run(session, call))
      : write.run(undefined, call));
    if (!session && write.changes) await this.primeRollups(write.changes);
    return rows;
  }

  /**
   * Rollups.prime after a write into series table `table` committed, before the writer is answered (answered first,
   * the tails made after slowed the statements that followed, bench/rollups/PROFILE.md). A failure leaves the write as
   * it is (its reads merge the rows it wrote) and is logged, once per kind of failure: a failing prime would fail at
   * every write.
   */
  private async primeRollups(table: string): Promise<void> {
    try {
      await this.lakehouse?.rollups?.prime(table);
    } catch (error) {
      const kind = (error as Partial<OrreryError>).code ?? messageOf(error).split(':')[0];
      if (this.primeFailures.has(kind)) return;
      this.primeFailures.add(kind);
      this.log(
        'warn',
        `rollups: the kept tails of ${table}'s rollups were not made after a write (their reads merge its rows instead; told once per kind of failure): ${messageOf(error)}`,
      );
    }
  }

  /**
   * CreatePreparedStatement. A query without parameters keeps its plan (and DuckDB's prepared
   * statement) for the prepared statement's GetFlightInfo that follows: the JDBC driver sends
   * every statement as CreatePreparedStatement, GetFlightInfo, DoGet, and it is planned once.
   * The same text prepared again by the same key with the same headers is answered as it was
   * the last time (PlanCache.remember), without planning, though admitted within the key's limits
   * and checked against the deny rules as then: its GetFlightInfo plans it, with every check, as a
   * statement's GetFlightInfo does for the other clients.
   */
  async prepare(ctx: CallContext<Principal>, statement: Statement): Promise<PreparedStatementInfo> {
    const keepable = !statement.parameters && !statement.transactionId;
    return this.limited(ctx, statement, false, async (run) => {
      // Read once the statement has its slot, not before: an answer remembered before a change made while it waited
      // would match what was read then. And before planning: a change meanwhile leaves the description unanswered
      // next time.
      const under = this.describedUnder();
      const known = keepable ? this.plans.recall(ctx, statement.query, under) : undefined;
      if (known) {
        // The rules as they are now (another server's new rule included), on what the statement reads now.
        if (known.judged) await this.checkDenied(ctx, { query: known.judged.query }, known.judged.shape);
        return known.info;
      }
      const plan = await this.plan(ctx, statement, run, keepable);
      if (plan.kind === 'engine') {
        const { returnsRows, parameterSchema } = plan.description;
        if (keepable && returnsRows && parameterSchema.fields.length === 0) {
          this.plans.keep(ctx, statement.query, plan);
          this.plans.remember(ctx, statement.query, preparedAnswer(plan), under);
        } else plan.options.held?.close();
      }
      if (plan.kind === 'procedure')
        return { datasetSchema: plan.schema, parameterSchema: new Schema([]), isUpdate: false };
      if (plan.kind === 'ddl') return { datasetSchema: ddlSchema, parameterSchema: new Schema([]), isUpdate: false };
      if (plan.kind === 'series') {
        const { sql, setup, parameterTypes } = plan.write;
        const parameterSchema = parameterTypes
          ? new Schema(
              (await this.engine.describe(parameterTypes)).schema.fields.map(
                (f, i) => new Field(`$${i + 1}`, f.type, true),
              ),
            )
          : sql
            ? (await this.engine.describe(sql, { setup, session: plan.session })).parameterSchema
            : new Schema([]);
        return { datasetSchema: countSchema, parameterSchema, isUpdate: true };
      }
      return preparedQuery(plan);
    });
  }

  /** ClosePreparedStatement: a plan CreatePreparedStatement kept for the statement's GetFlightInfo is let go. */
  async closePrepared(ctx: CallContext<Principal>, statement: Statement): Promise<void> {
    if (!statement.parameters && !statement.transactionId) this.plans.drop(ctx, statement.query);
  }

  /** CommandStatementIngest into a series table, in the client's transaction or one of its own. */
  async ingest(ctx: CallContext<Principal>, request: IngestRequest, data: IngestStream): Promise<number> {
    const tables = this.tables;
    if (!tables)
      throw sqlErrors.error(
        'SERIES_TABLES_UNAVAILABLE',
        'bulk ingestion needs series tables, which this server runs without (see its start-up log)',
      );
    if (request.temporary)
      throw sqlErrors.error(
        'INGEST_TARGET_INVALID',
        'ingest: temporary tables are not supported; ingest into a series table',
      );
    if ((request.catalog ?? 'orrery') !== 'orrery' || (request.schema ?? 'main') !== 'main') {
      throw sqlErrors.error(
        'INGEST_TARGET_INVALID',
        `ingest: series tables live in orrery.main, not ${request.catalog ?? 'orrery'}.${request.schema ?? 'main'}`,
      );
    }
    if (!request.table) throw sqlErrors.error('INGEST_TARGET_INVALID', 'ingest: no table named');
    const internal = namesLakeInternals(request.table);
    if (internal)
      throw sqlErrors.error(
        'LAKE_INTERNALS_DENIED',
        `permission denied: '${internal}' is internal to Orrery's series tables`,
      );
    await this.checkDenied(ctx, { query: `INSERT INTO ${quoteIdentifier(request.table)} /* bulk ingest */` }, null);
    const session =
      request.transactionId && this.transactions ? this.transactions.session(ctx, request.transactionId) : undefined;
    const { principal } = ctx;
    const writer = { admin: principal.admin, audience: principal.audiences[0] ?? 'public' };
    const mode = { ifNotExist: request.ifNotExist, ifExists: request.ifExists };
    const rows = await whileLive(liveCall({ signal: ctx.signal }), () =>
      inTransaction(this.engine, session, (s) => ingest(this.engine, tables, writer, request.table, mode, data, s)),
    );
    if (!session) await this.primeRollups(request.table);
    return rows;
  }

  async getCatalogs(): Promise<string[]> {
    const tables = await this.engine.tables();
    return [...new Set(['orrery', ...tables.map((t) => t.catalog)])];
  }

  async getDbSchemas(): Promise<DbSchemaInfo[]> {
    return (await this.engine.schemas()).map((schema) => ({ catalog: 'orrery', schema }));
  }

  async getTables(ctx: CallContext<Principal>, includeSchema: boolean): Promise<TableInfo[]> {
    const tables = await this.queryableTables(ctx);
    if (!includeSchema) return tables.map(({ schemaOf: _schema, ...table }) => table);
    return Promise.all(tables.map(async ({ schemaOf, ...table }) => ({ ...table, arrowSchema: await schemaOf() })));
  }

  /**
   * What a key can query, as GetTables, information_schema.tables and SHOW TABLES list it: the
   * view sets, the series tables and the tables and views of the orrery catalog (for a key that
   * is not an admin, those of its main schema, the only ones it may name). Names only: no rows. Not a relation
   * the key may not read (see refusedReads).
   */
  private async queryableTables(
    ctx: CallContext<Principal>,
  ): Promise<Array<TableInfo & { schema: string; schemaOf: () => Promise<Schema> }>> {
    const { principal } = ctx;
    const engineTables = (await this.engine.tables()).filter((t) => principal.admin || t.schema === 'main');
    const tables = engineTables.map((table) => ({
      catalog: table.catalog,
      schema: table.schema,
      name: table.name,
      type: table.type,
      schemaOf: () => this.engine.tableSchema(table),
    }));
    for (const view of this.lakehouse?.views.all() ?? []) {
      const schemaOf = async (): Promise<Schema> => (await this.engine.describe(emptyRelation(view.columns))).schema;
      tables.push({ catalog: 'orrery', schema: 'main', name: view.name, type: 'TABLE', schemaOf });
    }
    for (const table of (await this.tables?.list())?.values() ?? []) {
      const schemaOf = async (): Promise<Schema> =>
        (await this.engine.describe(`SELECT ${tableColumnsSelect} FROM ${lakeTable(table.name)}`)).schema;
      tables.push({ catalog: 'orrery', schema: 'main', name: table.name, type: 'TABLE', schemaOf });
    }
    // Every key may read every rollup (its own audiences' rows), so every key sees them listed.
    const rollups = this.lakehouse?.rollups;
    for (const { name, type } of (await rollups?.relations()) ?? []) {
      const schemaOf = async (): Promise<Schema> => {
        const { statements: setup, fill } = await rollups!.readSetup([name], scopeOf(principal));
        return (await this.engine.describe(`SELECT * FROM ${quoteIdentifier(name)}`, { setup, fill })).schema;
      };
      tables.push({ catalog: 'orrery', schema: 'main', name, type, schemaOf });
    }
    const refused = await this.refusedReads(ctx, [...new Set(tables.map((t) => t.name.toLowerCase()))]);
    return refused ? tables.filter((t) => !refused.has(t.name.toLowerCase())) : tables;
  }

  /**
   * Of these relations (lower case), those a deny rule refuses the caller a statement reading one alone
   * (`SELECT * FROM <name>`; its sources read too, see relationSources); null when no rule is set. Listings leave
   * them out: a key learns nothing from a listing of what it may not read.
   */
  private async refusedReads(
    ctx: CallContext<Principal>,
    names: readonly string[],
  ): Promise<ReadonlySet<string> | null> {
    const refused = await this.backend?.denyRules.refused(async () => {
      const sources = await relationSources(this.lakehouse);
      return names.map((name) => ({
        user_id: ctx.principal.name,
        sql: `SELECT * FROM ${quoteIdentifier(name)}`,
        admin: ctx.principal.admin,
        client: ctx.headers.get('x-client-type') ?? '',
        tables: [name, ...sources(name)],
        functions: [],
      }));
    });
    return refused ? new Set(names.filter((_, i) => refused[i])) : null;
  }

  /**
   * Temporary views of queryableTables with DataFusion's information_schema.tables columns and,
   * when asked, its information_schema.columns columns (one row per column of each, DuckDB's type
   * names in data_type): what the key may query, nothing else.
   */
  private async listingSetup(ctx: CallContext<Principal>, withColumns: boolean): Promise<string[]> {
    const tables = (await this.queryableTables(ctx)).sort(
      (a, b) => a.schema.localeCompare(b.schema) || a.name.localeCompare(b.name),
    );
    const rows = tables.map((t) =>
      [t.catalog ?? 'orrery', t.schema, t.name, t.type === 'VIEW' ? 'VIEW' : 'BASE TABLE'].map(quoteLiteral).join(', '),
    );
    const statements = [
      `CREATE OR REPLACE TEMP VIEW ${tablesListing} AS ${valuesRelation(
        ['table_catalog', 'table_schema', 'table_name', 'table_type'].map((c) => [c, 'VARCHAR'] as const),
        rows,
      )}`,
    ];
    if (!withColumns) return statements;
    const columnRows: string[] = [];
    for (const t of tables) {
      (await t.schemaOf()).fields.forEach((field, i) => {
        const type = field.metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME') ?? String(field.type);
        const named = [t.catalog ?? 'orrery', t.schema, t.name, field.name].map(quoteLiteral);
        const rest = ['NULL', quoteLiteral(field.nullable ? 'YES' : 'NO'), quoteLiteral(type)];
        columnRows.push([...named, String(i + 1), ...rest, ...Array(7).fill('NULL')].join(', '));
      });
    }
    statements.push(
      `CREATE OR REPLACE TEMP VIEW ${columnsListing} AS ${valuesRelation(columnsListingColumns, columnRows)}`,
    );
    return statements;
  }

  async getTableTypes(): Promise<string[]> {
    return ['TABLE', 'VIEW'];
  }

  async getXdbcTypeInfo(): Promise<XdbcTypeInfo[]> {
    return xdbcTypes;
  }

  sqlInfo(): SqlInfoValues {
    return sqlInfo(this.serverVersion, { transactions: this.transactions !== undefined });
  }

  /** planStatement, counted (orrery_statement_plans_total): what the plan caches save shows there. */
  private plan(...args: Parameters<SqlService['planStatement']>): Promise<Plan> {
    this.metrics?.statementPlans.inc();
    return this.planStatement(...args);
  }

  /**
   * Works out how a statement runs for this caller: refuses what the key may not do, routes
   * admin procedures, and sets up the view sets and lakehouse functions the statement reads,
   * scoped to the caller's audiences.
   */
  private async planStatement(
    ctx: CallContext<Principal>,
    statement: Statement,
    run: StatementRun,
    /**
     * Keep DuckDB's prepared statement for the plan's run: a CreatePreparedStatement's for the run of
     * its GetFlightInfo (true), a GetFlightInfo's for the DoGet that follows (`transaction`: a statement
     * reading the lake is prepared in the transaction its run ends, see describeAndHold).
     */
    hold: boolean | 'transaction' = false,
    /** Whether a latest-n top-N may be read bounded (see TopNBound): a plan runQuery checks the rows of. */
    boundTopN = false,
  ): Promise<Plan> {
    const { principal } = ctx;
    this.limits.checkParameters(statement.parameters);
    const internal = namesLakeInternals(statement.query);
    if (internal)
      throw sqlErrors.error(
        'LAKE_INTERNALS_DENIED',
        `permission denied: '${internal}' is internal to Orrery's series tables`,
      );
    const savepoint = savepointRefusal(statement.query);
    if (savepoint) throw savepoint;
    // Other keys run only SELECTs whose every function is on the reader allow-list, which has none of these.
    const indirect = principal.admin ? reachesLakeIndirectly(statement.query) : null;
    if (indirect) throw sqlErrors.error('LAKE_INTERNALS_DENIED', `permission denied: ${indirect}; it is not available`);
    const startup = principal.admin ? changesStartupObject(statement.query, this.engine.startupObjects) : null;
    if (startup) throw sqlErrors.error('STARTUP_OBJECT_DENIED', `permission denied: ${startup}; it cannot be changed`);
    const macroDefault = principal.admin ? await macroDefaultProblem(statement.query, this.engine) : null;
    if (macroDefault) throw sqlErrors.error('MACRO_DEFAULT_VARYING', `CREATE MACRO: ${macroDefault}`);
    if (changesSecrets(statement.query)) {
      throw sqlErrors.error(
        'SECRETS_DENIED',
        "permission denied: CREATE SECRET and DROP SECRET are not available (the object store's secret is Orrery's)",
      );
    }
    const files = principal.admin ? adminFileAccess(statement.query) : null;
    if (files) throw filesDenied(files);
    if (attachesDatabases(statement.query)) {
      throw sqlErrors.error(
        'LAKE_INTERNALS_DENIED',
        'permission denied: ATTACH and DETACH are not available (Orrery attaches its own databases)',
      );
    }
    const session =
      statement.transactionId && this.transactions
        ? this.transactions.session(ctx, statement.transactionId)
        : undefined;
    const ddl = this.backend ? parseDdlFor(principal, statement.query) : null;
    if (ddl) {
      await this.checkDenied(ctx, statement, null);
      if (!principal.admin) throw permissionDenied(principal);
      return { kind: 'ddl', statement: ddl };
    }
    const jobs = this.lakehouse?.rollups ? jobsUpdate(statement.query) : null;
    if (jobs !== null) {
      // The spec's UPDATE snouttime.jobs SET schedule = …: an admin's change of refresh schedules.
      await this.checkDenied(ctx, statement, null);
      if (!principal.admin) throw selectOnly(principal);
      const rollups = this.lakehouse!.rollups!;
      return { kind: 'series', write: { setup: [], run: () => rollups.updateSchedules(jobs) }, session };
    }
    const tables = this.tables;
    if (tables) {
      const write = await planSeriesWrite(this.engine, tables, principal, statement, (body) =>
        this.checkReadable(body),
      );
      if (write) {
        await this.checkDenied(ctx, statement, null);
        return { kind: 'series', write, session };
      }
    }
    const tree = await this.engine.parseSelect(statement.query);
    // An admin's EXPLAIN [ANALYZE] of a SELECT explains the statement as Orrery runs it (rewritten).
    const explain =
      tree === null && principal.admin ? /^\s*(EXPLAIN(?:\s+ANALY[SZ]E)?)\s+([\s\S]+)$/i.exec(statement.query) : null;
    if (explain && (await this.engine.parseSelect(explain[2])) !== null) {
      // Its first run's plan: a latest-n top-N bounded (which its rows may then show short, run again unbounded).
      const inner = await this.planStatement(ctx, { ...statement, query: explain[2] }, run, false, boundTopN);
      if (inner.kind === 'engine') {
        const sql = `${explain[1]} ${inner.sql}`;
        return {
          kind: 'engine',
          sql,
          description: await this.engine.describe(sql, inner.options),
          options: inner.options,
          judged: inner.judged,
        };
      }
    }
    const renamed = tree !== null && snouttimeNames(tree);
    const shape = tree ? queryShape(tree) : null;
    const file = principal.admin && shape ? fileRelation(shape) : null;
    if (file) throw filesDenied(file);
    const judged = shape && (await this.isRuleManagementAlone(shape)) ? undefined : { query: statement.query, shape };
    if (judged) await this.checkDenied(ctx, statement, shape);
    if (shape) {
      checkSingleStatement(shape);
      const procedure = this.procedureCall(shape, principal);
      if (procedure)
        return {
          kind: 'procedure',
          ...procedure,
          call: { ...procedure.call, args: await this.argumentValues(procedure.call) },
        };
    }
    // The lake's snapshot, its series tables and the rollup catalog, read once for every use below: only
    // when the statement may name a series table or read a rollup, not for statements over view sets alone.
    const mayNameSeries = tables !== undefined && (!shape || this.mayNameSeriesTables(shape));
    const rollups = this.lakehouse?.rollups;
    const readsRollups = shape && rollups && (await this.mayReadRollups(shape, rollups));
    const point = rollups && (mayNameSeries || readsRollups) ? await rollups.readPoint(session) : undefined;
    if (!principal.admin) {
      // Decided from the parse tree alone: DuckDB binds and prepares nothing a non-admin may not
      // run (preparing EXPORT DATABASE already creates its folder).
      if (!shape) throw selectOnly(principal);
      await this.checkReadable(shape, point);
    }
    // After the key's refusals: what changed in the transaction is told only of what the key may read.
    if (shape) checkUnchangedRollups(shape, point);
    // One statement's readers of installed resources: pruning by indexes, then stored columns.
    const readers =
      tree && shape
        ? this.resourceStatement(
            { tree, text: statement.query, shape },
            statement.parameters,
            session === undefined,
            principal,
            boundTopN,
          )
        : undefined;
    const { pruning, stored } = readers ?? {};
    const setup =
      shape && this.lakehouse ? await this.lakehouseSetup(ctx, shape, this.lakehouse, readers?.filter, session) : [];
    if (pruning && pruning.partitionRows > 0) this.metrics?.partitionRowsRead.inc(pruning.partitionRows);
    const listed = tables && mayNameSeries ? (point?.tables ?? (await tables.list(session))) : undefined;
    // Before the rollup rewrite, as a view set's: the stored columns of the series tables it reads alone.
    const seriesColumns = await this.seriesStoredColumns(readers, listed, shape, session, point?.snapshot);
    // The select items as written, named as DuckDB names them if the rewrites below change them.
    const items = tree ? parsedItems(tree) : [];
    // Timestamps first: the rollup rewrite reads window bounds as the statement will compare them.
    const timestamps = tree ? nanosecondTimestamps(tree) : false;
    const namedBefore = tree && readsRollups ? baseTables(tree.statements) : undefined;
    const reads =
      tree && readsRollups
        ? await rollups.rewrite(
            tree,
            point,
            stored && ((n) => stored.original(n)),
            pruning?.fixedClock,
            scopeOf(principal),
          )
        : null;
    if (reads) this.metrics?.rollupRewrites.inc({ outcome: reads.outcome });
    const rollupSetup = readsRollups
      ? await rollupReadSetup(
          rollups,
          shape,
          principal,
          reads?.rollups,
          reads?.at ?? point,
          session !== undefined,
          tree ?? undefined,
          statement.parameters,
          // Not after the rewrite read rollups: it read the clock calls live (its windows are not the fixed clock's).
          reads && reads.rollups.length > 0 ? undefined : pruning?.fixableClock,
          (names) => this.refusedReads(ctx, names),
        )
      : { statements: [], snapshot: null, lake: false, fixesClock: false };
    // The set-up left out buckets by a bound that holds with the clock it read: the statement runs with it.
    if (rollupSetup.fixesClock) pruning!.useClock();
    setup.push(...rollupSetup.statements);
    // A statement reading rollups reads the series tables at the rollups' snapshot (one state of the
    // lake); in a client's transaction, as the transaction sees them (its own writes included).
    const pinned = session === undefined ? (rollupSetup.snapshot ?? undefined) : undefined;
    // A series table the statement named only where a rollup is now read needs no view: without one, a statement
    // reading rollups from their files alone reads no DuckLake table (no DuckLake transaction, its plan kept).
    const namedAfter = namedBefore && reads && reads.rollups.length > 0 ? baseTables(tree!.statements) : undefined;
    const readSeries =
      listed && namedAfter
        ? new Map([...listed].filter(([name]) => !namedBefore!.has(name) || namedAfter.has(name)))
        : listed;
    const seriesSetup =
      tables && readSeries ? seriesReadSetup(tables, readSeries, principal, shape ?? undefined, pinned) : [];
    setup.push(...seriesSetup);
    const columnReads = seriesColumns.filter((r) => readSeries?.has(r.table.name));
    if (columnReads.length > 0)
      setup.push(
        ...(await seriesColumnViews(
          this.lakehouse!.db,
          columnReads,
          scopeOf(principal),
          pinned ?? columnReads[0].snapshot,
        )),
      );
    // Outside a client's transaction (which reads its own writes, at its own snapshot), a search skips the files of
    // the series tables a text index shows it need not read (but those read with their stored columns).
    if (session === undefined && readSeries && shape)
      setup.push(
        ...(await this.seriesTextSetup(
          readers,
          tree,
          namedTables(readSeries, shape).filter((t) => !columnReads.some((r) => r.table === t)),
          principal,
          pinned ?? point?.snapshot,
        )),
      );
    const options: RunOptions = {
      parameters: statement.parameters,
      preserveDictionary: ctx.options.preserveDictionary,
      setup,
      fill: rollupSetup.fill,
      tailReads: rollupSetup.tailReads,
      // Pruning compared the statement's now() as one value (and the rollup rewrite read its clock calls with it):
      // the statement runs with it.
      clock: pruning?.fixedClock?.text,
      session,
      signal: ctx.signal,
      deadline: run.deadline,
    };
    const listsTables =
      shape !== null && (shape.relations.some(isTablesListing) || shape.catalogListings.some(isTablesShow));
    const listsColumns = shape !== null && shape.relations.some(isColumnsListing);
    if (listsTables || listsColumns) setup.push(...(await this.listingSetup(ctx, listsColumns)));
    // Series tables' time bounds in a form DuckDB pushes into the scan (after the rollup rewrite,
    // whose raw edges bound the scan themselves).
    const bounded = tree && listed ? scanTimeBounds(tree, microsecondTimeColumns(listed, shape ?? undefined)) : false;
    // Both rewrites run (no short circuit): either one means running the rewritten tree.
    const rewritten = tree
      ? [
          timestamps,
          bounded,
          (listsTables || listsColumns) && substituteListings(tree, { tables: tablesListing, columns: columnsListing }),
          renamed,
          (reads?.rollups.length ?? 0) > 0,
          stored?.substituted ?? false,
        ]
      : [];
    if (rewritten.some(Boolean)) await keepItemNames(this.engine, items, statement.query);
    const sql = rewritten.some(Boolean) ? await this.engine.deparse(tree!) : statement.query;
    // A rollup read from its files alone reads no DuckLake table: no DuckLake transaction, its prepared statement kept.
    const readsLake = seriesSetup.length > 0 || rollupSetup.lake;
    // Only a GetFlightInfo's plan, run by the DoGet that follows: a CreatePreparedStatement's plan may run later,
    // after writes its transaction would not see.
    // A statement not reading the lake keeps DuckDB's prepared statement for the next one of the same text.
    const described = hold
      ? await this.engine.describeAndHold(sql, options, hold === 'transaction' && readsLake, !readsLake)
      : { description: await this.engine.describe(sql, options) };
    // What pruning skipped and which stored columns were read are told to admins only: statistics span
    // every audience's rows, and a stored column is the server's own.
    const partitions = principal.admin ? (pruning?.reads ?? []) : [];
    const storedColumns = principal.admin ? (stored?.reported(reads?.storedColumnsUnread ?? []) ?? []) : [];
    const projections = principal.admin ? (pruning?.projections ?? []) : [];
    const newest = principal.admin ? (pruning?.newestFirst ?? []) : [];
    const rowsRead = principal.admin ? (pruning?.rowsRead ?? []) : [];
    const provenance =
      partitions.length > 0 ||
      storedColumns.length > 0 ||
      projections.length > 0 ||
      newest.length > 0 ||
      rowsRead.length > 0
        ? {
            ...(reads?.provenance ?? { resources: [] }),
            ...(partitions.length > 0 ? { partitions } : {}),
            ...(storedColumns.length > 0 ? { stored_columns: storedColumns } : {}),
            ...(projections.length > 0 ? { projections } : {}),
            ...(newest.length > 0 ? { newest_first: newest } : {}),
            ...(rowsRead.length > 0 ? { rows_read: rowsRead } : {}),
          }
        : reads?.provenance;
    const description = withProvenance(dataFusionNames(described.description), provenance);
    const { held } = described;
    if (!principal.admin && description.statementType !== StatementType.SELECT) {
      held?.close();
      throw selectOnly(principal);
    }
    const boundedRows = pruning?.bounded?.rows;
    return { kind: 'engine', sql, description, options: held ? { ...options, held } : options, boundedRows, judged };
  }

  /** Runs part of a statement; a non-admin's errors are rewritten to hold no server path or internal SQL. */
  /** What the caller is told of a failure: for a key that is not an admin, no server path or internal SQL. */
  private reported(ctx: CallContext<Principal>, statement: Statement, error: unknown): unknown {
    return ctx.principal.admin ? error : readerError(error, statement.query, this.engine.hiddenLocations);
  }

  private async *guardedBatches(
    statement: Statement,
    batches: AsyncIterable<RecordBatch>,
  ): AsyncGenerator<RecordBatch> {
    try {
      yield* batches;
    } catch (error) {
      throw readerError(error, statement.query, this.engine.hiddenLocations);
    }
  }

  /** A DuckDB plan's batches: a SELECT through the lanes (query-lanes.ts), anything else on the query engine. */
  private async engineBatches(ctx: CallContext<Principal>, plan: EnginePlan): Promise<AsyncIterable<RecordBatch>> {
    const options = { ...plan.options, limit: ctx.options.limit };
    if (plan.description.statementType !== StatementType.SELECT)
      return (await this.engine.query(plan.sql, options, plan.description)).batches;
    return this.lanes.batches(ctx.principal.name, plan.sql, options, plan.description);
  }

  /**
   * Whether a failure was DuckDB's failing to read partition files of the lake (missing, truncated,
   * overwritten: by its error type; the files by the object keys its message quotes, which containing
   * checks against the partitions in Postgres), now contained (quarantined, their ranges rebuilt from
   * source; see Materializer.containUnreadable), so the statement may run again. Throws what containing
   * throws (PARTITION_LOST, PARTITION_CONTAINMENT_FAILED): the caller is told that, not DuckDB's error.
   */
  private async contained(error: unknown): Promise<boolean> {
    if (namesDroppedTail(messageOf(error))) return true; // planned again, it reads the tail kept now
    const materializer = this.backend?.materializer;
    if (!materializer || !isFileReadFailure(error)) return false;
    const keys = partitionKeysIn(messageOf(error));
    if (keys.length === 0 || (await materializer.containUnreadable(keys)) === 0) return false;
    await this.lakehouse?.partitions?.sync(); // the statement runs again over the partitions as they are now
    return true;
  }

  /** Runs `work`, again (up to maxReruns times: each run may meet another file) when it failed on partition files now contained. */
  private async containing<T>(work: () => Promise<T>): Promise<T> {
    for (let reruns = 0; ; reruns++) {
      try {
        return await work();
      } catch (error) {
        if (reruns >= maxReruns || !(await this.contained(error))) throw error;
      }
    }
  }

  /**
   * A result whose reading fails on a partition file that cannot be read: the file is contained and the
   * statement runs again when no row was sent yet; otherwise the caller is told to run it again.
   */
  private async *containedBatches(
    batches: AsyncIterable<RecordBatch>,
    rerun: () => Promise<AsyncIterable<RecordBatch>>,
    reruns: number,
  ): AsyncGenerator<RecordBatch> {
    let sent = false;
    try {
      for await (const batch of batches) {
        sent = true;
        yield batch;
      }
    } catch (error) {
      if (reruns >= maxReruns || !(await this.contained(error))) throw error;
      if (!sent) {
        yield* this.containedBatches(await rerun(), rerun, reruns + 1);
        return;
      }
      throw sqlErrors.error(
        'PARTITION_QUARANTINED',
        'a partition file of the lake could not be read after rows were sent: it is quarantined and its range rebuilt; run the statement again',
      );
    }
  }

  /** Runs `use` within the key's limits (admitted, timed, recorded), its failure as the caller may see it. */
  private async limited<T>(
    ctx: CallContext<Principal>,
    statement: Statement,
    executes: boolean,
    use: (run: StatementRun) => Promise<T>,
  ): Promise<T> {
    const run = await this.limits.begin(ctx.principal.name, ctx, executes);
    try {
      // A statement planned or run over partition files that cannot be read runs again without them.
      const result = await this.containing(() => use(run));
      run.end();
      return result;
    } catch (error) {
      const reported = this.reported(ctx, statement, error);
      run.end(reported);
      throw reported;
    }
  }

  /** The functions non-admins may call. */
  private async readerFunctionNames(): Promise<ReadonlySet<string>> {
    this.readerFunctions ??= this.engine.functions().then(readerFunctionNames);
    return this.readerFunctions.catch((error) => {
      this.readerFunctions = undefined;
      throw error;
    });
  }

  /**
   * Statements that only list, add or remove deny rules skip the rules, so a rule cannot lock
   * admins out of removing it: one rule-management call, no relation, harmless functions only.
   */
  private async isRuleManagementAlone(shape: QueryShape): Promise<boolean> {
    const calls = shape.loneCall ? [shape.loneCall] : shape.tableFunctions;
    if (calls.length !== 1 || !denyManagementFunctions.has(calls[0].name.toLowerCase())) return false;
    if (shape.relations.length > 0 || shape.catalogListings.length > 0) return false;
    const harmless = await this.readerFunctionNames();
    return shape.functionCalls.every((f) => harmless.has(f.name.toLowerCase()));
  }

  /** Whether a SELECT names a relation that is neither a CTE nor a view set. */
  private mayNameSeriesTables(shape: QueryShape): boolean {
    return shape.relations.some((r) => !r.cte && !this.lakehouse?.views.get(r.name));
  }

  /** Whether a statement may read a rollup: by naming one, or a series table or view set that has some. */
  private async mayReadRollups(shape: QueryShape, rollups: Rollups): Promise<boolean> {
    return (
      this.mayNameSeriesTables(shape) ||
      (await rollups.readsViewSetBase(shape.relations.filter((r) => !r.cte).map((r) => r.name)))
    );
  }

  /** What a non-admin statement may name (the series tables and rollups as of `point`, when the caller read it). */
  private async readerCatalog(point?: RollupReadPoint): Promise<ReaderCatalog> {
    const functions = await this.readerFunctionNames();
    let tables: Promise<Array<{ schema: string; name: string }>> | undefined;
    const readable = async (relation: RelationRef): Promise<boolean> => {
      const catalog = relation.catalog.toLowerCase();
      if ((catalog === '' || catalog === 'temp') && this.lakehouse?.views.get(relation.name)) return true;
      if (catalog === '' && (point?.tables ?? (await this.tables?.list()))?.has(relation.name)) return true;
      if (catalog === '' && relation.schema === '' && this.lakehouse?.rollups) {
        if (relation.name.toLowerCase() === jobsRelation) return true;
        if ((await this.lakehouse.rollups.readableNames(point)).has(relation.name.toLowerCase())) return true;
      }
      if (catalog === 'temp') return false;
      tables ??= this.engine.tables();
      const name = relation.name.toLowerCase();
      return (await tables).some((t) => t.schema === 'main' && t.name.toLowerCase() === name);
    };
    return { tableFunctions: readerTableFunctions, functions, readable };
  }

  /** What a key that is not an admin may read: no admin functions, nothing outside the view sets and series tables. */
  private async checkReadable(shape: QueryShape, point?: RollupReadPoint): Promise<void> {
    const adminOnly = shape.tableFunctions.find((f) => orreryFunctionKind(f.name) === 'admin table');
    if (adminOnly) throw sqlErrors.error('ADMIN_ONLY', `permission denied: ${adminOnly.name} is an admin function`);
    await checkReaderQuery(shape, await this.readerCatalog(point));
  }

  private async checkDenied(
    ctx: CallContext<Principal>,
    statement: Statement,
    shape: QueryShape | null,
  ): Promise<void> {
    await this.backend?.denyRules.check(async () => ({
      user_id: ctx.principal.name,
      sql: statement.query,
      admin: ctx.principal.admin,
      client: ctx.headers.get('x-client-type') ?? '',
      ...(await this.readsOf(shape)),
    }));
  }

  /**
   * What a deny rule sees a statement read (readsOf), with what its table functions read of their arguments:
   * explain_resources plans its statement and resource_omissions validates its publication against the tables
   * it names, so a rule closing a view set closes them too, as it closes view_instance over it; and the sources
   * of the rollups and view sets it names (see relationSources).
   */
  private async readsOf(shape: QueryShape | null): Promise<{ tables: string[]; functions: string[] }> {
    const reads = readsOf(shape);
    for (const call of shape?.tableFunctions ?? []) {
      const [argument] = call.args;
      if (typeof argument !== 'string') continue;
      const name = call.name.toLowerCase();
      if (name === 'resource_omissions') reads.tables.push(...publicationTables(argument));
      if (name !== 'explain_resources') continue;
      // A text that does not parse names nothing, and explain_resources refuses it.
      const tree = await this.engine.parseSelect(argument).catch(() => null);
      if (tree) snouttimeNames(tree);
      const inner = await this.readsOf(tree && queryShape(tree));
      reads.tables.push(...inner.tables);
      reads.functions.push(...inner.functions);
    }
    // A rollup or a view set defined in SQL holds its sources' rows, aggregated: a rule closing a source closes it.
    const sources = await relationSources(this.lakehouse);
    reads.tables.push(...reads.tables.flatMap(sources));
    return { tables: [...new Set(reads.tables)], functions: [...new Set(reads.functions)] };
  }

  /** Runs a DDL statement: one row saying what it did. */
  private async *ddl(statement: DdlStatement, principal: Principal): AsyncGenerator<RecordBatch> {
    try {
      const { name, action } = await this.backend!.ddl.run(statement, principal);
      await this.lakehouse?.partitions?.sync();
      yield batchFromRows(ddlSchema, [[name, action]]);
    } finally {
      this.adminChanges++;
    }
  }

  /**
   * What a CreatePreparedStatement answer is described under (PlanCache.recall): DuckDB's catalog, the view sets
   * loaded (another server's publication included) and the DDL and procedures run here (a publication, a deny rule,
   * a rollup: what a statement reads or may read, with no change of DuckDB's catalog).
   */
  private describedUnder(): string {
    return `${this.engine.catalogGeneration}:${this.lakehouse?.views.generation ?? 0}:${this.adminChanges}`;
  }

  /**
   * The admin procedure a statement calls, if any, and the progress columns it selects: the call
   * must be the whole statement, selecting `*` or some of `time` and `msg`. In micromegas's
   * scalar form (`SELECT f(...) [AS alias]`) it answers one text column.
   */
  private procedureCall(
    shape: QueryShape,
    principal: Principal,
  ): { call: TableFunctionCall; schema: Schema; scalar?: boolean } | undefined {
    const scalar = shape.loneCall && procedureOf(shape.loneCall) ? shape.loneCall : undefined;
    if (scalar) {
      this.checkProcedureCaller(scalar, principal);
      const result = procedureResult(scalar);
      // The spec's types: refresh_rollup's integer is Postgres's (32 bits); Arrow has no regclass, so create_rollup's
      // is text; a void is Arrow's Null type (its one value null). Each carries Flight SQL's column type name
      // (ARROW:FLIGHT:SQL:TYPE_NAME), as DuckDB's columns do.
      const typeName = new Map([['ARROW:FLIGHT:SQL:TYPE_NAME', procedureTypeNames[result]]]);
      const type = result === 'integer' ? new Int32() : result === 'void' ? new Null() : new Utf8();
      return {
        call: scalar,
        schema: new Schema([new Field(scalar.alias || scalar.name, type, result === 'void', typeName)]),
        scalar: true,
      };
    }
    const call = shape.tableFunctions.find((f) => procedureOf(f));
    if (!call) return undefined;
    this.checkProcedureCaller(call, principal);
    const columns = shape.plainSelectList === '*' ? progressSchema.fields.map((f) => f.name) : shape.plainSelectList;
    const fields = columns?.map((name) => progressSchema.fields.find((f) => f.name === name));
    if (shape.tableFunctions.length !== 1 || shape.relations.length !== 0 || !fields || fields.some((f) => !f)) {
      throw sqlErrors.error(
        'PROCEDURE_NOT_ALONE',
        `${call.name} must be called on its own, selecting * or its columns time and msg: SELECT * FROM ${call.name}(...)`,
      );
    }
    return { call, schema: new Schema(fields as Field[]) };
  }

  private checkProcedureCaller(call: TableFunctionCall, principal: Principal): void {
    if (!this.lakehouse)
      throw sqlErrors.error(
        'LAKEHOUSE_UNAVAILABLE',
        `${call.name} needs the lakehouse, which this server does not run`,
      );
    if (!principal.admin) throw sqlErrors.error('ADMIN_ONLY', `permission denied: ${call.name} is an admin function`);
  }

  /** A procedure's arguments: literals as written, constant expressions (now() - INTERVAL 1 DAY) evaluated. */
  private async argumentValues(call: TableFunctionCall): Promise<unknown[]> {
    if (call.args.every((arg) => arg !== null)) return call.args;
    const values = await this.engine.constantTexts(call.argTrees);
    return call.args.map((arg, i) => arg ?? values[i]);
  }

  private async lakehouseSetup(
    ctx: CallContext<Principal>,
    shape: QueryShape,
    lakehouse: Lakehouse,
    pruning?: PartitionFilter,
    /** The client's transaction the statement runs in: explain_resources and list_rollups answer as of it. */
    session?: EngineSession,
  ): Promise<string[]> {
    const calls = shape.tableFunctions.filter(isLakehouseFunction);
    const views = new Map(
      [...referencedViews(shape, lakehouse), ...viewsReadBy(calls, lakehouse)].map((v) => [v.name, v]),
    );
    const viewStatements =
      views.size > 0
        ? await viewSetup(
            lakehouse,
            [...views.values()],
            scopeOf(ctx.principal),
            {
              begin: ctx.options.rangeBegin,
              end: ctx.options.rangeEnd,
            },
            // A set a lakehouse function reads is read whole: the function's rows are not the WHERE's.
            calls.length === 0 ? pruning : undefined,
          )
        : [];
    // A lost partition whose file was put back leaves the list before it is read.
    if (calls.some((c) => c.name === 'list_lost_partitions'))
      await this.backend?.materializer?.forgetRecoveredPartitions();
    return [
      ...viewStatements,
      ...(await functionSetup(
        calls,
        lakehouse,
        scopeOf(ctx.principal),
        this.backend?.denyRules,
        (sql) => this.explainResources(ctx, sql, session),
        (names) => this.refusedReads(ctx, names),
        session && lakehouse.rollups ? () => lakehouse.rollups!.readPoint(session) : undefined,
      )),
    ];
  }

  /** The readers of installed resources for one statement's tree, when the server runs the lakehouse. */
  private resourceStatement(
    parsed: Pick<ResourceStatement, 'tree' | 'text' | 'shape'>,
    parameters: ResourceStatement['parameters'],
    ownTransaction: boolean,
    principal: Principal,
    boundTopN = false,
  ): (ReturnType<typeof resourceReaders> & { seriesViews: Map<string, ViewSet> }) | undefined {
    const lakehouse = this.lakehouse;
    if (!lakehouse) return undefined;
    // Series tables a text index decides reads of are read as view sets (see seriesTextRead).
    const seriesViews = new Map<string, ViewSet>();
    const viewOf = (name: string) => lakehouse.views.get(name) ?? seriesViews.get(name);
    // A reader's statement is pruned by its audiences' statistics alone (see PartitionPruning.statisticsOf).
    const scope = scopeOf(principal);
    const audiences = scope.kind === 'audiences' ? scope.audiences : undefined;
    const readers = resourceReaders({
      db: lakehouse.db,
      engine: this.engine,
      ...parsed,
      viewOf,
      parameters,
      ownTransaction,
      boundTopN,
      audiences,
    });
    return { ...readers, seriesViews };
  }

  /**
   * Outside a client's transaction, the stored columns the statement reads of the series tables it names (see
   * seriesColumnReads), its tree rewritten to read them; their fills checked at `snapshot` (the latest when none).
   */
  private async seriesStoredColumns(
    readers: ReturnType<SqlService['resourceStatement']>,
    listed: ReadonlyMap<string, SeriesTable> | undefined,
    shape: QueryShape | null,
    session: EngineSession | undefined,
    snapshot?: bigint,
  ): Promise<SeriesColumnRead[]> {
    const { lakehouse, tables } = this;
    if (!readers || !listed || !shape || session !== undefined || !lakehouse || !tables) return [];
    const named = namedTables(listed, shape).filter((t) => t.storedColumns);
    if (named.length === 0) return [];
    const at = snapshot ?? (await tables.currentSnapshot());
    return seriesColumnReads(lakehouse.db, readers.stored, readers.seriesViews, named, at);
  }

  /**
   * The views through which a statement outside a client's transaction reads the series tables it searches with a
   * text index installed (see seriesTextRead), at `snapshot` (the latest when none); they replace tableRows' views.
   */
  private async seriesTextSetup(
    readers: ReturnType<SqlService['resourceStatement']>,
    tree: ResourceStatement['tree'] | null,
    named: readonly SeriesTable[],
    principal: Principal,
    snapshot?: bigint,
  ): Promise<string[]> {
    const { lakehouse, tables } = this;
    // A statement without a search costs nothing here: not even the lake's latest snapshot id.
    if (!readers || !tree || !lakehouse || !tables || named.length === 0 || !searchesText(tree)) return [];
    const ctx = {
      db: lakehouse.db,
      store: lakehouse.store,
      tree,
      pruning: readers.pruning,
      views: readers.seriesViews,
    };
    const at = snapshot ?? (await tables.currentSnapshot());
    const views: string[] = [];
    for (const table of named) {
      const view = await seriesTextRead(ctx, table, scopeOf(principal), at);
      if (view) views.push(view);
    }
    return views;
  }

  /**
   * explain_resources: the provenance a SELECT would have, planned as the caller's (the same
   * checks, the same event range), without running it. To an admin, also what it would read of the
   * other resources (pruned partitions, stored columns, a projection): a reader is told none of them,
   * as its results tell none (partitions and their statistics span every audience's rows).
   */
  private async explainResources(
    ctx: CallContext<Principal>,
    sql: string,
    /** The client's transaction it is called in: the statement is planned as it would run there. */
    session?: EngineSession,
  ): Promise<ExplainedReads> {
    const { principal } = ctx;
    const tree = await this.engine.parseSelect(sql);
    if (!tree) throw sqlErrors.error('FUNCTION_ARGUMENT_INVALID', 'explain_resources: the statement is not a SELECT');
    snouttimeNames(tree);
    const shape = queryShape(tree);
    checkSingleStatement(shape);
    if (!principal.admin) await this.checkReadable(shape);
    const lakehouse = this.lakehouse;
    // As planning does: a statement calling lakehouse functions reads its sets whole.
    const readers =
      principal.admin && lakehouse && !shape.tableFunctions.some(isLakehouseFunction)
        ? // Planned as its first run is: a latest-n top-N bounded (see TopNBound).
          this.resourceStatement({ tree, text: sql, shape }, undefined, true, principal, true)
        : undefined;
    if (lakehouse && readers) {
      const range = { begin: ctx.options.rangeBegin, end: ctx.options.rangeEnd };
      await viewSetup(lakehouse, referencedViews(shape, lakehouse), scopeOf(principal), range, readers.filter);
      // As planning does, outside a client's transaction: the series tables' files a text index skips.
      const listed = session === undefined ? await this.tables?.list() : undefined;
      if (listed) {
        const columnReads = await this.seriesStoredColumns(readers, listed, shape, undefined);
        const named = namedTables(listed, shape).filter((t) => !columnReads.some((r) => r.table === t));
        await this.seriesTextSetup(readers, tree, named, principal);
      }
    }
    nanosecondTimestamps(tree);
    const rollups = lakehouse?.rollups;
    const stored = readers?.stored;
    const reads =
      rollups &&
      (await rollups.rewrite(
        tree,
        session && (await rollups.readPoint(session)),
        stored && ((n) => stored.original(n)),
        readers?.pruning.fixedClock,
        scopeOf(principal),
      ));
    return {
      ...(reads?.provenance ?? { resources: [] }),
      stored_columns: stored?.reported(reads?.storedColumnsUnread ?? []) ?? [],
      pruned: readers?.pruning.pruned ?? [],
      projections: readers?.pruning.projections ?? [],
      bounded: readers?.pruning.leftOut ?? [],
    };
  }

  /**
   * Runs an admin procedure, one row per message as it comes: its time and text, as selected;
   * in the scalar form, one row holding its messages.
   */
  private async *progress(
    plan: { call: TableFunctionCall; schema: Schema; scalar?: boolean },
    caller: string,
  ): AsyncGenerator<RecordBatch> {
    // What the procedure changed in the partitions is seen by the next statement here.
    const context = { ...this.backend!, engine: this.engine };
    const messages = afterwards(runProcedure(context, plan.call, caller), () => this.lakehouse?.partitions?.sync());
    try {
      if (plan.scalar) {
        const all: string[] = [];
        for await (const message of messages) all.push(message);
        const result = procedureResult(plan.call);
        const value = result === 'integer' ? Number(all[all.length - 1]) : result === 'void' ? null : all.join('\n');
        yield batchFromRows(plan.schema, [[value]]);
        return;
      }
      for await (const message of messages) {
        const values: Record<string, unknown> = { time: Date.now(), msg: message };
        yield batchFromRows(plan.schema, [plan.schema.fields.map((f) => values[f.name])]);
      }
    } finally {
      // Done or stopped part way, it may have changed what statements read (see describedUnder).
      this.adminChanges++;
    }
  }
}

/** The SQL type each kind of procedure result is named as. */
const procedureTypeNames = { text: 'VARCHAR', integer: 'INTEGER', regclass: 'regclass', void: 'void' } as const;

/** The batches, then `end` (also when the consumer stops early or they fail). */
async function* untilDone(batches: AsyncIterable<RecordBatch>, end: () => void): AsyncGenerator<RecordBatch> {
  try {
    yield* batches;
  } finally {
    end();
  }
}

/** The items, then `last` (awaited), when they all came. */
async function* afterwards<T>(items: AsyncIterable<T>, last: () => Promise<void> | undefined): AsyncGenerator<T> {
  yield* items;
  await last();
}

/** What CreatePreparedStatement answers for a statement DuckDB runs. */
function preparedQuery(plan: EnginePlan): PreparedStatementInfo {
  const { schema, parameterSchema, returnsRows } = plan.description;
  return { datasetSchema: schema, parameterSchema, isUpdate: !returnsRows };
}

function preparedAnswer(plan: EnginePlan): PreparedAnswer {
  return { info: preparedQuery(plan), judged: plan.judged };
}

/** What a plan answers. */
function planSchema(plan: Plan): Schema {
  switch (plan.kind) {
    case 'engine':
      return plan.description.schema;
    case 'series':
      return countSchema;
    case 'ddl':
      return ddlSchema;
    case 'procedure':
      return plan.schema;
  }
}

/** What a deny rule sees a statement read: relations and view sets, and every function it calls. */
function readsOf(shape: QueryShape | null): { tables: string[]; functions: string[] } {
  if (!shape) return { tables: [], functions: [] };
  const tables = [
    ...shape.relations.filter((r) => !r.cte).map((r) => r.name),
    ...viewSetsNamedBy(shape.tableFunctions).filter((n) => n !== null),
  ];
  const functions = [...shape.functions, ...shape.tableFunctions.map((f) => f.name)];
  const unique = (names: string[]): string[] => [...new Set(names.map((n) => n.toLowerCase()))];
  return { tables: unique(tables), functions: unique(functions) };
}

/** A non-admin gets permission denied for any materialized-view DDL, well-formed or not. */
function parseDdlFor(principal: Principal, text: string): DdlStatement | null {
  try {
    return parseDdl(text);
  } catch (error) {
    if (!principal.admin && error instanceof DdlError) throw permissionDenied(principal);
    throw error;
  }
}

/** A relation of these columns (name, DuckDB type) and rows (SQL literals in column order). */
function valuesRelation(columns: ReadonlyArray<readonly [string, string]>, rows: readonly string[]): string {
  const typed = `SELECT ${columns.map(([name, type]) => `NULL::${type} AS ${name}`).join(', ')} WHERE false`;
  return rows.length === 0 ? typed : `${typed} UNION ALL VALUES ${rows.map((r) => `(${r})`).join(', ')}`;
}

function filesDenied(reason: string): OrreryError {
  return sqlErrors.error('FILES_DENIED', `permission denied: ${reason}; query the view sets and series tables`);
}

function selectOnly(principal: Principal): OrreryError {
  return sqlErrors.error('SELECT_ONLY', `permission denied: key '${principal.name}' may only run SELECT statements`);
}

/**
 * A latest-n top-N's result read bounded by time (see TopNBound): sent when it has n rows (`rows`: fewer when the
 * client's row limit is lower), each later than every row left out; otherwise the statement's unbounded result.
 * Up to n rows are held until then.
 */
async function* boundedOrAgain(
  batches: AsyncIterable<RecordBatch>,
  rows: number,
  unbounded: () => Promise<AsyncIterable<RecordBatch>>,
): AsyncGenerator<RecordBatch> {
  const iterator = batches[Symbol.asyncIterator]();
  try {
    const held: RecordBatch[] = [];
    let count = 0;
    while (count < rows) {
      const next = await iterator.next();
      if (next.done) break;
      held.push(next.value);
      count += next.value.numRows;
    }
    if (count < rows) {
      yield* await unbounded();
      return;
    }
    yield* held;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  } finally {
    // A reader that stopped early ends the bounded run too (done already when it ended).
    await iterator.return?.();
  }
}
