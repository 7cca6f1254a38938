import { isErrorOf } from '../errors/index.js';
import { blockInsertsRunning, type MetadataStore } from '../metadata/index.js';
import {
  deleteExpiredFiles,
  deleteOrphans,
  nanosToIso,
  payloadKey,
  retirePartitionsOlderThan,
  secondsToNanos,
  type ObjectStore,
  type PartitionChangeHook,
} from '../lakehouse/index.js';
import type { InsertRange, ViewSet } from '../views/index.js';
import { forgetGoneFiles } from '../resources/index.js';
import { maintenanceErrors } from './errors.js';
import { forgetExpiredFailedAudiences } from './failed-audiences.js';
import type { Materializer, Outcome } from './materializer.js';

/** A materialization pass: how often it runs, and which insert-time window it covers. */
export interface Pass {
  readonly name: string;
  readonly periodSeconds: number;
  /** Seconds after each period boundary the pass starts (lets late inserts land). */
  readonly offsetSeconds: number;
  /** The window, relative to the boundary: [boundary - from, boundary - to), cut in `deltaSeconds` ranges. */
  readonly fromSeconds: number;
  readonly toSeconds: number;
  readonly deltaSeconds: number;
}

/** How many skipped windows a pass makes up for when it runs late. */
const maxCatchUpWindows = 60;

/** How many streams (or processes) one retention transaction deletes: the lock it holds on blocks stays short. */
const retentionBatch = 1000;

/** micromegas's cron passes: 1 s partitions merged into minutes, hours and days. */
export const defaultPasses: readonly Pass[] = [
  { name: 'second', periodSeconds: 1, offsetSeconds: 0.5, fromSeconds: 2, toSeconds: 1, deltaSeconds: 1 },
  { name: 'minute', periodSeconds: 60, offsetSeconds: 5, fromSeconds: 120, toSeconds: 60, deltaSeconds: 60 },
  {
    name: 'hour',
    periodSeconds: 3600,
    offsetSeconds: 600,
    fromSeconds: 7200,
    toSeconds: 0,
    deltaSeconds: 3600,
  },
  { name: 'day', periodSeconds: 86400, offsetSeconds: 14400, fromSeconds: 172800, toSeconds: 0, deltaSeconds: 86400 },
];

export interface DaemonOptions {
  readonly db: MetadataStore;
  readonly store: ObjectStore;
  readonly materializer: Materializer;
  /** The view sets to maintain, read at each pass (definitions reload while running). */
  readonly viewSets: () => readonly ViewSet[];
  readonly retentionDays: number;
  /** How often one daemon of the cluster applies retention and deletes retired and orphaned files. */
  readonly housekeepingSeconds: number;
  /** How old an object no row names must be before housekeeping deletes it (see deleteOrphans). */
  readonly orphanGraceSeconds: number;
  /** How far back a DDL-defined view set without partitions is materialized when first seen (0: not). */
  readonly backfillSeconds?: number;
  /** Deletes series-table rows past their set_retention: per table, how many or its error (absent: no series tables). */
  readonly seriesRetention?: () => Promise<
    ReadonlyArray<
      { readonly table: string; readonly deleted: number } | { readonly table: string; readonly error: unknown }
    >
  >;
  /** Writes series tables' and rollups' stored rows and deletes inlined in DuckLake's catalog to files: per table, how many rows or its error. */
  readonly seriesFlush?: () => Promise<
    ReadonlyArray<
      { readonly table: string; readonly rows: number } | { readonly table: string; readonly error: unknown }
    >
  >;
  /** Sorts series tables whose rate moved by a time bucket fitting it again (a line per table sorted anew). */
  readonly seriesBuckets?: () => Promise<readonly string[]>;
  /** Writes the text index statistics of series tables' data files written since (a line per table). */
  readonly seriesTextIndexes?: () => Promise<readonly string[]>;
  /** Told, in the transaction that retires them, of the partitions retention takes (rollups keep their buckets). */
  readonly onPartitionsExpired?: PartitionChangeHook;
  readonly passes?: readonly Pass[];
  readonly log: (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;
  readonly onOutcome?: (view: string, outcome: Outcome | 'failed') => void;
  readonly onBackfill?: (view: string, outcome: Outcome | 'busy' | 'failed') => void;
  readonly onHousekeeping?: (report: HousekeepingReport) => void;
}

/** What one housekeeping run deleted. */
export interface HousekeepingReport {
  readonly expiredBlocks: number;
  readonly expiredPartitions: number;
  readonly retiredFiles: number;
  readonly orphanObjects: number;
  readonly abandonedUploads: number;
}

/**
 * The maintenance daemon: runs each pass on its schedule, materializing every view set in
 * ascending update group. Each range is claimed with a Postgres advisory lock, so several
 * daemons on one lake share the work instead of repeating it; a view set that fails is
 * logged and counted, and the others carry on.
 */
export class MaintenanceDaemon {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private readonly busy = new Set<string>();
  /** Per pass, where the windows it has run end (nanoseconds), so a window skipped while busy is not lost. */
  private readonly coveredUntil = new Map<string, bigint>();
  /** Per pass, the ranges (their begins) in which a block insert was running when it last ran: gone over again. */
  private readonly runningAt = new Map<string, bigint[]>();
  /** The definition of each view set last checked for a backfill. */
  private readonly backfillChecked = new Map<string, ViewSet>();
  private closed = false;

  constructor(private readonly options: DaemonOptions) {}

  /**
   * Schedules the passes, and catches up at once on what arrived while no daemon ran. Blocks that
   * another version quarantined are retried first: the new version may read them.
   */
  start(): void {
    if (this.closed) throw maintenanceErrors.error('DAEMON_CLOSED', 'the maintenance daemon has been closed');
    for (const pass of this.options.passes ?? defaultPasses) this.schedule(pass);
    this.scheduleHousekeeping();
    const run = this.retryOtherVersions()
      .catch((error) => this.options.log('error', 'retrying quarantined blocks failed', error))
      .then(() => this.catchUp())
      .catch((error) => this.options.log('error', 'catch-up pass failed', error))
      .finally(() => this.running.delete(run));
    this.running.add(run);
  }

  /**
   * The scheduled passes only look at recent windows, so data inserted while no daemon ran
   * (before a start, or after a crash) would wait for the minute or hour pass. This covers
   * the last hour by minutes and the current minute by seconds, right away.
   */
  async catchUp(now = Date.now()): Promise<void> {
    const minute = BigInt(Math.floor(now / 60_000) * 60) * 1_000_000_000n;
    const second = BigInt(Math.floor(now / 1000)) * 1_000_000_000n;
    await this.runRanges(minute - secondsToNanos(3600), minute, 60);
    await this.runRanges(minute, second - secondsToNanos(1), 1);
  }

  private async retryOtherVersions(): Promise<void> {
    for await (const line of this.options.materializer.retryQuarantined(this.options.viewSets(), {
      otherVersionsOnly: true,
    })) {
      this.options.log('info', `quarantine: ${line}`);
    }
  }

  /** Stops scheduling and waits for running passes. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.running]);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /**
   * Runs one pass for the window ending at `boundary` (nanoseconds). When the pass was still busy
   * at earlier boundaries (a slow machine, a long materialization), the window starts where the
   * last one it ran ended, so those ranges are materialized now rather than left to the next
   * coarser pass; at most `maxCatchUpWindows` windows back.
   */
  async runPass(pass: Pass, boundary: bigint): Promise<void> {
    const end = boundary - secondsToNanos(pass.toSeconds);
    const window = boundary - secondsToNanos(pass.fromSeconds);
    const since = this.coveredUntil.get(pass.name);
    const earliest = window - secondsToNanos(pass.periodSeconds * maxCatchUpWindows);
    const begin = since !== undefined && since < window ? (since > earliest ? since : earliest) : window;
    // Read before the ranges: an insert still running then may commit rows with an insert time before `end`
    // that they do not see (its insert time is its start), so the next run goes over its range again. Ranges
    // left so for longer than maxCatchUpWindows periods are the coarser passes' work, as before.
    const delta = secondsToNanos(pass.deltaSeconds);
    const running = (await blockInsertsRunning(this.options.db))
      .map((second) => secondsToNanos(Number(second)))
      .map((start) => start - (start % delta))
      .filter((range) => range < end);
    const again = (this.runningAt.get(pass.name) ?? []).filter((range) => range >= earliest && range < begin);
    await this.runRanges(begin, end, pass.deltaSeconds, again);
    if (this.closed) return;
    this.coveredUntil.set(pass.name, end);
    this.runningAt.set(pass.name, [...new Set(running)]);
  }

  /**
   * Materializes [begin, end) cut in `deltaSeconds` ranges, after the ranges starting at `again` (earlier ones a
   * pass goes over once more), every view set in ascending update group.
   */
  private async runRanges(
    begin: bigint,
    end: bigint,
    deltaSeconds: number,
    again: readonly bigint[] = [],
  ): Promise<void> {
    const ranges: InsertRange[] = [...again]
      .sort((a, b) => (a < b ? -1 : 1))
      .map((b) => ({ begin: b, end: b + secondsToNanos(deltaSeconds) }));
    for (let b = begin; b < end; b += secondsToNanos(deltaSeconds))
      ranges.push({ begin: b, end: b + secondsToNanos(deltaSeconds) });
    const views = [...this.options.viewSets()].sort(
      (a, b) => a.updateGroup - b.updateGroup || a.name.localeCompare(b.name),
    );
    for (const view of views) await this.backfillIfNew(view);
    // A range another daemon holds (or that failed) for one set is left alone for the sets of
    // higher groups in this run: they read it, and would record its source count as covered.
    const heldAtGroup = new Map<bigint, number>();
    for (const view of views) {
      for (const range of ranges) {
        if (this.closed) return;
        const held = heldAtGroup.get(range.begin);
        if (held !== undefined && view.updateGroup > held) continue;
        const outcome = await this.materializeLocked(view, range);
        if ((outcome === 'busy' || outcome === 'failed') && held === undefined)
          heldAtGroup.set(range.begin, view.updateGroup);
      }
    }
  }

  /**
   * A view set defined by DDL only gets partitions for the ranges the passes cover from its
   * creation on. Once per definition, a set without any partition is materialized over the
   * last `backfillSeconds` of insert time, in ranges of its source delta, up to where the
   * second pass takes over, with its progress logged and counted.
   */
  async backfillIfNew(view: ViewSet, now = Date.now()): Promise<void> {
    const window = this.options.backfillSeconds ?? 0;
    if (this.backfillChecked.get(view.name) === view || view.source.kind !== 'sql' || window <= 0) return;
    this.backfillChecked.set(view.name, view);
    const { rows } = await this.options.db.query(
      'SELECT 1 FROM lakehouse_partitions WHERE view_set_name = $1 LIMIT 1',
      [view.name],
    );
    if (rows.length > 0) return;
    const delta = secondsToNanos(view.sourceDeltaSeconds);
    const end = BigInt(Math.floor(now / 1000) - 2) * 1_000_000_000n; // the second pass covers from here on
    const from = end - secondsToNanos(window);
    const ranges: InsertRange[] = [];
    for (let b = from - (from % delta); b < end; b += delta)
      ranges.push({ begin: b, end: b + delta < end ? b + delta : end });
    const show = (r: InsertRange): string => `[${nanosToIso(r.begin)}, ${nanosToIso(r.end)})`;
    this.options.log(
      'info',
      `backfilling new view set ${view.name} over ${show({ begin: ranges[0].begin, end })}: ${ranges.length} range(s)`,
    );
    for (const [i, range] of ranges.entries()) {
      if (this.closed) return;
      const outcome = await this.materializeLocked(view, range);
      this.options.onBackfill?.(view.name, outcome);
      this.options.log('info', `backfill of ${view.name} ${show(range)}: ${outcome} (${i + 1}/${ranges.length})`);
    }
  }

  /**
   * Materializes one range unless another daemon (or pass) holds it. The lock is held on the
   * metadata store's lock connection, so the materializer has the whole pool for its work.
   */
  async materializeLocked(view: ViewSet, range: InsertRange, force = false): Promise<Outcome | 'busy' | 'failed'> {
    const key = `materialize:${view.name}:${range.begin}:${range.end}`;
    try {
      const outcome = await this.options.db.locks.tryWhileHolding(key, () =>
        this.options.materializer.materialize(view, range, force),
      );
      if (outcome === undefined) return 'busy';
      this.options.onOutcome?.(view.name, outcome);
      return outcome;
    } catch (error) {
      if (isErrorOf(error, maintenanceErrors, 'PARTITION_OVERLAP')) {
        // Another daemon committed a partition overlapping this range (ranges of different passes
        // overlap, and only equal ranges share a lock): the range is covered, and a later pass
        // rebuilds it if its source count no longer matches.
        this.options.log('info', `materializing ${view.name}: another daemon wrote an overlapping partition first`);
        return 'busy';
      }
      this.options.log('error', `materializing ${view.name} failed`, error);
      this.options.onOutcome?.(view.name, 'failed');
      return 'failed';
    }
  }

  /**
   * Applies retention, then deletes retired files past their delay and objects no row names (see
   * deleteOrphans), unless another daemon of the cluster is at it; undefined when it was. Objects go
   * before the rows that name them, so a daemon killed midway leaves rows the next run acts on again,
   * never files nothing names. `now` is the time objects' ages are measured at.
   */
  async housekeeping(now = Date.now()): Promise<HousekeepingReport | undefined> {
    const { db, store, retentionDays, orphanGraceSeconds } = this.options;
    return db.locks.tryWhileHolding('housekeeping', async () => {
      const horizon = `now() - make_interval(days => ${Math.floor(retentionDays)})`;
      const expired = await db.query<{
        process_id: string;
        stream_id: string;
        block_id: string;
        payload_file: string | null;
      }>(
        `SELECT process_id::text, stream_id::text, block_id::text, payload_file FROM blocks WHERE insert_time < ${horizon}`,
      );
      const ids = expired.rows.map((b) => b.block_id);
      // A group's object goes once none of the blocks it holds stays (a group's blocks share their insert
      // time, so they normally expire together).
      const groupFiles = await db.query<{ payload_file: string }>(
        `SELECT DISTINCT e.payload_file FROM blocks e
          WHERE e.block_id = ANY($1::uuid[]) AND e.payload_file IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.payload_file = e.payload_file AND NOT b.block_id = ANY($1::uuid[]))`,
        [ids],
      );
      for (const block of expired.rows)
        if (block.payload_file === null)
          await store.delete(payloadKey(block.process_id, block.stream_id, block.block_id));
      for (const group of groupFiles.rows) await store.delete(group.payload_file);
      await db.query('DELETE FROM blocks WHERE block_id = ANY($1::uuid[])', [ids]);
      await db.query(
        'DELETE FROM quarantined_blocks q WHERE NOT EXISTS (SELECT 1 FROM blocks b WHERE b.block_id = q.block_id)',
      );
      // Behind a lock on blocks that waits for the block inserts under way and holds new ones back meanwhile: an
      // insert names an existing stream and process without touching their rows (ON CONFLICT DO NOTHING), so a delete
      // that did not see its uncommitted block would leave it, committed after a 200, naming rows gone, and never
      // materialized. An insert that comes after finds them gone and inserts them again. The candidates are found
      // before, without the lock: most streams past the retention period are a long-running service's, blocks still
      // naming them, and probing each of those under the lock held every ingest back for the whole scan (1.4 s a pass
      // at 200 k such streams), whenever one process had stopped in time. Under the lock, in batches, only the
      // candidates are checked again: a run that finds none takes no lock.
      const retire = async (table: 'streams' | 'processes', key: string, unnamed: string): Promise<void> => {
        const candidates = await db.query<{ id: string }>(
          `SELECT ${key}::text AS id FROM ${table} r WHERE insert_time < ${horizon} AND ${unnamed}`,
        );
        const ids = candidates.rows.map((row) => row.id);
        for (let i = 0; i < ids.length; i += retentionBatch)
          await db.transaction(async (tx) => {
            await tx.query('LOCK TABLE blocks IN SHARE MODE');
            await tx.query(`DELETE FROM ${table} r WHERE ${key} = ANY($1::uuid[]) AND ${unnamed}`, [
              ids.slice(i, i + retentionBatch),
            ]);
          });
      };
      await retire('streams', 'stream_id', 'NOT EXISTS (SELECT 1 FROM blocks b WHERE b.stream_id = r.stream_id)');
      // After the streams: a process whose streams all went in this pass goes with them.
      await retire('processes', 'process_id', 'NOT EXISTS (SELECT 1 FROM streams s WHERE s.process_id = r.process_id)');
      // Retention's steps below fail on their own (a rollup's refresh running while retention would take the
      // partitions of its view set, or holding its lock past the wait for a series table's; a DuckLake commit refused;
      // a catalog read failing): the other steps and the deletions of retired files and orphans go on, and the run
      // fails after them, tried again at the next one.
      const failures: unknown[] = [];
      const failed =
        <T>(otherwise: T) =>
        (error: unknown): T => {
          failures.push(error);
          return otherwise;
        };
      const expiredPartitions = await retirePartitionsOlderThan(
        db,
        retentionDays,
        this.options.onPartitionsExpired,
      ).catch(failed(0));
      await forgetExpiredFailedAudiences(db, retentionDays);
      for (const outcome of (await this.options.seriesRetention?.().catch(failed([]))) ?? []) {
        if ('error' in outcome) failures.push(outcome.error);
        else if (outcome.deleted > 0)
          this.options.log('info', `retention: deleted ${outcome.deleted} row(s) of series table ${outcome.table}`);
      }
      // After retention (whose small deletes DuckLake inlines too) and before the text index's upkeep, which then
      // indexes the files written. A table's inlined rows only make its reads go through DuckLake's scan (the text
      // index and the rollups' file reads wait for files), so a failed flush is a warning, tried again at the next run.
      // At each run, not after each small write: a table written a few rows at a time has new inlined rows again at
      // once, and flushing every minute would leave it a small file a minute where DuckLake inlines them to avoid that.
      const flushed = await this.options.seriesFlush?.().catch((error: unknown) => {
        this.options.log(
          'warn',
          'lake tables: inlined rows were not written to files; tried again at the next housekeeping',
          error,
        );
        return [];
      });
      for (const outcome of flushed ?? []) {
        if ('error' in outcome)
          this.options.log(
            'warn',
            `lake table ${outcome.table}: its inlined rows were not written to files; tried again at the next housekeeping`,
            outcome.error,
          );
        else if (outcome.rows > 0)
          this.options.log('info', `lake table ${outcome.table}: ${outcome.rows} inlined row(s) written to files`);
      }
      // Re-bucketing and text index upkeep only speed reads up: each one's failure is a warning, the run does not
      // fail for it, and the other step still runs (a file not indexed is read whole).
      const speedUp = async (step: (() => Promise<readonly string[]>) | undefined, what: string) => {
        const lines = await step?.().catch((error: unknown) => {
          this.options.log('warn', `index entries: ${what} failed; tried again at the next housekeeping`, error);
          return [];
        });
        for (const line of lines ?? []) this.options.log('info', `index entries: ${line}`);
      };
      await speedUp(this.options.seriesBuckets, 're-bucketing');
      await speedUp(this.options.seriesTextIndexes, "series tables' text index upkeep");
      const retiredFiles = await deleteExpiredFiles(db, store);
      // The resources' rows of the files just deleted (and of any a killed run left) go after them.
      await forgetGoneFiles(db);
      const orphans = await deleteOrphans(db, store, orphanGraceSeconds, now);
      if (orphans.objects + orphans.uploads > 0)
        this.options.log(
          'warn',
          `housekeeping: deleted ${orphans.objects} object(s) no partition or block names and abandoned ${orphans.uploads} unfinished upload(s), left by a killed writer`,
        );
      const report = {
        expiredBlocks: expired.rows.length,
        expiredPartitions,
        retiredFiles,
        orphanObjects: orphans.objects,
        abandonedUploads: orphans.uploads,
      };
      this.options.onHousekeeping?.(report);
      if (failures.length === 1) throw failures[0];
      if (failures.length > 1)
        throw new AggregateError(
          failures,
          failures.map((e) => (e instanceof Error ? e.message : String(e))).join('; '),
        );
      return report;
    });
  }

  private scheduleHousekeeping(): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      const run = this.housekeeping()
        .catch((error) => this.options.log('error', 'housekeeping failed', error))
        .then(() => this.scheduleHousekeeping())
        .finally(() => this.running.delete(run));
      this.running.add(run);
    }, this.options.housekeepingSeconds * 1000);
    this.timers.add(timer);
  }

  private schedule(pass: Pass): void {
    if (this.closed) return;
    const periodMs = pass.periodSeconds * 1000;
    const now = Date.now();
    const next = Math.floor(now / periodMs) * periodMs + pass.offsetSeconds * 1000;
    const at = next > now ? next : next + periodMs;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.schedule(pass);
      if (this.busy.has(pass.name)) return;
      const boundary = BigInt(Math.floor(at / periodMs) * periodMs) * 1_000_000n;
      this.busy.add(pass.name);
      const run = this.runPass(pass, boundary)
        .catch((error) => this.options.log('error', `${pass.name} pass failed`, error))
        .finally(() => {
          this.busy.delete(pass.name);
          this.running.delete(run);
        });
      this.running.add(run);
    }, at - now);
    this.timers.add(timer);
  }
}
