import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keyring, loadOrCreateLocalCredentials, parseAdmins, parseApiKeys, type Principal } from './auth/index.js';
import { ConfigError, type Config } from './config.js';
import { closeAll, isErrorOf, type Closer } from './errors/index.js';
import {
  DuckDBEngine,
  engineErrors,
  duckdbBuild,
  extensionCacheFolder,
  findExtensions,
  missingExtensionsHelp,
  lowPriorityProblem,
  nativeExportProblem,
  nativeJsonLogsSeal,
  nativeLogsPayloads,
  nativeOrderedLogsWriter,
  nativeLogsScan,
  nativeLogsSeal,
  nativeSyncedWrite,
  nativeZstdPayload,
  type EngineOptions,
} from './engine/index.js';
import { FlightSqlServer } from './flight/index.js';
import { HttpServer, IngestionService } from './ingestion/index.js';
import {
  FileObjectStore,
  PartitionCache,
  S3ObjectStore,
  lostPartitionCounts,
  quarantinedPartitionCounts,
  type ObjectStore,
} from './lakehouse/index.js';
import { MaintenanceDaemon, Materializer, quarantineCounts } from './maintenance/index.js';
import { MetadataStore } from './metadata/index.js';
import { OrreryMetrics, type KeptEngine } from './metrics/index.js';
import { DdlService, DenyRules, SqlService } from './sql/index.js';
import {
  SeriesTables,
  attachLakeSql,
  prepareLakeMetadata,
  indexSeriesTables,
  lakeFilesKey,
  rebucketSeriesTables,
  seriesColumnInstaller,
  seriesIndexInstaller,
} from './tables/index.js';
import { KeptBudget, RefreshJobs, Rollups, rollupInstaller } from './rollups/index.js';
import {
  partitionStatsInstaller,
  projectionInstaller,
  registerInstaller,
  storedColumnInstaller,
} from './resources/index.js';
import {
  ViewLoader,
  ViewRegistry,
  builtinViewSets,
  compatibilityMacros,
  findStaticTables,
  nativeSketchParameters,
  sketchStatements,
  staticTableStatements,
} from './views/index.js';

export type Log = (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;

/** Which parts run: `serve` answers queries and ingests, `maintain` runs the daemon, `all` both. */
export type Role = 'serve' | 'maintain' | 'all';

/** A running Orrery. */
export interface Orrery {
  /** The Flight SQL port (0 when this role serves no queries). */
  readonly flightPort: number;
  readonly httpPort: number;
  readonly daemon?: MaintenanceDaemon;
  /** The metadata store, for embedding and tests. */
  readonly metadata: MetadataStore;
  readonly store: ObjectStore;
  /** Closes every role, each even when another fails; rejects with an AggregateError naming each failure. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export const version: string = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * Builds the keyring from the settings, or from the generated local admin key when none are
 * set: then also how to connect with it (said once the server listens) and, when this start
 * created the key's file, its path (removed if the start fails).
 */
export function keyringFromConfig(
  config: Config,
  log: Log,
): { keyring: Keyring; connectHint?: (flightPort: number) => string; createdFile?: string } {
  if (config.apiKeysJson) {
    const keys = parseApiKeys(config.apiKeysJson);
    const admins = config.adminsJson ? parseAdmins(config.adminsJson, keys) : new Set<string>();
    if (admins.size === 0) log('warn', 'MICROMEGAS_ADMINS names no key: admin statements are refused for everyone');
    return { keyring: new Keyring(keys, admins) };
  }
  if (config.adminsJson) parseAdmins(config.adminsJson, []);
  const { key, created, path } = loadOrCreateLocalCredentials(config.dataDir);
  const host = hostOf(config.flightAddress);
  // The port the server listens on, which is not the configured one when that is 0.
  const connectHint = (port: number): string =>
    `${created ? 'created' : 'using'} the local admin key in ${path} (no MICROMEGAS_API_KEYS set). Connect with:\n` +
    `  JDBC:    jdbc:arrow-flight-sql://${host}:${port}?useEncryption=false&user=${key.name}&password=${key.key}\n` +
    `  ADBC:    adbc_driver_flightsql.dbapi.connect("grpc://${host}:${port}", db_kwargs={"username": "${key.name}", "password": "${key.key}"})\n` +
    `  headers: authorization: Bearer ${key.key}  (Flight SQL, OTLP/HTTP, and GET /metrics on the HTTP address)`;
  return { keyring: new Keyring([key], new Set([key.name])), connectHint, createdFile: created ? path : undefined };
}

/** Starts the roles asked for; on failure, stops what had started. */
export async function startOrrery(config: Config, log: Log, role: Role = 'all'): Promise<Orrery> {
  // Closed in the reverse order of start: stop accepting work first, release the pools last.
  const closers: Closer[] = [];
  let started = false;
  const closeStarted = (): Promise<void> => closeAll([...closers].reverse());
  // A graceful shutdown first drains: /ready turns false, OTLP requests and Flight streams under way
  // finish (new ones go elsewhere) within ORRERY_SHUTDOWN_GRACE_SECONDS; then everything closes.
  const graceMs = config.shutdownGraceSeconds * 1000;
  let flightServer: FlightSqlServer<Principal> | undefined;
  let httpServer: HttpServer | undefined;
  const drain = async (): Promise<void> => {
    await Promise.all([httpServer?.drain(graceMs), flightServer?.close(graceMs)]);
  };
  try {
    const { keyring, connectHint, createdFile } = keyringFromConfig(config, log);
    if (createdFile)
      closers.push({
        name: 'the generated key file',
        close: () => (started ? undefined : rmSync(createdFile, { force: true })),
      });
    const threadPool = Number(process.env.UV_THREADPOOL_SIZE || 4);
    if (role !== 'maintain' && threadPool < config.queryLimits.admission.running + 4) {
      log(
        'warn',
        `libuv's thread pool has ${threadPool} threads, fewer than ORRERY_MAX_CONCURRENT_QUERIES + 4: heavy statements can hold up ` +
          'OTLP ingestion and other statements. Start Orrery with the orrery command (dist/src/orrery.cjs), which sizes it, or set UV_THREADPOOL_SIZE',
      );
    }
    const metrics = new OrreryMetrics();
    // An engine's kept copies of rollups' rows (stored rows, rings of kept tails), charged to its own budget: each
    // engine's memory limit bounds its own (kept-budget.ts), and /metrics tells of each by engine.
    const keptBudget = (engine: KeptEngine, limit: number): KeptBudget => {
      const budget = new KeptBudget(limit, ({ kind }) => metrics.rollupKeptEvictions.inc({ engine, kind }));
      metrics.countKeptWith(engine, budget);
      return budget;
    };
    const metadata = await MetadataStore.open({
      connectionString: config.sqlConnectionString,
      dataDir: config.dataDir,
      log,
    });
    closers.push({ name: 'the metadata store', close: () => metadata.close() });
    const native = nativeSetting(config, log);
    const store: ObjectStore = config.s3
      ? new S3ObjectStore(config.s3)
      : new FileObjectStore(
          config.objectStoreUri ? fileURLToPath(config.objectStoreUri) : join(config.dataDir, 'lake'),
          (native ? nativeSyncedWrite() : null) ?? undefined,
        );
    closers.push({ name: 'the object store', close: () => store.close() });
    const views = new ViewRegistry(builtinViewSets);
    const statics = config.staticTablesUrl ? await findStaticTables(config.staticTablesUrl) : undefined;
    for (const file of statics?.skipped ?? [])
      log('warn', `static tables: skipped ${file} (not CSV/JSON/Parquet, or not a valid table name)`);
    const reservedNames = new Set([
      ...builtinViewSets.map((v) => v.name),
      ...(statics?.tables ?? []).map((t) => t.name),
    ]);
    const engineOptions: EngineOptions = {
      nativeExport: native,
      nativeSketches: native ? nativeSketchParameters : undefined,
      nativeTailRows: native,
      readableDirectories: [store.root, ...(statics ? [statics.folder] : [])],
      locationAliases: store.aliases,
      secrets: store.duckdbSetup,
      startupSql: [
        ...store.duckdbSettings,
        ...compatibilityMacros,
        ...sketchStatements(native),
        ...staticTableStatements(statics?.tables ?? []),
      ],
      memoryLimit: config.duckdbMemoryLimit,
      threads: config.duckdbThreads,
      onConflictRerun: () => metrics.conflictReruns.inc(),
    };
    const extensions = await lakeExtensions(config, log);
    if (store.needsHttpfs && !extensions.files.some((file) => file.endsWith('/httpfs.duckdb_extension')))
      throw new ConfigError(
        `MICROMEGAS_OBJECT_STORE_URI is s3://: DuckDB needs its httpfs extension. ${extensions.help('httpfs is missing')}`,
      );
    if (extensions.files.length > 0) {
      await prepareLakeMetadata(metadata);
      // DuckLake creates a table's folder, not the folders above it (S3 has no folders to make).
      const tablesDir = store.location(lakeFilesKey);
      if (store instanceof FileObjectStore) mkdirSync(tablesDir, { recursive: true });
      extensions.attach.push(attachLakeSql(metadata.connectionString, tablesDir));
    }

    // The materializer's scratch files (read once by the maintenance engine, then deleted) stay on this host.
    const scratch = new FileObjectStore(mkdtempSync(join(tmpdir(), 'orrery-scratch-')));
    closers.push({ name: 'the scratch folder', close: () => rmSync(scratch.root, { recursive: true, force: true }) });
    // With the addon, logs payloads stored as received are decoded by DuckDB's threads straight into columns.
    const { engine: maintenanceEngine, lake: maintenanceLake } = await createEngine(
      {
        ...engineOptions,
        // Bounded, spilling to the scratch folder past it (sorts of a partition's rows, merges, rollup refreshes).
        memoryLimit: config.maintenanceMemoryLimit,
        threads: config.maintenanceThreads,
        tempDirectory: join(scratch.root, 'spill'),
        readableDirectories: [...(engineOptions.readableDirectories ?? []), scratch.root],
        nativeLogsPayloads: native ? scratch.root : undefined,
      },
      extensions,
      log,
    );
    const seriesNames = (): Set<string> => new Set([...reservedNames, ...views.all().map((v) => v.name)]);
    closers.push({ name: 'the maintenance engine', close: () => maintenanceEngine.close() });
    const loader = new ViewLoader({
      db: metadata,
      engine: maintenanceEngine,
      registry: views,
      builtins: builtinViewSets,
      refreshSeconds: config.viewDefinitionRefreshSeconds,
      log,
      onFailure: (name) => metrics.viewDefinitionFailures.inc({ view_set: name }),
    });
    await loader.load();
    loader.start();
    closers.push({ name: 'the view set loader', close: () => loader.close() });
    const lakehouse = { db: metadata, store, views, loader };
    const viewSetSources = { get: (name: string) => views.get(name), store, retentionDays: config.retentionDays };
    // The series tables as the maintenance engine reads them: its rollups' and housekeeping's (retention, re-bucketing).
    const maintenanceTables = maintenanceLake ? new SeriesTables(maintenanceEngine, metadata, seriesNames) : undefined;
    // The daemon's rollups: they refresh, and record what each change to a view set's partitions invalidated.
    const maintenanceRollups = maintenanceTables
      ? new Rollups(
          maintenanceEngine,
          metadata,
          maintenanceTables,
          seriesNames,
          viewSetSources,
          // A refresh of a rollup of a rollup reads its source's copies, made in the maintenance engine.
          { keptBudget: keptBudget('maintenance', config.maintenanceKeptMemoryBytes) },
        )
      : undefined;
    await maintenanceRollups?.prepare();
    // The ingestion service, created below: the materializer waits for what it acknowledged (see
    // MaterializerOptions.acknowledged).
    const answering: { ingestion?: IngestionService } = {};
    const materializer = new Materializer({
      db: metadata,
      store,
      scratch,
      engine: maintenanceEngine,
      protobufLogs: native ? (nativeLogsPayloads() ?? undefined) : undefined,
      orderedLogsWriter: native ? (nativeOrderedLogsWriter() ?? undefined) : undefined,
      viewSet: (name) => views.get(name),
      retireDelaySeconds: config.retireDelaySeconds,
      orphanGraceSeconds: config.orphanGraceSeconds,
      onPartitionsChanged: maintenanceRollups
        ? (tx, change) => maintenanceRollups.partitionsChanged(tx, change)
        : undefined,
      version,
      log,
      onUnreadable: (viewSet, outcome) => metrics.unreadablePartitions.inc({ view_set: viewSet, outcome }),
      acknowledged: () => answering.ingestion?.committed() ?? Promise.resolve(),
    });
    metrics.countQuarantinedWith({
      blocks: () => quarantineCounts(metadata),
      partitions: () => quarantinedPartitionCounts(metadata),
      lost: () => lostPartitionCounts(metadata),
    });

    let flightPort = 0;
    let daemon: MaintenanceDaemon | undefined;
    if (role !== 'maintain') {
      // Spilling past its memory limit to this host's scratch folder: DuckDB's default for an in-memory database is
      // `.tmp` under the working directory, which may be a source tree or not writable.
      const { engine, lake } = await createEngine(
        { ...engineOptions, tempDirectory: join(scratch.root, 'query-spill') },
        extensions,
        log,
      );
      closers.push({ name: 'the query engine', close: () => engine.close() });
      const tables = lake ? new SeriesTables(engine, metadata, seriesNames) : undefined;
      const rollups = tables
        ? new Rollups(engine, metadata, tables, seriesNames, viewSetSources, {
            rawEdgesMinRows: config.rollupRawEdgesMinRows,
            keptBudget: keptBudget('query', config.rollupKeptMemoryBytes),
          })
        : undefined;
      await rollups?.prepare();
      // This server's publications plan column entries against its view sets.
      // Column entries on a series table are DuckLake columns of it; on a view set, columns of its partition files.
      const viewSetColumns = storedColumnInstaller((name) => views.get(name));
      registerInstaller(
        'column',
        tables ? seriesColumnInstaller(tables, engine, viewSetColumns) : viewSetColumns,
        metadata,
      );
      registerInstaller(
        'projection',
        projectionInstaller((name) => views.get(name)),
        metadata,
      );
      // Index entries on a series table are DuckLake's statistics and sort order; on a view set, partition statistics.
      const viewSetIndexes = partitionStatsInstaller((name) => views.get(name));
      registerInstaller(
        'index',
        tables ? seriesIndexInstaller(tables, engine, viewSetIndexes) : viewSetIndexes,
        metadata,
      );
      if (rollups) {
        tables?.addDependents('rollup', (table) => rollups.dependentsOf(table));
        // This server's publications install resources files' rollup entries as its rollups.
        registerInstaller('rollup', rollupInstaller(rollups, engine), metadata);
      }
      const denyRules = new DenyRules(metadata, engine);
      const ddl = new DdlService({
        db: metadata,
        engine,
        registry: views,
        loader,
        reservedNames: () => reservedNames,
        retireDelaySeconds: config.retireDelaySeconds,
        rollupsOn: rollups ? (name) => rollups.dependentsOf(name) : undefined,
        replaced: async (name) => {
          for await (const step of materializer.rebuildFailedAudiences(views.all(), name)) log('info', step);
        },
      });
      // Partition lists kept between statements, dropped when any process changes them.
      metadata.changes.start();
      const partitions = new PartitionCache(metadata, metadata.changes);
      const backend = {
        lakehouse: { ...lakehouse, tables, rollups, partitions },
        materializer,
        retireDelaySeconds: config.retireDelaySeconds,
        retentionDays: config.retentionDays,
        denyRules,
        ddl,
      };
      // The heavy lane's engine (query-lanes.ts), made when a statement is first demoted to it.
      let heavy: Promise<DuckDBEngine> | undefined;
      const heavyEngine = (): Promise<DuckDBEngine> =>
        (heavy ??= createEngine(
          {
            ...engineOptions,
            threads: config.heavyQueryThreads,
            memoryLimit: config.heavyQueryMemoryLimit,
            tempDirectory: join(scratch.root, 'heavy-spill'),
            nice: heavyLaneNice(config.heavyQueryNice, engineOptions.nativeExport ?? false, log),
          },
          extensions,
          log,
        ).then(
          ({ engine: made }) => made,
          (error: unknown) => {
            heavy = undefined;
            throw error;
          },
        ));
      closers.push({
        name: 'the heavy-lane engine',
        close: async () => (await heavy?.catch(() => undefined))?.close(),
      });
      const service = new SqlService(keyring, engine, version, backend, {
        limits: config.queryLimits,
        metrics,
        heavyEngine,
        log,
      });
      closers.push({ name: 'the SQL service', close: () => service.close() });
      const server = new FlightSqlServer<Principal>(service, {
        address: config.flightAddress,
        tls: config.tls,
        log,
      });
      closers.push({ name: 'the Flight SQL server', close: () => server.close(graceMs) });
      flightServer = server;
      ({ port: flightPort } = await server.start());
      log('info', `Flight SQL listening on ${hostOf(config.flightAddress)}:${flightPort}${config.tls ? ' (TLS)' : ''}`);
    }
    if (role !== 'serve') {
      daemon = new MaintenanceDaemon({
        db: metadata,
        store,
        materializer,
        viewSets: () => views.all(),
        retentionDays: config.retentionDays,
        housekeepingSeconds: config.housekeepingSeconds,
        orphanGraceSeconds: config.orphanGraceSeconds,
        backfillSeconds: config.viewBackfillHours * 3600,
        passes: config.maintenancePasses,
        onPartitionsExpired: maintenanceRollups
          ? (tx, change) => maintenanceRollups.partitionsChanged(tx, change)
          : undefined,
        seriesRetention: maintenanceTables
          ? () =>
              maintenanceTables.applyRetention(
                maintenanceRollups ? (...args) => maintenanceRollups.retain(...args) : undefined,
              )
          : undefined,
        // Series tables' inlined rows, then rollups' stored ones (each under its rollup's refresh lock).
        seriesFlush: maintenanceTables
          ? async () => [
              ...(await maintenanceTables.flushInlined()),
              ...((await maintenanceRollups?.flushStored()) ?? []),
            ]
          : undefined,
        seriesBuckets: maintenanceTables
          ? () => rebucketSeriesTables(maintenanceTables, maintenanceEngine, metadata)
          : undefined,
        seriesTextIndexes: maintenanceTables
          ? () =>
              indexSeriesTables(maintenanceTables, {
                db: metadata,
                store,
                lakeRows: (sql: string) => maintenanceEngine.values(sql),
              })
          : undefined,
        log,
        onOutcome: (view, outcome) => metrics.materializations.inc({ view_set: view, outcome }),
        onBackfill: (view, outcome) => metrics.backfilledRanges.inc({ view_set: view, outcome }),
        onHousekeeping: (report) => {
          for (const [kind, count] of Object.entries(report)) metrics.housekeepingDeleted.inc({ kind }, count);
        },
      });
      closers.push({ name: 'the maintenance daemon', close: () => daemon!.close() });
      daemon.start();
      log('info', 'maintenance daemon started');
    }
    // Every role runs the due refresh jobs, so a rollup made on a server with no daemon anywhere is refreshed
    // at once and every minute; the rollup's lock and the job's due time, checked under it, share them out.
    if (maintenanceRollups && config.rollupRefreshJobs) {
      const jobs = new RefreshJobs(maintenanceRollups, metadata, log, (report) => {
        metrics.rollupRefreshDuration.observe(
          { rollup: report.rollup, outcome: report.failed ? 'failed' : 'ok' },
          report.seconds,
        );
        if (!report.outcome) return;
        metrics.rollupPendingBuckets.set({ rollup: report.rollup }, report.outcome.pendingBuckets);
        const watermark = report.outcome.watermark;
        if (watermark !== null && !/^-?\d+$/.test(watermark))
          metrics.rollupLag.set(
            { rollup: report.rollup },
            (Date.now() - Date.parse(`${watermark.replace(' ', 'T')}Z`)) / 1000,
          );
      });
      closers.push({ name: 'the rollup refresh jobs', close: () => jobs.close() });
      jobs.start();
    }
    const ingestion =
      role !== 'maintain'
        ? new IngestionService(
            metadata,
            store,
            metrics,
            native ? nativeLogsScan() : null,
            native ? nativeLogsSeal() : null,
            native ? nativeJsonLogsSeal() : null,
            config.ingestMarkMs > 0
              ? {
                  markIntervalMs: config.ingestMarkMs,
                  answerSynced: config.ingestAck === 'synced',
                  log: (message, error) => log('warn', message, error),
                }
              : undefined,
            native ? nativeZstdPayload() : null,
          )
        : undefined;
    answering.ingestion = ingestion;
    if (ingestion) {
      closers.push({ name: 'the ingest replay marks', close: () => ingestion.close() });
      // What a crash of Postgres lost of acknowledged requests is inserted again before any new request.
      const replayed = await ingestion.recover();
      if (replayed.listed > 0)
        log(
          'info',
          `ingest: after a crash, ${replayed.listed} commit group(s) named in the replay marks' windows, ` +
            `${replayed.readWhole} with rows missing from Postgres, ${replayed.inserted} inserted again` +
            (replayed.refused > 0 ? `, ${replayed.refused} refused by Postgres and left out` : ''),
        );
    }
    const http = new HttpServer({
      address: config.httpAddress,
      keyring,
      ingestion,
      metrics,
      maxBodyBytes: config.maxBodyBytes,
      ingestLimits: config.ingestLimits,
      readiness: async () => {
        await metadata.query('SELECT 1');
        await store.list('.ready-probe');
      },
      log,
    });
    closers.push({ name: 'the HTTP server', close: () => http.close() });
    httpServer = http;
    const { port: httpPort } = await http.start();
    // Unset, Prometheus's own `instance` (the scraped host:port) tells the processes apart.
    if (config.instance) metrics.labelInstance(config.instance);
    log('info', `HTTP (OTLP, /health, /ready, /metrics) listening on ${hostOf(config.httpAddress)}:${httpPort}`);
    if (connectHint) log('info', connectHint(flightPort));
    started = true;
    let closing: Promise<void> | undefined;
    const close = (): Promise<void> => (closing ??= drain().then(closeStarted));
    return { flightPort, httpPort, daemon, metadata, store, close, [Symbol.asyncDispose]: close };
  } catch (error) {
    await closeStarted().catch((failure: unknown) => log('error', 'closing what had started failed', failure));
    throw error;
  }
}

interface LakeExtensions {
  readonly files: string[];
  /** The DuckLake catalog's ATTACH, once the extensions are known to be there. */
  readonly attach: string[];
  /** What to log when they do not load. */
  readonly help: (problem: string) => string;
}

/** The signed extension files series tables need; none, with a warning saying how to supply them, when one is missing. */
async function lakeExtensions(config: Config, log: Log): Promise<LakeExtensions> {
  const build = await duckdbBuild();
  const folder = config.duckdbExtensionDir ?? extensionCacheFolder(build);
  const help = (problem: string): string => missingExtensionsHelp(build, folder, problem);
  const { files, missing } = findExtensions(folder);
  if (missing.length === 0) return { files, attach: [], help };
  log('warn', help(`missing ${missing.join(', ')}`));
  return { files: [], attach: [], help };
}

/**
 * An engine with the extensions loaded and the DuckLake catalog attached (`lake`), or without
 * them and a warning when DuckDB refuses either; the next engine then does not try again.
 */
async function createEngine(
  options: EngineOptions,
  extensions: LakeExtensions,
  log: Log,
): Promise<{ engine: DuckDBEngine; lake: boolean }> {
  if (extensions.files.length === 0) return { engine: await DuckDBEngine.create(options), lake: false };
  try {
    const engine = await DuckDBEngine.create({ ...options, extensions: extensions.files, attach: extensions.attach });
    return { engine, lake: extensions.attach.length > 0 };
  } catch (error) {
    if (!isErrorOf(error, engineErrors, 'EXTENSION_LOAD_FAILED', 'CATALOG_ATTACH_FAILED')) throw error;
    log('warn', extensions.help(error.message));
    extensions.files.length = 0;
    extensions.attach.length = 0;
    return { engine: await DuckDBEngine.create(options), lake: false };
  }
}

/**
 * Whether the engine uses the native addon (the Arrow exporter, bulk ingest, the sketch
 * aggregates): ORRERY_NATIVE, and whether the addon is built.
 */
function nativeSetting(config: Config, log: Log): boolean {
  if (config.native === 'off') return false;
  const problem = nativeExportProblem();
  if (!problem) return true;
  const reason = `the native Arrow exporter is not available (${problem.split('\n')[0]}); node scripts/build-native.mjs builds it with g++ on Linux`;
  if (config.native === 'on') throw new ConfigError(`ORRERY_NATIVE=on: ${reason}`);
  log(
    'warn',
    `${reason}. Results use the JavaScript converter, a query failing after its first rows fails without DuckDB's reason, and distinct_sketch() and merge() run as slower SQL`,
  );
  return false;
}

/**
 * The nice value the heavy lane's threads run at (ORRERY_HEAVY_QUERY_NICE), or 0 with a warning when
 * this process cannot lower a thread's priority (no native addon, setpriority refused): the lane
 * then works at the server's priority, as it did before.
 */
function heavyLaneNice(nice: number, native: boolean, log: Log): number {
  if (nice === 0) return 0;
  const problem = native ? lowPriorityProblem(nice) : 'the native addon is not used (ORRERY_NATIVE)';
  if (!problem) return nice;
  log('warn', `the heavy lane's threads run at the server's priority, not at nice ${nice}: ${problem}`);
  return 0;
}

const hostOf = (address: string): string => address.slice(0, address.lastIndexOf(':'));
