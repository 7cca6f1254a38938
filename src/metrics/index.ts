// Prometheus metrics every component reports to, served at GET /metrics.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The DuckDB engine whose rollups keep copies of rows: the query engine's (statements) or the maintenance one's (refreshes). */
export type KeptEngine = 'query' | 'maintenance';

/** What an engine's kept copies take, and may take (a KeptBudget). */
interface KeptSource {
  readonly limit: number;
  byRollup(): Array<{ rollup: string; kind: string; bytes: number }>;
}

/** The metrics of one Orrery process. */
export class OrreryMetrics {
  readonly registry = new Registry();

  readonly ingestionRequests = new Counter({
    name: 'orrery_ingestion_requests_total',
    help: 'OTLP/HTTP requests, by signal and HTTP status',
    labelNames: ['signal', 'status'] as const,
    registers: [this.registry],
  });

  readonly ingestedRecords = new Counter({
    name: 'orrery_ingested_records_total',
    help: 'Log records, metric points and spans stored, by signal',
    labelNames: ['signal'] as const,
    registers: [this.registry],
  });

  readonly ingestFlushRequests = new Histogram({
    name: 'orrery_ingest_flush_requests',
    help: 'OTLP requests committed together by one Postgres statement (group commit), by signal',
    labelNames: ['signal'] as const,
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [this.registry],
  });

  readonly queries = new Counter({
    name: 'orrery_queries_total',
    help: 'Statements sent through Flight SQL, by outcome: ok, or the gRPC status they failed with (invalid_argument, deadline_exceeded, ...)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly queryDuration = new Histogram({
    name: 'orrery_query_duration_seconds',
    help: 'Time from a statement getting its turn to its last batch (or its failure)',
    buckets: [0.005, 0.02, 0.1, 0.5, 2, 10, 60, 300],
    registers: [this.registry],
  });

  readonly partitionRowsRead = new Counter({
    name: 'orrery_partition_rows_read_total',
    help: "Rows of view set partition files statements read from their FROM: a file read whole counts its rows, one a text index's postings restricted the rows they left (files an index skipped count none)",
    registers: [this.registry],
  });

  readonly statementPlans = new Counter({
    name: 'orrery_statement_plans_total',
    help: "Statements planned (the key's checks, view sets set up, described by DuckDB): once per statement run, less what the plan caches save",
    registers: [this.registry],
  });

  readonly rollupRewrites = new Counter({
    name: 'orrery_rollup_rewrites_total',
    help: 'Statements reading a table with rollups, by whether their rollup rewrite was made, kept from an earlier statement of the same text, or remade from one whose window moved with the clock (made, kept, remade)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly conflictReruns = new Counter({
    name: 'orrery_conflict_reruns_total',
    help: "Client statements outside a transaction run once more because DuckLake refused their commit for a conflict (a publication or the daemon changing a series table's sort while an INSERT into it ran)",
    registers: [this.registry],
  });

  readonly queryTimeouts = new Counter({
    name: 'orrery_query_timeouts_total',
    help: "Statements stopped because the statement timeout (ORRERY_QUERY_TIMEOUT_SECONDS) or the client's deadline passed",
    registers: [this.registry],
  });

  readonly queriesRunning = new Gauge({
    name: 'orrery_queries_running',
    help: 'Statements holding a slot (running), all keys together',
    registers: [this.registry],
  });

  readonly queriesQueued = new Gauge({
    name: 'orrery_queries_queued',
    help: 'Statements waiting for a slot (ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY, ORRERY_MAX_CONCURRENT_QUERIES)',
    registers: [this.registry],
  });

  readonly queryQueueWait = new Histogram({
    name: 'orrery_query_queue_wait_seconds',
    help: 'Time statements waited for a slot',
    buckets: [0.01, 0.1, 1, 10, 60],
    registers: [this.registry],
  });

  readonly queriesRefused = new Counter({
    name: 'orrery_queries_refused_total',
    help: "Statements refused with RESOURCE_EXHAUSTED because their key's queue was full, by key name",
    labelNames: ['key'] as const,
    registers: [this.registry],
  });

  readonly queryDemotions = new Counter({
    name: 'orrery_query_demotions_total',
    help: 'Statements moved to the heavy lane: no first batch within ORRERY_SMALL_QUERY_MS',
    registers: [this.registry],
  });

  readonly heavyQueriesRunning = new Gauge({
    name: 'orrery_heavy_queries_running',
    help: 'Statements running in the heavy lane (at most ORRERY_MAX_HEAVY_QUERIES)',
    registers: [this.registry],
  });

  readonly heavyQueriesQueued = new Gauge({
    name: 'orrery_heavy_queries_queued',
    help: 'Statements waiting for the heavy lane',
    registers: [this.registry],
  });

  readonly materializations = new Counter({
    name: 'orrery_materializations_total',
    help: 'Partition ranges the daemon looked at, by view set and outcome',
    labelNames: ['view_set', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly backfilledRanges = new Counter({
    name: 'orrery_view_backfill_ranges_total',
    help: 'Ranges of a new DDL-defined view set materialized by its backfill, by view set and outcome',
    labelNames: ['view_set', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly housekeepingDeleted = new Counter({
    name: 'orrery_housekeeping_deleted_total',
    help: 'What housekeeping deleted, by kind: expiredBlocks, expiredPartitions (retention), retiredFiles, orphanObjects (objects no row named, left by a killed writer), abandonedUploads',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });

  readonly viewDefinitionFailures = new Counter({
    name: 'orrery_view_definition_load_failures_total',
    help: 'Stored view set definitions that failed to load',
    labelNames: ['view_set'] as const,
    registers: [this.registry],
  });

  readonly unreadablePartitions = new Counter({
    name: 'orrery_unreadable_partitions_total',
    help: 'Partition files found unreadable (missing, truncated, overwritten), by view set and outcome: quarantined (range rebuilt), lost (source past retention: statements fail with PARTITION_LOST), failed (containing failed)',
    labelNames: ['view_set', 'outcome'] as const,
    registers: [this.registry],
  });

  private readonly quarantineSources: {
    blocks?: () => Promise<ReadonlyMap<string, number>>;
    partitions?: () => Promise<ReadonlyMap<string, number>>;
    lost?: () => Promise<ReadonlyMap<string, number>>;
  } = {};

  /** Read from Postgres at each scrape (see countQuarantinedWith), so every process reports the same. */
  readonly quarantinedBlocks = postgresCountGauge(
    this.registry,
    'orrery_quarantined_blocks',
    'Blocks left out of a view set because their payload could not be read (list_quarantined_blocks())',
    () => this.quarantineSources.blocks,
  );

  readonly quarantinedPartitions = postgresCountGauge(
    this.registry,
    'orrery_quarantined_partitions',
    'Partition files of a view set taken out of the lake because they could not be read (list_quarantined_partitions())',
    () => this.quarantineSources.partitions,
  );

  readonly lostPartitions = postgresCountGauge(
    this.registry,
    'orrery_lost_partitions',
    'Partitions whose file cannot be read nor rebuilt (source past retention): statements reading them fail with PARTITION_LOST (list_lost_partitions())',
    () => this.quarantineSources.lost,
  );

  readonly rollupRefreshDuration = new Histogram({
    name: 'orrery_rollup_refresh_duration_seconds',
    help: 'Time a rollup refresh job took, by rollup and outcome (ok, failed)',
    labelNames: ['rollup', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300],
    registers: [this.registry],
  });

  readonly rollupPendingBuckets = new Gauge({
    name: 'orrery_rollup_pending_buckets',
    help: 'Buckets a rollup recomputed at its last refresh because writes had touched them since the one before',
    labelNames: ['rollup'] as const,
    registers: [this.registry],
  });

  readonly rollupLag = new Gauge({
    name: 'orrery_rollup_lag_seconds',
    help: "Seconds from a rollup's watermark (the bucket still filling at its last refresh) to that refresh; time rollups only",
    labelNames: ['rollup'] as const,
    registers: [this.registry],
  });

  readonly rollupKeptEvictions = new Counter({
    name: 'orrery_rollup_kept_evictions_total',
    help: "In-memory copies of a rollup's rows let go to keep all of an engine's under its budget (the least recently read first; their reads go to the files), by engine (query: ORRERY_ROLLUP_KEPT_MEMORY_LIMIT; maintenance: a quarter of ORRERY_MAINTENANCE_MEMORY_LIMIT) and kind: stored (its stored rows), tail (its ring of kept tails)",
    labelNames: ['engine', 'kind'] as const,
    registers: [this.registry],
  });

  /** Each engine's kept copies of rollups' rows (its rollups' KeptBudget), by engine. */
  private readonly keptSources = new Map<KeptEngine, KeptSource>();

  readonly rollupKeptBytes: Gauge<'engine' | 'rollup' | 'kind'> = new Gauge({
    name: 'orrery_rollup_kept_bytes',
    help: "Bytes (their values' measure) of the in-memory copies of a rollup's rows an engine's reads are served from, by engine (query: the statements'; maintenance: the refreshes'), rollup and kind: stored (its stored rows), tail (its ring of kept tails, deleted rows included until the ring is dropped)",
    labelNames: ['engine', 'rollup', 'kind'] as const,
    registers: [this.registry],
    collect: () => {
      // A rollup whose copies went (evicted, replaced, dropped) is left out, not kept at 0.
      this.rollupKeptBytes.reset();
      for (const [engine, source] of this.keptSources)
        for (const { rollup, kind, bytes } of source.byRollup())
          this.rollupKeptBytes.set({ engine, rollup, kind }, bytes);
    },
  });

  readonly rollupKeptBudget: Gauge<'engine'> = new Gauge({
    name: 'orrery_rollup_kept_budget_bytes',
    help: "The most bytes an engine's in-memory copies of rollups' rows may take together, by engine (query: ORRERY_ROLLUP_KEPT_MEMORY_LIMIT; maintenance: a quarter of ORRERY_MAINTENANCE_MEMORY_LIMIT)",
    labelNames: ['engine'] as const,
    registers: [this.registry],
    collect: () => {
      for (const [engine, source] of this.keptSources) this.rollupKeptBudget.set({ engine }, source.limit);
    },
  });

  /** Where an engine's kept copies of rollups' rows are counted (its rollups' KeptBudget). */
  countKeptWith(engine: KeptEngine, source: KeptSource): void {
    this.keptSources.set(engine, source);
  }

  /** Where the quarantined block and partition counts, and the lost partition counts, come from (the process's Postgres). */
  countQuarantinedWith(sources: {
    blocks: () => Promise<ReadonlyMap<string, number>>;
    partitions: () => Promise<ReadonlyMap<string, number>>;
    lost: () => Promise<ReadonlyMap<string, number>>;
  }): void {
    Object.assign(this.quarantineSources, sources);
  }

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'orrery_' });
  }

  /** Labels every series with `instance`, so the processes of a cluster stay apart once aggregated. */
  labelInstance(instance: string): void {
    this.registry.setDefaultLabels({ instance });
  }
}

/**
 * A gauge per view set whose values are read at each scrape; a view set once seen stays at 0 when
 * its count goes, and the last values stay while the source cannot be read.
 */
function postgresCountGauge(
  registry: Registry,
  name: string,
  help: string,
  source: () => (() => Promise<ReadonlyMap<string, number>>) | undefined,
): Gauge<'view_set'> {
  const seen = new Set<string>();
  const gauge: Gauge<'view_set'> = new Gauge({
    name,
    help,
    labelNames: ['view_set'] as const,
    registers: [registry],
    collect: async () => {
      const read = source();
      if (!read) return;
      const counts = await read().catch(() => undefined);
      if (!counts) return; // Postgres unreachable: keep the last values
      for (const view of counts.keys()) seen.add(view);
      for (const view of seen) gauge.set({ view_set: view }, counts.get(view) ?? 0);
    },
  });
  return gauge;
}
