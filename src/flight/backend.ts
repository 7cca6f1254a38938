import type { RecordBatch, Schema, Table } from 'apache-arrow';

/**
 * What the Flight SQL service asks of the system behind it. The service knows
 * the protocol (commands, auth headers, IPC framing); the backend knows what
 * statements mean. Optional members that a backend leaves out answer
 * UNIMPLEMENTED.
 */
export interface FlightSqlBackend<P = unknown> {
  /** Checks a Basic handshake; the token is what the client sends as `Bearer` afterwards. */
  authenticateBasic(username: string, password: string): Promise<{ principal: P; token: string }>;
  /** Checks a bearer token sent on any call. */
  authenticateBearer(token: string): Promise<P>;
  /** Identity of a call that carries no credentials; absent means such calls are UNAUTHENTICATED. */
  authenticateAnonymous?(): Promise<P>;

  /** Schema a query would stream, without running it (GetSchema; GetFlightInfo without planQuery). */
  describeQuery(ctx: CallContext<P>, statement: Statement): Promise<Schema>;
  /**
   * GetFlightInfo of a statement: its schema, and optionally the id of a plan the backend keeps
   * for the DoGet that follows (sent back as the statement's `planId`), so it is planned once.
   */
  planQuery?(ctx: CallContext<P>, statement: Statement): Promise<{ schema: Schema; planId?: Uint8Array }>;
  /** Runs a query and streams its batches; the schema is the one describeQuery gives. */
  executeQuery(ctx: CallContext<P>, statement: Statement): Promise<QueryResult>;
  /** Runs a statement for its effect; returns the affected row count, or -1 when unknown. */
  executeUpdate(ctx: CallContext<P>, statement: Statement): Promise<number>;
  /** Describes a statement for CreatePreparedStatement. */
  prepare(ctx: CallContext<P>, statement: Statement): Promise<PreparedStatementInfo>;
  /** ClosePreparedStatement of a statement's handle: what the backend kept for it may go (absent: nothing kept). */
  closePrepared?(ctx: CallContext<P>, statement: Statement): Promise<void>;

  getCatalogs(ctx: CallContext<P>): Promise<string[]>;
  getDbSchemas(ctx: CallContext<P>): Promise<DbSchemaInfo[]>;
  getTables(ctx: CallContext<P>, includeSchema: boolean): Promise<TableInfo[]>;
  getTableTypes(ctx: CallContext<P>): Promise<string[]>;
  getXdbcTypeInfo(ctx: CallContext<P>): Promise<XdbcTypeInfo[]>;
  /** SqlInfo values by id; the service adds the ids it answers for itself. */
  sqlInfo(): SqlInfoValues;

  // Optional capabilities: absent means UNIMPLEMENTED.
  getPrimaryKeys?(ctx: CallContext<P>, table: TableRef): Promise<PrimaryKeyInfo[]>;
  getForeignKeys?(ctx: CallContext<P>, filter: ForeignKeyFilter): Promise<ForeignKeyInfo[]>;
  transactions?: TransactionSupport<P>;
  substrait?: SubstraitSupport<P>;
  /** Bulk ingest; batches arrive as the client sends them (iterate them once, in order). */
  ingest?(ctx: CallContext<P>, request: IngestRequest, data: IngestStream): Promise<number>;
  cancelQuery?(ctx: CallContext<P>, info: Uint8Array): Promise<CancelResult>;
  /**
   * Stops a statement a FlightInfo's ticket names (CancelFlightInfo, and CancelQuery when
   * cancelQuery is absent): running, it fails with CANCELLED; not yet redeemed, it never runs.
   */
  cancelStatement?(ctx: CallContext<P>, statement: Statement): Promise<CancelResult>;
  /**
   * Flight sessions: the session options statements run with, by name (`catalog`, `schema`, what
   * JDBC and ADBC send), which are also the only values SetSessionOptions accepts for them.
   */
  readonly sessionOptions?: { readonly catalog: string; readonly schema: string };
}

/** A SQL statement with what the client attached to it. */
export interface Statement {
  readonly query: string;
  /** Bound parameter rows (a prepared statement after DoPut), one column per `?`. */
  readonly parameters?: Table;
  readonly transactionId?: Uint8Array;
  /** True when run through a prepared-statement handle rather than as an ad-hoc statement. */
  readonly prepared?: boolean;
  /** From the ticket: the plan planQuery kept for this statement (the backend checks it is the caller's). */
  readonly planId?: Uint8Array;
}

/** Per-call state handed to the backend. */
export interface CallContext<P = unknown> {
  readonly principal: P;
  /** Request headers, names lower-cased; the last value of a repeated header wins. */
  readonly headers: ReadonlyMap<string, string>;
  /** The per-query headers micromegas clients send, already parsed. */
  readonly options: QueryOptions;
  /** Aborted when the client cancels or disconnects, or when its deadline passes. */
  readonly signal: AbortSignal;
  /** The client's gRPC deadline (ms since the epoch), when it set one. */
  readonly deadline?: number;
}

export interface QueryOptions {
  /** `query_range_begin` / `query_range_end`, RFC 3339, as nanoseconds since the epoch. */
  readonly rangeBegin?: bigint;
  readonly rangeEnd?: bigint;
  /** `limit`: at most this many rows. */
  readonly limit?: number;
  /** `preserve_dictionary: true`: dictionary columns may stay dictionary-encoded. */
  readonly preserveDictionary: boolean;
  /** Whether result timestamps keep their zone for this client (client-timestamps.ts). */
  readonly zonedTimestamps: boolean;
}

export interface QueryResult {
  readonly schema: Schema;
  /** Batches in order; the service stops iterating (calls `return`) when the client goes away. */
  readonly batches: AsyncIterable<RecordBatch>;
  /**
   * When the statement must have ended (ms since the epoch) and what to tell the client then: a client
   * that stops reading does not hold the statement (its slot, its DuckDB work) past it.
   */
  readonly deadline?: { readonly at: number; readonly message: string };
}

export interface PreparedStatementInfo {
  readonly datasetSchema: Schema;
  /** One field per `?` placeholder. */
  readonly parameterSchema: Schema;
  readonly isUpdate: boolean;
}

export interface DbSchemaInfo {
  readonly catalog: string | null;
  readonly schema: string;
}

export interface TableInfo {
  readonly catalog: string | null;
  readonly schema: string | null;
  readonly name: string;
  /** TABLE, VIEW, ... */
  readonly type: string;
  /** Needed only when the caller asked for schemas. */
  readonly arrowSchema?: Schema;
}

export interface TableRef {
  readonly catalog: string | null;
  readonly schema: string | null;
  readonly table: string;
}

export interface PrimaryKeyInfo {
  readonly catalog: string | null;
  readonly schema: string | null;
  readonly table: string;
  readonly column: string;
  readonly keySequence: number;
  readonly keyName: string | null;
}

export interface ForeignKeyFilter {
  readonly pk?: TableRef;
  readonly fk?: TableRef;
}

export interface ForeignKeyInfo {
  readonly pkCatalog: string | null;
  readonly pkSchema: string | null;
  readonly pkTable: string;
  readonly pkColumn: string;
  readonly fkCatalog: string | null;
  readonly fkSchema: string | null;
  readonly fkTable: string;
  readonly fkColumn: string;
  readonly keySequence: number;
  readonly fkKeyName: string | null;
  readonly pkKeyName: string | null;
  readonly updateRule: number;
  readonly deleteRule: number;
}

/** One row of GetXdbcTypeInfo, in the spec's column order. */
export interface XdbcTypeInfo {
  readonly typeName: string;
  readonly dataType: number;
  readonly columnSize: number | null;
  readonly literalPrefix: string | null;
  readonly literalSuffix: string | null;
  readonly createParams: string[] | null;
  readonly nullable: number;
  readonly caseSensitive: boolean;
  readonly searchable: number;
  readonly unsignedAttribute: boolean | null;
  readonly fixedPrecScale: boolean;
  readonly autoIncrement: boolean | null;
  readonly localTypeName: string | null;
  readonly minimumScale: number | null;
  readonly maximumScale: number | null;
  readonly sqlDataType: number;
  readonly datetimeSubcode: number | null;
  readonly numPrecRadix: number | null;
  readonly intervalPrecision: number | null;
}

/** A SqlInfo value; the arm is chosen from the id (see sql-info.ts), not from the JS type. */
export type SqlInfoValue = string | boolean | number | bigint | string[] | Map<number, number[]>;
export type SqlInfoValues = ReadonlyMap<number, SqlInfoValue>;

export interface TransactionSupport<P> {
  /** SqlInfo 8: 1 = transactions, 2 = savepoints too. */
  readonly level: 1 | 2;
  begin(ctx: CallContext<P>): Promise<Uint8Array>;
  end(ctx: CallContext<P>, transactionId: Uint8Array, commit: boolean): Promise<void>;
  beginSavepoint?(ctx: CallContext<P>, transactionId: Uint8Array, name: string): Promise<Uint8Array>;
  endSavepoint?(ctx: CallContext<P>, savepointId: Uint8Array, release: boolean): Promise<void>;
}

export interface SubstraitPlan {
  readonly plan: Uint8Array;
  readonly version: string;
}

/** A Substrait plan with what the client attached to it. */
export interface PlanStatement {
  readonly plan: SubstraitPlan;
  readonly parameters?: Table;
  readonly transactionId?: Uint8Array;
  /** True when run through a prepared-statement handle rather than as an ad-hoc plan. */
  readonly prepared?: boolean;
}

export interface SubstraitSupport<P> {
  describePlan(ctx: CallContext<P>, statement: PlanStatement): Promise<Schema>;
  executePlan(ctx: CallContext<P>, statement: PlanStatement): Promise<QueryResult>;
  executePlanUpdate(ctx: CallContext<P>, statement: PlanStatement): Promise<number>;
  preparePlan(ctx: CallContext<P>, statement: PlanStatement): Promise<PreparedStatementInfo>;
}

export interface IngestRequest {
  readonly table: string;
  readonly schema: string | null;
  readonly catalog: string | null;
  readonly temporary: boolean;
  readonly ifNotExist: number;
  readonly ifExists: number;
  readonly transactionId?: Uint8Array;
  readonly options: ReadonlyMap<string, string>;
}

/** The Arrow stream of a CommandStatementIngest: its schema, then its batches as they come. */
export interface IngestStream {
  readonly schema: Schema;
  readonly batches: AsyncIterable<RecordBatch>;
}

/** ActionCancelQueryResult.CancelResult, numbered as Flight's CancelStatus: unspecified, cancelled, cancelling, not cancellable. */
export type CancelResult = 0 | 1 | 2 | 3;
