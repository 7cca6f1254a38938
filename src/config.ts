import { readFileSync, statSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OrreryError, declareErrors, messageOf } from './errors/index.js';
import { sizeBytes } from './engine/memory-limit.js';
import { s3Settings, type S3Settings } from './lakehouse/index.js';
import { defaultPasses, type Pass } from './maintenance/index.js';

declareErrors('config', {
  CONFIG_INVALID: {
    status: 'FAILED_PRECONDITION',
    meaning: 'a setting (environment variable) cannot be used; the message names the variable',
  },
});

/** A setting that cannot be used; the message names the variable. Start-up stops on it. */
export class ConfigError extends OrreryError {
  constructor(message: string) {
    super('CONFIG_INVALID', message);
    this.name = 'ConfigError';
  }
}

export interface Config {
  readonly flightAddress: string;
  readonly httpAddress: string;
  readonly dataDir: string;
  readonly apiKeysJson: string | undefined;
  readonly adminsJson: string | undefined;
  readonly tls: { cert: Buffer; key: Buffer } | undefined;
  readonly duckdbThreads: number | undefined;
  readonly duckdbMemoryLimit: string | undefined;
  /** ORRERY_MAINTENANCE_MEMORY_LIMIT: the maintenance engine's memory limit (materialization, merges, rollup refreshes). */
  readonly maintenanceMemoryLimit: string;
  /** ORRERY_MAINTENANCE_THREADS: the maintenance engine's DuckDB threads (materialization, merges, rollup refreshes). */
  readonly maintenanceThreads: number;
  /** ORRERY_DUCKDB_EXTENSION_DIR: a folder of the signed extension files; unset: the install step's cache. */
  readonly duckdbExtensionDir: string | undefined;
  /** MICROMEGAS_SQL_CONNECTION_STRING; unset: an embedded Postgres under the data folder. */
  readonly sqlConnectionString: string | undefined;
  /** MICROMEGAS_OBJECT_STORE_URI when it is file://; unset: file://<data folder>/lake. */
  readonly objectStoreUri: string | undefined;
  /** MICROMEGAS_OBJECT_STORE_URI when it is s3://, with the AWS_* settings. */
  readonly s3: S3Settings | undefined;
  readonly retentionDays: number;
  /** ORRERY_VIEW_BACKFILL_HOURS: how far back a new view set defined by DDL is materialized by itself (0: not). */
  readonly viewBackfillHours: number;
  /** ORRERY_MAINTENANCE_PASSES: the materialization passes this process's daemon runs (all of them unset). */
  readonly maintenancePasses: readonly Pass[];
  /** How long a retired partition file stays readable before deletion. */
  readonly retireDelaySeconds: number;
  /** How often one daemon applies retention and deletes retired and orphaned files. */
  readonly housekeepingSeconds: number;
  /** How old an object no Postgres row names must be before housekeeping deletes it. */
  readonly orphanGraceSeconds: number;
  /**
   * ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: the raw rows a window off bucket boundaries must save to be read as rollup buckets
   * plus raw edges, unless an admin's edges are read from the table's files.
   */
  readonly rollupRawEdgesMinRows: number;
  /** ORRERY_ROLLUP_REFRESH_JOBS: whether this process runs the rollups' due refresh jobs (servers and daemons alike). */
  readonly rollupRefreshJobs: boolean;
  /**
   * ORRERY_ROLLUP_KEPT_MEMORY_LIMIT, in bytes: what the in-memory copies of rollups' rows a server reads from (stored
   * rows, rings of kept tails) may take together; by default a quarter of the query engine's memory limit.
   */
  readonly rollupKeptMemoryBytes: number;
  /**
   * The same for the maintenance engine's rollups (refreshes of rollups of rollups read their sources' kept copies):
   * a quarter of ORRERY_MAINTENANCE_MEMORY_LIMIT, in bytes.
   */
  readonly maintenanceKeptMemoryBytes: number;
  readonly maxBodyBytes: number;
  /**
   * ORRERY_INGEST_MARK_MS: how often an ingesting server marks, with one synchronous commit, which of its commit
   * groups' rows Postgres has flushed; the rows themselves commit without waiting for the WAL flush, durable as
   * their payload object's manifest until then. 0: every group's commit waits for the flush.
   */
  readonly ingestMarkMs: number;
  /**
   * ORRERY_INGEST_ACK: when an OTLP request is answered: `committed`, once its rows are committed in Postgres;
   * `synced`, once its commit group's object (payloads and rows) is synced, the commit following (needs marks).
   */
  readonly ingestAck: 'committed' | 'synced';
  /** ORRERY_INGEST_MAX_CONCURRENT, ORRERY_INGEST_MAX_CONCURRENT_PER_KEY, ORRERY_INGEST_MEMORY_BYTES */
  /** ORRERY_SHUTDOWN_GRACE_SECONDS: how long SIGTERM lets OTLP requests and Flight streams under way finish. */
  readonly shutdownGraceSeconds: number;
  /** ORRERY_LOG_FORMAT: `text` lines, or one JSON object per line. */
  readonly logFormat: 'text' | 'json';
  /** ORRERY_INSTANCE: the `instance` label on every metric of this process (a pod's name, say); unset: none. */
  readonly instance: string | undefined;
  readonly ingestLimits: { concurrent: number; concurrentPerKey: number; memoryBytes: number };
  readonly viewDefinitionRefreshSeconds: number;
  /** MICROMEGAS_STATIC_TABLES_URL: a file:// folder of CSV/JSON/Parquet files. */
  readonly staticTablesUrl: string | undefined;
  /** ORRERY_NATIVE: use the native addon (Arrow exporter, bulk ingest, sketch aggregates) when built (auto), require it (on), or never (off). */
  readonly native: 'auto' | 'on' | 'off';
  readonly queryLimits: {
    /** ORRERY_QUERY_TIMEOUT_SECONDS; 0: none. */
    readonly timeoutSeconds: number;
    /** ORRERY_MAX_BIND_ROWS */
    readonly maxBindRows: number;
    readonly admission: {
      /** ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY */
      readonly runningPerKey: number;
      /** ORRERY_MAX_QUEUED_QUERIES_PER_KEY */
      readonly queuedPerKey: number;
      /** ORRERY_MAX_CONCURRENT_QUERIES */
      readonly running: number;
    };
    readonly lanes: {
      /** ORRERY_SMALL_QUERY_MS; 0: one lane. */
      readonly smallMs: number;
      /** ORRERY_MAX_HEAVY_QUERIES */
      readonly running: number;
    };
  };
  /** ORRERY_HEAVY_QUERY_THREADS: DuckDB threads of the heavy lane's engine. */
  readonly heavyQueryThreads: number;
  /** ORRERY_HEAVY_QUERY_MEMORY_LIMIT: the heavy lane engine's memory limit, by default a quarter of the query engine's. */
  readonly heavyQueryMemoryLimit: string;
  /** ORRERY_HEAVY_QUERY_NICE: nice value (0-19) of the threads that work only for the heavy lane; 0: the server's own. */
  readonly heavyQueryNice: number;
}

/** Every setting, from the environment (see the README's table). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const certPath = env.ORRERY_TLS_CERT;
  const keyPath = env.ORRERY_TLS_KEY;
  if (Boolean(certPath) !== Boolean(keyPath))
    throw new ConfigError('ORRERY_TLS_CERT and ORRERY_TLS_KEY must be set together');
  const maintenanceMemoryLimit =
    memoryLimit(env.ORRERY_MAINTENANCE_MEMORY_LIMIT, 'ORRERY_MAINTENANCE_MEMORY_LIMIT') ?? maintenanceMemoryDefault;
  return {
    flightAddress: address(env.ORRERY_FLIGHT_SQL_ADDR, '127.0.0.1:50051', 'ORRERY_FLIGHT_SQL_ADDR'),
    httpAddress: address(env.ORRERY_HTTP_ADDR, '127.0.0.1:4318', 'ORRERY_HTTP_ADDR'),
    dataDir: resolve(env.ORRERY_DATA_DIR || './data'),
    apiKeysJson: env.MICROMEGAS_API_KEYS || undefined,
    adminsJson: env.MICROMEGAS_ADMINS || undefined,
    tls:
      certPath && keyPath
        ? { cert: readFile(certPath, 'ORRERY_TLS_CERT'), key: readFile(keyPath, 'ORRERY_TLS_KEY') }
        : undefined,
    duckdbThreads: positiveInteger(env.ORRERY_DUCKDB_THREADS, 'ORRERY_DUCKDB_THREADS'),
    duckdbMemoryLimit: memoryLimit(env.ORRERY_DUCKDB_MEMORY_LIMIT, 'ORRERY_DUCKDB_MEMORY_LIMIT'),
    maintenanceMemoryLimit,
    maintenanceThreads:
      positiveInteger(env.ORRERY_MAINTENANCE_THREADS, 'ORRERY_MAINTENANCE_THREADS') ?? maintenanceThreadsDefault(),
    duckdbExtensionDir: env.ORRERY_DUCKDB_EXTENSION_DIR ? resolve(env.ORRERY_DUCKDB_EXTENSION_DIR) : undefined,
    sqlConnectionString: postgresUrl(env.MICROMEGAS_SQL_CONNECTION_STRING, 'MICROMEGAS_SQL_CONNECTION_STRING'),
    objectStoreUri: env.MICROMEGAS_OBJECT_STORE_URI?.startsWith('s3://')
      ? undefined
      : fileUrl(env.MICROMEGAS_OBJECT_STORE_URI, 'MICROMEGAS_OBJECT_STORE_URI', false),
    s3: s3Store(env),
    retentionDays: positiveInteger(env.MICROMEGAS_RETENTION_DAYS, 'MICROMEGAS_RETENTION_DAYS') ?? 90,
    viewBackfillHours: nonNegativeInteger(env.ORRERY_VIEW_BACKFILL_HOURS, 'ORRERY_VIEW_BACKFILL_HOURS') ?? 24,
    maintenancePasses: passes(env.ORRERY_MAINTENANCE_PASSES, 'ORRERY_MAINTENANCE_PASSES') ?? defaultPasses,
    retireDelaySeconds: nonNegativeInteger(env.ORRERY_RETIRE_DELAY_SECONDS, 'ORRERY_RETIRE_DELAY_SECONDS') ?? 3600,
    housekeepingSeconds: positiveInteger(env.ORRERY_HOUSEKEEPING_SECONDS, 'ORRERY_HOUSEKEEPING_SECONDS') ?? 3600,
    orphanGraceSeconds: positiveInteger(env.ORRERY_ORPHAN_GRACE_SECONDS, 'ORRERY_ORPHAN_GRACE_SECONDS') ?? 21600,
    rollupRawEdgesMinRows:
      nonNegativeInteger(env.ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS, 'ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS') ?? 1_000_000,
    rollupRefreshJobs:
      (oneOf(env.ORRERY_ROLLUP_REFRESH_JOBS, ['on', 'off'], 'ORRERY_ROLLUP_REFRESH_JOBS') ?? 'on') === 'on',
    rollupKeptMemoryBytes: sizeBytes(
      memoryLimit(env.ORRERY_ROLLUP_KEPT_MEMORY_LIMIT, 'ORRERY_ROLLUP_KEPT_MEMORY_LIMIT') ??
        queryEngineQuarter(env.ORRERY_DUCKDB_MEMORY_LIMIT),
    ),
    maintenanceKeptMemoryBytes: Math.floor(sizeBytes(maintenanceMemoryLimit) / 4),
    maxBodyBytes: positiveInteger(env.ORRERY_MAX_BODY_BYTES, 'ORRERY_MAX_BODY_BYTES') ?? 100 * 1024 * 1024,
    ingestMarkMs: nonNegativeInteger(env.ORRERY_INGEST_MARK_MS, 'ORRERY_INGEST_MARK_MS') ?? 200,
    ingestAck: ingestAck(env),
    shutdownGraceSeconds: nonNegativeSeconds(env.ORRERY_SHUTDOWN_GRACE_SECONDS, 'ORRERY_SHUTDOWN_GRACE_SECONDS') ?? 25,
    logFormat: oneOf(env.ORRERY_LOG_FORMAT, ['text', 'json'], 'ORRERY_LOG_FORMAT') ?? 'text',
    instance: env.ORRERY_INSTANCE || undefined,
    ingestLimits: {
      concurrent: positiveInteger(env.ORRERY_INGEST_MAX_CONCURRENT, 'ORRERY_INGEST_MAX_CONCURRENT') ?? 256,
      concurrentPerKey:
        positiveInteger(env.ORRERY_INGEST_MAX_CONCURRENT_PER_KEY, 'ORRERY_INGEST_MAX_CONCURRENT_PER_KEY') ?? 64,
      memoryBytes: positiveInteger(env.ORRERY_INGEST_MEMORY_BYTES, 'ORRERY_INGEST_MEMORY_BYTES') ?? 256 * 1024 * 1024,
    },
    viewDefinitionRefreshSeconds:
      positiveInteger(env.MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS, 'MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS') ??
      60,
    staticTablesUrl: fileUrl(env.MICROMEGAS_STATIC_TABLES_URL, 'MICROMEGAS_STATIC_TABLES_URL', true),
    native: oneOf(env.ORRERY_NATIVE, ['auto', 'on', 'off'], 'ORRERY_NATIVE') ?? 'auto',
    queryLimits: {
      timeoutSeconds: nonNegativeSeconds(env.ORRERY_QUERY_TIMEOUT_SECONDS, 'ORRERY_QUERY_TIMEOUT_SECONDS') ?? 300,
      maxBindRows: positiveInteger(env.ORRERY_MAX_BIND_ROWS, 'ORRERY_MAX_BIND_ROWS') ?? 1000,
      admission: {
        runningPerKey:
          positiveInteger(env.ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY, 'ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY') ?? 4,
        queuedPerKey:
          nonNegativeInteger(env.ORRERY_MAX_QUEUED_QUERIES_PER_KEY, 'ORRERY_MAX_QUEUED_QUERIES_PER_KEY') ?? 32,
        running: positiveInteger(env.ORRERY_MAX_CONCURRENT_QUERIES, 'ORRERY_MAX_CONCURRENT_QUERIES') ?? 16,
      },
      lanes: {
        smallMs: nonNegativeInteger(env.ORRERY_SMALL_QUERY_MS, 'ORRERY_SMALL_QUERY_MS') ?? 1000,
        running: positiveInteger(env.ORRERY_MAX_HEAVY_QUERIES, 'ORRERY_MAX_HEAVY_QUERIES') ?? 1,
      },
    },
    heavyQueryThreads: positiveInteger(env.ORRERY_HEAVY_QUERY_THREADS, 'ORRERY_HEAVY_QUERY_THREADS') ?? 1,
    heavyQueryMemoryLimit:
      memoryLimit(env.ORRERY_HEAVY_QUERY_MEMORY_LIMIT, 'ORRERY_HEAVY_QUERY_MEMORY_LIMIT') ??
      queryEngineQuarter(env.ORRERY_DUCKDB_MEMORY_LIMIT),
    heavyQueryNice: niceValue(env.ORRERY_HEAVY_QUERY_NICE, 'ORRERY_HEAVY_QUERY_NICE') ?? 0,
  };
}

/**
 * The maintenance engine's memory limit unless set: what it sorts and aggregates (a partition's rows ordered
 * by time, a merge of an hour of partitions) spills to disk past it, so that materializing millions of rows
 * keeps the server's memory bounded (issue 16, 2 M log records as one partition: the server's peak RSS 2.6-3.5
 * GiB on DuckDB's default, 80% of the machine's memory; 1.02-1.09 GiB at 384 MiB, 8 runs of 8 done). At 256 MiB
 * the peak was 630-650 MiB, but one run of three ran out of memory (DuckDB's sort and Parquet writer on two
 * threads hold more than the limit's accounting allows for), so the default keeps the margin.
 */
const maintenanceMemoryDefault = '384MiB';

/**
 * Half the cores, at least one: the maintenance engine shares the host with the query engine and ingestion,
 * and under its memory limit more threads are not faster. On 2 cores one thread materialized 2 M records as
 * one partition in 7.3-7.5 s and 7.8-7.9 CPU-s against 9.3-13.1 s and 12.7-13.9 CPU-s on two (the sort and
 * the Parquet writer spilling and contending under 384 MiB), peak RSS 767-771 MiB against 915-943
 * (bench/materialization/run.sh --server-only, alternated, load 2.6-3.4).
 */
function maintenanceThreadsDefault(): number {
  return Math.max(1, Math.floor(availableParallelism() / 2));
}

/**
 * A quarter of the query engine's memory limit (ORRERY_DUCKDB_MEMORY_LIMIT, else DuckDB's default of 80%
 * of the machine's memory), in MiB: the heavy lane's own engine would otherwise take as much again as the
 * query engine, so heavy statements could hold the memory small ones need; the rollups' kept copies, kept
 * in the query engine, would leave ordinary statements too little of it.
 */
function queryEngineQuarter(queryLimit: string | undefined): string {
  const bytes = queryLimit ? sizeBytes(queryLimit) : 0.8 * totalmem();
  return `${Math.max(1, Math.floor(bytes / 4 / 2 ** 20))}MiB`;
}

/** Seconds, fractions allowed (0.5); 0 means no limit. */
function nonNegativeSeconds(value: string | undefined, variable: string): number | undefined {
  if (!value) return undefined;
  if (!/^\d+(\.\d+)?$/.test(value))
    throw new ConfigError(`${variable} must be a number of seconds (0: no limit), got '${value}'`);
  return Number(value);
}

function address(value: string | undefined, fallback: string, variable: string): string {
  const text = value || fallback;
  if (!/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/.test(text))
    throw new ConfigError(`${variable} must be host:port, got '${text}'`);
  return text;
}

function positiveInteger(value: string | undefined, variable: string): number | undefined {
  if (!value) return undefined;
  if (!/^[1-9]\d*$/.test(value)) throw new ConfigError(`${variable} must be a positive integer, got '${value}'`);
  return Number(value);
}

function nonNegativeInteger(value: string | undefined, variable: string): number | undefined {
  if (!value) return undefined;
  if (!/^\d+$/.test(value)) throw new ConfigError(`${variable} must be a non-negative integer, got '${value}'`);
  return Number(value);
}

function niceValue(value: string | undefined, variable: string): number | undefined {
  const nice = nonNegativeInteger(value, variable);
  if (nice !== undefined && nice > 19) throw new ConfigError(`${variable} must be from 0 to 19, got '${value}'`);
  return nice;
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], variable: string): T | undefined {
  if (!value) return undefined;
  if (!allowed.includes(value as T))
    throw new ConfigError(`${variable} must be one of ${allowed.join(', ')}, got '${value}'`);
  return value as T;
}

/** Passes named in a comma-separated list, each a name of defaultPasses; run in defaultPasses' order. */
function passes(value: string | undefined, variable: string): readonly Pass[] | undefined {
  if (!value) return undefined;
  const names = value.split(',').map((name) => name.trim());
  const known = defaultPasses.map((pass) => pass.name);
  if (names.some((name) => !known.includes(name)))
    throw new ConfigError(`${variable} must be a comma-separated list of ${known.join(', ')}, got '${value}'`);
  return defaultPasses.filter((pass) => names.includes(pass.name));
}

function readFile(path: string, variable: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigError(`${variable}: cannot read ${path}: ${(error as Error).message}`);
  }
}

/** A `file://` URL of a local folder; `existing`: the folder must exist now. */
function fileUrl(value: string | undefined, variable: string, existing: boolean): string | undefined {
  if (!value) return undefined;
  if (!URL.canParse(value)) throw new ConfigError(`${variable}: not a URL: '${value}'`);
  const url = new URL(value);
  if (url.protocol !== 'file:')
    throw new ConfigError(
      `${variable}: only ${variable === 'MICROMEGAS_OBJECT_STORE_URI' ? 'file:// and s3://' : 'file://'} URLs are supported, got '${value}'`,
    );
  let path: string;
  try {
    path = fileURLToPath(url);
  } catch (error) {
    throw new ConfigError(`${variable}: ${messageOf(error)}`);
  }
  if (existing && !statSync(path, { throwIfNoEntry: false })?.isDirectory()) {
    throw new ConfigError(`${variable}: ${path} is not a folder`);
  }
  return value;
}

/** The s3:// object store's settings, when MICROMEGAS_OBJECT_STORE_URI names one. */
function s3Store(env: NodeJS.ProcessEnv): S3Settings | undefined {
  const uri = env.MICROMEGAS_OBJECT_STORE_URI;
  if (!uri?.startsWith('s3://')) return undefined;
  try {
    return s3Settings(uri, env);
  } catch (error) {
    throw new ConfigError(messageOf(error));
  }
}

function postgresUrl(value: string | undefined, variable: string): string | undefined {
  if (!value) return undefined;
  const protocol = URL.canParse(value) ? new URL(value).protocol : '';
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    throw new ConfigError(`${variable} must be a postgres://user:password@host:port/database URL`);
  }
  return value;
}

/** DuckDB's memory_limit syntax: a number and a unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB). */
function memoryLimit(value: string | undefined, variable: string): string | undefined {
  if (!value) return undefined;
  if (!/^\d+(\.\d+)?\s*(B|[KMGT]i?B)$/i.test(value.trim())) {
    throw new ConfigError(`${variable} must be a size such as 4GB or 512MiB, got '${value}'`);
  }
  return value;
}

/** ORRERY_INGEST_ACK; `synced` relies on the marks (a replay is what commits a group whose server died first). */
function ingestAck(env: NodeJS.ProcessEnv): 'committed' | 'synced' {
  const ack = oneOf(env.ORRERY_INGEST_ACK, ['committed', 'synced'], 'ORRERY_INGEST_ACK') ?? 'committed';
  if (ack === 'synced' && nonNegativeInteger(env.ORRERY_INGEST_MARK_MS, 'ORRERY_INGEST_MARK_MS') === 0)
    throw new ConfigError('ORRERY_INGEST_ACK=synced needs the replay marks: ORRERY_INGEST_MARK_MS may not be 0');
  return ack;
}
