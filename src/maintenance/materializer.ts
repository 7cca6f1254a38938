import { open, type FileHandle } from 'node:fs/promises';
import type { MetadataQueries, MetadataStore } from '../metadata/index.js';
import { isAudienceRowsError, isDataError, type DuckDBEngine, type nativeOrderedLogsWriter } from '../engine/index.js';
import { isErrorOf } from '../errors/index.js';
import { payloadLines, storedProtobufSize } from '../ingestion/index.js';
import {
  commitPartition,
  commitPartitions,
  nanosToIso,
  partitionKey,
  partitionOfFile,
  partitionsOverlapping,
  payloadPlace,
  queryablePartitions,
  pgIsoToNanos,
  readPayloadsOfObject,
  replacePartitionFile,
  scratchKey,
  secondsToNanos,
  type ObjectStore,
  type Partition,
  type PartitionChangeHook,
  type PayloadPlace,
} from '../lakehouse/index.js';
import {
  filesRelation,
  globalInstance,
  orderedBlocks,
  orderedEnumFields,
  orderedFirstTimeRefused,
  orderedGzipLengthRefused,
  orderedProtobufLogs,
  payloadRows,
  protobufPayloadName,
  quoteIdentifier,
  quoteLiteral,
  schemaHash,
  sessionStatements,
  shippedLogEntries,
  typedColumns,
  type ColumnSpec,
  type InsertRange,
  type SessionView,
  type ViewSet,
} from '../views/index.js';
import {
  ensureLedger,
  indexPartition,
  installedColumns,
  parquetWriteOptions,
  recordColumnFiles,
  withStoredColumns,
} from '../resources/index.js';
import { maintenanceErrors } from './errors.js';
import { quarantine, release } from './quarantine.js';
import { audiencesToRetry, failedAudiences, recordFailedAudiences } from './failed-audiences.js';
import { UnreadablePartitions, type UnreadableOutcome } from './unreadable-partitions.js';
import { blocksInRange, metadataRows, sourceCount, type BlockRow } from './sources.js';

/** Rows per row group of a partition file. */
const partitionRowGroupSize = 131072;

/**
 * The most payload bytes (protobuf, decompressed) the ordered read of a range's logs payloads may hold at once
 * (those whose times overlap; decoded, about twice as much memory): above it, DuckDB sorts them under its limit.
 */
const orderedHoldBytes = 64 * 2 ** 20;

/** How many payload objects a materialization reads at once. */
const objectReads = 8;

/** How many times materializeNow looks at a range another process keeps registering partitions across. */
const overlapAttempts = 5;

/** What materializing one range did. */
export type Outcome = 'created' | 'merged' | 'up to date' | 'skipped';

/**
 * What materializing one range did, and over what insert range: the range itself, or the span of the wider
 * partitions around it that a split rebuilt (or found up to date or could not rebuild).
 */
export interface Materialized {
  readonly outcome: Outcome;
  readonly span: InsertRange;
}

export interface MaterializerOptions {
  readonly db: MetadataStore;
  readonly store: ObjectStore;
  /** A DuckDB engine whose readable folders are the lake and `scratch`. */
  readonly engine: DuckDBEngine;
  /**
   * A local folder for the files one materialization writes, reads and deletes (block lists, decoded
   * payloads, probes): kept out of the object store, where each would cost a PUT, a HEAD, a GET and a DELETE.
   */
  readonly scratch: ObjectStore;
  /**
   * Set when the engine has the native addon's __orrery_otlp_logs: a stored logs payload's content when it is
   * protobuf (decompressed off the event loop), which that function decodes straight into columns (no NDJSON
   * written and parsed again); null for the others.
   */
  readonly protobufLogs?: (payload: Uint8Array) => Promise<Uint8Array | null>;
  /**
   * Set when the addon is used: writes a log_entries partition file straight from the ordered read's inputs
   * (nativeOrderedLogsWriter), in place of the statement over __orrery_otlp_logs_ordered (0.76-0.86x its CPU,
   * bench/materialization/README.md); null when it would not write what the statement does.
   */
  readonly orderedLogsWriter?: NonNullable<ReturnType<typeof nativeOrderedLogsWriter>>;
  /** View sets by name, to resolve what a SQL-defined set reads. */
  readonly viewSet: (name: string) => ViewSet | undefined;
  /** Seconds a retired file stays readable before deletion. */
  readonly retireDelaySeconds: number;
  /**
   * Housekeeping deletes objects no row names once they are this old: a partition whose writing began
   * more than half of it ago is not registered (its file is deleted, the range is built again later).
   */
  readonly orphanGraceSeconds: number;
  /** Told of each change to partitions in its transaction (the rollups of view sets record what it invalidated). */
  readonly onPartitionsChanged?: PartitionChangeHook;
  /** Told of each partition file found unreadable, and what became of it. */
  readonly onUnreadable?: (viewSet: string, outcome: UnreadableOutcome) => void;
  /** This Orrery's version, recorded with each block it quarantines. */
  readonly version: string;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /**
   * Resolves once the OTLP requests this process answered before their rows committed are committed: an admin's
   * materialize_partitions after a 200 from this process then reads that request's blocks.
   */
  readonly acknowledged?: () => Promise<void>;
}

type PayloadSource = Extract<ViewSet['source'], { kind: 'payload' }>;
type SqlSource = Extract<ViewSet['source'], { kind: 'sql' }>;

/**
 * Brings one insert-time range of one view set up to date, the way micromegas decides it:
 * no partition yet, or one whose source count no longer matches, is rebuilt from the
 * source; several partitions that together match are merged into one; a single matching
 * partition is left alone. Files are written before they are registered, and registering
 * retires what they replace in the same transaction, so a crash at any point loses nothing
 * and counts nothing twice. A block whose payload cannot be read is quarantined, and the rest
 * of its window materializes without it.
 */
export class Materializer {
  /** The stored columns each file written and not yet registered holds (object key → column names). */
  private readonly storedIn = new Map<string, readonly string[]>();
  /**
   * The audiences each partition of a set defined in SQL was built without, recorded in the transaction that
   * registers it (in place of the range's records): a build that is never committed leaves the old records,
   * which still tell of the rows its range's current partition lacks.
   */
  private readonly failedIn = new Map<Partition, ReadonlyArray<{ audience: string | null; error: string }>>();
  private readonly unreadablePartitions: UnreadablePartitions;

  constructor(private readonly options: MaterializerOptions) {
    const { db, store, version, viewSet, log, onUnreadable } = options;
    this.unreadablePartitions = new UnreadablePartitions({
      db,
      store,
      version,
      viewSet,
      log,
      onOutcome: onUnreadable,
      onPartitionsChanged: this.changed,
      readWhole: (path) => this.unreadableFile(path),
      sourceCount: (view, range) => this.sourceCount(view, range),
      rebuild: (view, range, register) => this.rebuild(view, range, register),
    });
  }

  /**
   * Retires partitions by hand (`retire` answers the view set and the files it retired) in one
   * transaction with the partition-change hook, so whatever follows a set's rows sees them go with them.
   */
  async retiring<T>(
    retire: (tx: MetadataQueries) => Promise<{ result: T; view: string | null; files: readonly string[] }>,
  ): Promise<T> {
    return this.options.db.transaction(async (tx) => {
      const { result, view, files } = await retire(tx);
      if (view !== null && files.length > 0) await this.changed(tx, { viewSetName: view, retired: files, added: [] });
      return result;
    });
  }

  /**
   * materialize for a caller that waits for the answer (an admin's call). A partition another process
   * (a daemon's pass) registered across the range while this call worked changed nothing here, so the
   * range is looked at again, as the daemon's next pass would, before PARTITION_OVERLAP reaches the caller.
   */
  async materializeNow(view: ViewSet, range: InsertRange, force = false): Promise<Materialized> {
    await this.options.acknowledged?.();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.materializeSpan(view, range, force);
      } catch (error) {
        if (attempt >= overlapAttempts || !isErrorOf(error, maintenanceErrors, 'PARTITION_OVERLAP')) throw error;
      }
    }
  }

  async materialize(view: ViewSet, range: InsertRange, force = false): Promise<Outcome> {
    return (await this.materializeSpan(view, range, force)).outcome;
  }

  private async materializeSpan(view: ViewSet, range: InsertRange, force: boolean): Promise<Materialized> {
    const of = (outcome: Outcome): Materialized => ({ outcome, span: range });
    const hash = schemaHash(view.columns);
    const existing = await partitionsOverlapping(
      this.options.db,
      view.name,
      globalInstance,
      hash,
      range.begin,
      range.end,
    );
    if (existing.some((p) => p.beginInsertTime < range.begin || p.endInsertTime > range.end))
      return this.split(view, range, hash, force);
    const count = await this.sourceCount(view, range);
    const existingCount = existing.reduce((sum, p) => sum + p.sourceCount, 0n);
    const width = Number((range.end - range.begin) / 1_000_000_000n);
    if (!force && existing.length > 0 && existingCount === count) {
      if (existing.length === 1) return of('up to date');
      if (width > view.mergeDeltaSeconds) return of('skipped');
      try {
        await this.merge(view, range, existing, count);
      } catch (error) {
        if (!isDataError(error) || (await this.containUnreadable(filesOf(existing))) === 0) throw error;
        return this.materializeSpan(view, range, force);
      }
      return of('merged');
    }
    if (width > view.sourceDeltaSeconds) return of('skipped');
    if (!(await this.sourcesReady(view, range))) return of('skipped');
    await this.create(view, range, count);
    return of('created');
  }

  /**
   * Whether the view sets a SQL-defined set's extract reads are up to date over the range: each of their
   * partitions there has the source count of its range now, and where none lies there is no source. Its count
   * query counts their sources (log_stats sums the blocks' objects), not the rows its extract reads
   * from their partitions, so a partition built while one of them is still materializing (another
   * daemon, another pass's wider range) would carry the full count over part of the rows and pass
   * for up to date until its sources change. Checked after the count is taken: what is read then
   * is at least what was counted.
   */
  private async sourcesReady(view: ViewSet, range: InsertRange): Promise<boolean> {
    if (view.source.kind !== 'sql') return true;
    for (const name of view.source.extractReads) {
      const read = this.options.viewSet(name);
      if (!read) return false;
      const partitions = await partitionsOverlapping(
        this.options.db,
        read.name,
        globalInstance,
        schemaHash(read.columns),
        range.begin,
        range.end,
      );
      // A stretch no partition covers must have no source (the materializer makes no empty partitions).
      const sorted = [...partitions].sort((a, b) => (a.beginInsertTime < b.beginInsertTime ? -1 : 1));
      let covered = range.begin;
      for (const p of sorted) {
        if (
          p.beginInsertTime > covered &&
          (await this.sourceCount(read, { begin: covered, end: p.beginInsertTime })) !== 0n
        )
          return false;
        if (p.endInsertTime > covered) covered = p.endInsertTime;
      }
      if (covered < range.end && (await this.sourceCount(read, { begin: covered, end: range.end })) !== 0n)
        return false;
      for (const p of partitions) {
        if (p.sourceCount !== (await this.sourceCount(read, { begin: p.beginInsertTime, end: p.endInsertTime })))
          return false;
      }
    }
    return true;
  }

  /** The source count a partition of this range must carry to be fresh. */
  async sourceCount(view: ViewSet, range: InsertRange): Promise<bigint> {
    const { source } = view;
    if (source.kind !== 'sql') return sourceCount(this.options.db, view.name, source, range);
    const rows = await this.containing(source.reads, range, async () =>
      this.rows(withRange(source.countQuery, range), await this.readSession(source.reads, range)),
    );
    if (rows.length !== 1 || rows[0].length !== 1)
      throw maintenanceErrors.error(
        'COUNT_QUERY_SHAPE',
        `${view.name}: count_src_query must return one row with one column`,
      );
    return BigInt(rows[0][0] === null ? 0 : (rows[0][0] as number | bigint));
  }

  /**
   * A range inside wider partitions (a manual hour-wide call, a backfill, a merge) while the
   * passes work second by second: up to date if they still count their sources, otherwise the
   * span they cover is rebuilt in pieces, before the range, the range itself and after it, so
   * that the next range finds a partition of its own width instead of a wide one to rebuild. Forced (an admin's
   * regenerate_partitions, a retry), the span is rebuilt even when its count says fresh: a failed audience's
   * rows left out of a range are not counted missing, and a merge keeps them out.
   */
  private async split(view: ViewSet, range: InsertRange, hash: Buffer, force: boolean): Promise<Materialized> {
    const around = await partitionsOverlapping(
      this.options.db,
      view.name,
      globalInstance,
      hash,
      range.begin,
      range.end,
    );
    const span = {
      begin: around.reduce((b, p) => (p.beginInsertTime < b ? p.beginInsertTime : b), range.begin),
      end: around.reduce((e, p) => (p.endInsertTime > e ? p.endInsertTime : e), range.end),
    };
    const inSpan = await partitionsOverlapping(this.options.db, view.name, globalInstance, hash, span.begin, span.end);
    const of = (outcome: Outcome): Materialized => ({ outcome, span });
    if (inSpan.some((p) => p.beginInsertTime < span.begin || p.endInsertTime > span.end)) return of('skipped');
    const count = await this.sourceCount(view, span);
    if (!force && inSpan.reduce((sum, p) => sum + p.sourceCount, 0n) === count) return of('up to date');
    if (!(await this.sourcesReady(view, span))) return of('skipped');
    const pieces = [{ begin: span.begin, end: range.begin }, range, { begin: range.end, end: span.end }]
      .filter((piece) => piece.end > piece.begin)
      .flatMap((piece) => cut(piece, secondsToNanos(view.sourceDeltaSeconds)));
    const partitions: Partition[] = [];
    const started = Date.now();
    try {
      for (const piece of pieces)
        partitions.push(await this.extracted(view, piece, await this.sourceCount(view, piece)));
      this.checkWrittenInTime(view, started);
      await commitPartitions(this.options.db, partitions, span, this.options.retireDelaySeconds, this.changed);
    } catch (error) {
      for (const p of partitions) if (p.filePath) await this.options.store.delete(p.filePath);
      throw overlapping(view, span, error);
    } finally {
      this.forgetWritten(partitions);
    }
    for (const partition of partitions) await this.indexed(view, partition);
    return of('created');
  }

  /**
   * Writes a range's partitions from its source, in pieces of the set's source width, and has `register`
   * register them (true when it did); their files are deleted when it declines or fails.
   */
  private async rebuild(
    view: ViewSet,
    range: InsertRange,
    register: (partitions: readonly Partition[]) => Promise<boolean>,
  ): Promise<void> {
    const partitions: Partition[] = [];
    const started = Date.now();
    let registered = false;
    try {
      for (const piece of cut(range, secondsToNanos(view.sourceDeltaSeconds)))
        partitions.push(await this.extracted(view, piece, await this.sourceCount(view, piece)));
      this.checkWrittenInTime(view, started);
      registered = await register(partitions);
    } finally {
      this.forgetWritten(partitions);
      if (!registered) for (const p of partitions) if (p.filePath) await this.options.store.delete(p.filePath);
    }
    for (const partition of partitions) await this.indexed(view, partition);
  }

  private async create(view: ViewSet, range: InsertRange, count: bigint): Promise<void> {
    const started = Date.now();
    await this.commit(view, await this.extracted(view, range, count), started);
  }

  /**
   * A range's partition file written from its source (not yet registered). When the payload
   * extract fails on the data, the blocks that fail on their own are quarantined and the range is
   * built from the others.
   */
  private async extracted(view: ViewSet, range: InsertRange, count: bigint): Promise<Partition> {
    const partition = await this.built(view, range, count);
    // Unless built by audience (which tells what it left out), a SQL-defined set's partition holds every audience's
    // rows, an empty one included (the range's sources gone, or making no rows now): the range's records go once it
    // is committed.
    if (view.source.kind === 'sql' && !this.failedIn.has(partition)) this.failedIn.set(partition, []);
    return partition;
  }

  /** The partition of `extracted`, empty or not (for a set defined in SQL, possibly built by audience). */
  private async built(view: ViewSet, range: InsertRange, count: bigint): Promise<Partition> {
    // No source rows: the range is recorded as empty without running the extract or writing a file (on
    // S3 an idle second cost each view set a PUT and a DELETE). For a set defined in SQL, see extractsNothing.
    if (count === 0n && view.source.kind !== 'sql') return emptyPartition(view, range, count);
    if (view.source.kind === 'sql' && (await this.extractsNothing(view.source, range)))
      return emptyPartition(view, range, count);
    try {
      return await this.extractedFrom(view, range, count);
    } catch (error) {
      if (view.source.kind === 'sql' && isAudienceRowsError(error)) {
        // An unreadable file fails with the data's error, never for want of memory.
        const { reads } = view.source;
        if (!isDataError(error) || (await this.containUnreadable(await this.readFiles(reads, range))) === 0)
          return await this.extractedByAudience(view, view.source, range, count, error);
        return await this.extractedFrom(view, range, await this.sourceCount(view, range));
      }
      if (!isDataError(error) || view.source.kind !== 'payload') throw error;
      if ((await this.quarantineUnreadable(view, view.source, range, (error as Error).message)) === 0) throw error;
      return await this.extractedFrom(view, range, await this.sourceCount(view, range));
    }
  }

  /**
   * A SQL-defined set's partition of a range whose extract failed on the data or for want of memory
   * (isAudienceRowsError), built from the extract run once per audience of its sources, each with the sources limited
   * to that audience: one tenant's row the extract fails on (a cast of a value it sent), or its rows' states past the
   * memory limit, then hide no other tenant's rows. The audiences whose run fails are
   * recorded (list_failed_audiences(), with their own error: it quotes their rows alone) and left out until a
   * retry (retry_quarantined_blocks(), a daemon of another version) or a rebuild of the range. The source rows of no
   * known audience (a NULL audience, a process the processes set gives none), which keys do not read, are a run
   * of their own, recorded with a NULL audience when it fails (apart from an audience '', no key's either), so that
   * list_failed_audiences() tells admins alone. With one run, or when every run fails (the system's fault rather than the data's, as for quarantined
   * blocks), the range fails as before. It fails as before too when the runs cannot add up to the whole: an extract
   * whose rows are not each of the one audience its run read (a constant audience, a group across audiences) makes
   * other rows per audience than one run over all.
   */
  private async extractedByAudience(
    view: ViewSet,
    source: SqlSource,
    range: InsertRange,
    count: bigint,
    error: unknown,
  ): Promise<Partition> {
    const { scratch, engine, store } = this.options;
    const reads = (await this.readPartitions(source.reads, range)).map(({ view: read, keys }) => ({
      view: read,
      files: keys.map((key) => store.location(key)),
    }));
    const processAudiences = await this.processAudiences(view, reads);
    const audiences = await this.audiencesOf(reads, processAudiences);
    if (audiences.length < 2) throw error;
    const written: string[] = [];
    const failed: Array<{ audience: string | null; error: string }> = [];
    try {
      for (const audience of audiences) {
        const key = scratchKey('parquet');
        const scope =
          audience === null ? { kind: 'no audience' as const } : { kind: 'audiences' as const, audiences: [audience] };
        const setup = sessionStatements(reads, scope, { processAudiences });
        try {
          await engine.execute(
            `COPY (${typedColumns(view.columns, withRange(source.extractQuery, range))}) TO ${quoteLiteral(await scratch.writableLocation(key))} (FORMAT parquet)`,
            { setup },
          );
          written.push(key);
        } catch (audienceError) {
          await scratch.delete(key);
          if (!isAudienceRowsError(audienceError)) throw audienceError;
          failed.push({ audience, error: (audienceError as Error).message });
          continue;
        }
        if (!(await this.allOfAudience(view, scratch.location(key), audience, processAudiences))) throw error;
      }
      if (written.length === 0) throw error;
      const rows = filesRelation(
        view.columns,
        written.map((key) => scratch.location(key)),
      );
      const partition = await this.write(view, range, count, { sql: rows, setup: [] });
      this.failedIn.set(partition, failed);
      for (const f of failed)
        this.options.log?.(
          'warn',
          `${view.name} [${nanosToIso(range.begin)}, ${nanosToIso(range.end)}): the rows of ${f.audience === null ? 'no known audience' : `audience '${f.audience}'`} are left out: ${f.error}`,
        );
      return partition;
    } finally {
      for (const key of written) await scratch.delete(key);
    }
  }

  /** The processes set's files, which tell the audience of each process, when the set or a set read is keyed by process. */
  private async processAudiences(view: ViewSet, reads: readonly SessionView[]): Promise<SessionView | undefined> {
    const processes = this.options.viewSet('processes');
    const byProcess = [view, ...reads.map((read) => read.view)].some((set) => set.audienceColumn === 'process_id');
    if (!processes || !byProcess) return undefined;
    const partitions = await queryablePartitions(
      this.options.db,
      processes.name,
      globalInstance,
      schemaHash(processes.columns),
    );
    return { view: processes, files: filesOf(partitions).map((key) => this.options.store.location(key)) };
  }

  /** The audiences of the rows these sets hold (read whole); null for rows of no known audience. */
  private async audiencesOf(
    reads: readonly SessionView[],
    processAudiences?: SessionView,
  ): Promise<Array<string | null>> {
    const each = reads.map(({ view }) =>
      view.audienceColumn === 'audience'
        ? `SELECT audience FROM ${quoteIdentifier(view.name)}`
        : `SELECT owner.audience FROM (SELECT DISTINCT process_id FROM ${quoteIdentifier(view.name)}) LEFT JOIN ${owners(processAudiences)} AS owner USING (process_id)`,
    );
    if (each.length === 0) return [];
    const rows = await this.rows(
      `SELECT DISTINCT audience FROM (${each.join(' UNION ALL ')}) ORDER BY audience NULLS FIRST`,
      sessionStatements(reads, { kind: 'all' }),
    );
    return rows.map(([audience]) => (typeof audience === 'string' ? audience : null));
  }

  /** Whether every row of a set's file built from one audience's rows (null: of no known audience) is of that audience. */
  private async allOfAudience(
    view: ViewSet,
    file: string,
    audience: string | null,
    processAudiences?: SessionView,
  ): Promise<boolean> {
    const rows = `(${filesRelation(view.columns, [file])})`;
    const value = audience === null ? 'NULL' : quoteLiteral(audience);
    const others =
      view.audienceColumn === 'audience'
        ? `SELECT count(*) FROM ${rows} WHERE audience IS DISTINCT FROM ${value}`
        : `SELECT count(*) FROM ${rows} AS made LEFT JOIN ${owners(processAudiences)} AS owner USING (process_id) WHERE owner.audience IS DISTINCT FROM ${value}`;
    const [[count]] = await this.rows(others, []);
    return Number(count) === 0;
  }

  /**
   * Whether a SQL-defined set's extract makes no rows over a range where the sets it reads have no partition
   * file: it then reads empty relations, so DuckDB answers without the store, and no empty file is written
   * and deleted (on S3 an idle second cost log_stats a PUT and a DELETE). Its count query is no guide: it
   * may count what the extract does not read (log_stats counts the blocks view set's rows), and an extract
   * can make rows from empty relations (an aggregate without GROUP BY), so the extract itself is asked.
   */
  private async extractsNothing(source: SqlSource, range: InsertRange): Promise<boolean> {
    const reads = await this.readPartitions(source.extractReads, range);
    if (reads.some((read) => read.keys.length > 0)) return false;
    const setup = sessionStatements(
      reads.map(({ view }) => ({ view, files: [] })),
      { kind: 'all' },
    );
    const [[rows]] = await this.rows(`SELECT count(*) FROM (${withRange(source.extractQuery, range)})`, setup);
    return BigInt(rows as number | bigint) === 0n;
  }

  private async extractedFrom(view: ViewSet, range: InsertRange, count: bigint, ordered = true): Promise<Partition> {
    const extract = await this.extract(view, range, ordered);
    const { oneStream, cleanup } = extract;
    try {
      return await this.write(view, range, count, extract);
    } catch (error) {
      // A block whose begin_time is after its records' first time (the ordered read's first times are the
      // blocks'): its rows would leave time order, so the range is read through the join and sort instead. So is
      // a range with a gzip body stored before ingestion checked its trailer, which misstates what it holds: the
      // read's hold was sized by that figure (the sort decodes one payload per thread and spills).
      const refused = [orderedFirstTimeRefused, orderedGzipLengthRefused];
      if (!oneStream || !(error instanceof Error) || !refused.some((r) => error.message.includes(r))) throw error;
    } finally {
      await cleanup();
    }
    return this.extractedFrom(view, range, count, false);
  }

  /** Refuses to register files whose writing began so long ago that housekeeping may take them for orphans. */
  private checkWrittenInTime(view: ViewSet, started: number): void {
    const seconds = (Date.now() - started) / 1000;
    if (seconds > this.options.orphanGraceSeconds / 2)
      throw maintenanceErrors.error(
        'PARTITION_WRITE_TOO_SLOW',
        `${view.name}: writing the partition took ${Math.round(seconds)} s, more than half of ORRERY_ORPHAN_GRACE_SECONDS; it is not registered and the range will be built again`,
      );
  }

  /** Registers a partition written since `started`, retiring what it replaces; its file goes if that fails. */
  private async commit(
    view: ViewSet,
    partition: Partition,
    started: number,
    mergedFrom?: readonly string[],
  ): Promise<void> {
    try {
      this.checkWrittenInTime(view, started);
      await commitPartition(this.options.db, partition, this.options.retireDelaySeconds, this.changed, mergedFrom);
    } catch (error) {
      if (partition.filePath) await this.options.store.delete(partition.filePath);
      throw overlapping(view, { begin: partition.beginInsertTime, end: partition.endInsertTime }, error);
    } finally {
      this.forgetWritten([partition]);
    }
    await this.indexed(view, partition);
  }

  /** Records the indexes' statistics of a new partition; a failure only costs queries reading it whole. */
  private async indexed(view: ViewSet, partition: Partition): Promise<void> {
    const { db, store, engine } = this.options;
    await indexPartition({ db, store, lakeRows: (sql) => engine.values(sql) }, partition).catch((error: unknown) =>
      this.options.log?.(
        'warn',
        `${view.name}: the indexes' statistics of a new partition were not recorded (${(error as Error).message}); queries read it whole`,
      ),
    );
  }

  /**
   * The hook of every change this materializer makes to partitions: in its transaction, records which
   * stored columns each new file holds (queries read a column only from files listed so) and forgets the
   * files it retires, then the caller's hook.
   */
  private readonly changed: PartitionChangeHook = async (tx, change) => {
    await ensureLedger(this.options.db);
    const written = new Map(change.added.flatMap((f) => (this.storedIn.has(f) ? [[f, this.storedIn.get(f)!]] : [])));
    await recordColumnFiles(tx, change.viewSetName, written, change.retired);
    for (const p of change.partitions ?? []) {
      const failed = this.failedIn.get(p);
      const range = { begin: p.beginInsertTime, end: p.endInsertTime };
      if (failed) await recordFailedAudiences(tx, p.viewSetName, range, failed, this.options.version);
    }
    await this.options.onPartitionsChanged?.(tx, change);
  };

  private forgetWritten(partitions: readonly Partition[]): void {
    for (const p of partitions) {
      if (p.filePath) this.storedIn.delete(p.filePath);
      this.failedIn.delete(p);
    }
  }

  /**
   * Rewrites one partition file of a set with every stored column installed on it and registers the new
   * file in its place (a stored column's backfill); false when the file is no longer a current partition
   * of the set (replaced meanwhile, or of an older schema, which no query reads).
   */
  async storeColumns(viewName: string, filePath: string): Promise<boolean> {
    const view = this.options.viewSet(viewName);
    if (!view) throw maintenanceErrors.error('SOURCE_VIEW_NOT_LOADED', `view set '${viewName}' is not loaded`);
    const old = await partitionOfFile(this.options.db, filePath);
    if (!old || old.viewSetName !== view.name || !old.schemaHash.equals(schemaHash(view.columns))) return false;
    const started = Date.now();
    const range = { begin: old.beginInsertTime, end: old.endInsertTime };
    const rows = filesRelation(view.columns, [this.options.store.location(filePath)]);
    const written = {
      ...(await this.write(view, range, old.sourceCount, { sql: rows, setup: [] })),
      sortOrder: old.sortOrder,
    };
    let replaced = false;
    try {
      this.checkWrittenInTime(view, started);
      replaced = await replacePartitionFile(
        this.options.db,
        filePath,
        written,
        this.options.retireDelaySeconds,
        this.changed,
      );
    } finally {
      this.forgetWritten([written]);
      if (!replaced && written.filePath) await this.options.store.delete(written.filePath);
    }
    if (replaced) await this.indexed(view, written);
    return replaced;
  }

  /**
   * Runs `work`, which reads the partitions of the named sets over the range; when it fails on their
   * data and some of their files cannot be read, those are contained and `work` runs once more.
   */
  private async containing<T>(reads: readonly string[], range: InsertRange, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!isDataError(error) || (await this.containUnreadable(await this.readFiles(reads, range))) === 0) throw error;
      return work();
    }
  }

  /**
   * Partition files (object keys) that cannot be read (missing, truncated, overwritten) are taken out of
   * the lake's partitions and recorded as quarantined (list_quarantined_partitions(), the
   * orrery_quarantined_partitions metric), and their range is rebuilt from its source, so merges,
   * the sets defined over them and queries carry on; see UnreadablePartitions for a range whose source
   * is gone. Returns how many files the lake no longer names; a readable file is left alone. The file
   * itself stays in place, for inspection.
   */
  containUnreadable(paths: readonly string[]): Promise<number> {
    return this.unreadablePartitions.contain(paths);
  }

  /** Forgets lost partitions whose file reads whole again (see UnreadablePartitions.forgetRecovered). */
  forgetRecoveredPartitions(): Promise<void> {
    return this.unreadablePartitions.forgetRecovered();
  }

  /** Reads every value of a partition file: null when that works, else DuckDB's message (a system failure throws). */
  private async unreadableFile(path: string): Promise<string | null> {
    try {
      await this.rows(
        `SELECT count(*) FROM read_parquet(${quoteLiteral(this.options.store.location(path))}) AS t WHERE hash(t) IS NULL`,
        [],
      );
      return null;
    } catch (error) {
      if (!isDataError(error)) throw error;
      return (error as Error).message;
    }
  }

  /**
   * Finds the blocks of a range whose payload fails the extract on its own (halving the set, so k bad
   * blocks among n cost about k log n reads) and quarantines them; returns how many. When every block
   * of a window of several fails, the fault is the system's (memory, disk) rather than the data's, and
   * none is quarantined.
   */
  private async quarantineUnreadable(
    view: ViewSet,
    source: PayloadSource,
    range: InsertRange,
    windowError: string,
  ): Promise<number> {
    const blocks = await blocksInRange(this.options.db, range, { view: view.name, tag: source.tag });
    const bad = await this.unreadable(view, source, blocks, windowError);
    if (bad.length === 0 || (blocks.length > 1 && bad.length === blocks.length)) return 0;
    for (const { block, error } of bad) {
      await quarantine(
        this.options.db,
        { blockId: block.block_id, insertTime: block.insert_time },
        view.name,
        error,
        this.options.version,
      );
      this.options.log?.(
        'warn',
        `quarantined block ${block.block_id} (audience ${block.audience}) of ${view.name}: ${error}`,
      );
    }
    return bad.length;
  }

  private async unreadable(
    view: ViewSet,
    source: PayloadSource,
    blocks: BlockRow[],
    knownError?: string,
  ): Promise<Array<{ block: BlockRow; error: string }>> {
    const error = knownError ?? (await this.probe(view, source, blocks));
    if (error === null) return [];
    if (blocks.length === 1) return [{ block: blocks[0], error }];
    const half = Math.ceil(blocks.length / 2);
    return [
      ...(await this.unreadable(view, source, blocks.slice(0, half))),
      ...(await this.unreadable(view, source, blocks.slice(half))),
    ];
  }

  /** Runs the extract over these blocks alone into a scratch file: null when it succeeds, else DuckDB's message. */
  private async probe(view: ViewSet, source: PayloadSource, blocks: BlockRow[]): Promise<string | null> {
    const { scratch, engine } = this.options;
    const { sql, setup, cleanup } = await this.payloadExtract(view, source, blocks);
    const key = scratchKey('parquet');
    try {
      await engine.execute(
        `COPY (${typedColumns(view.columns, sql)}) TO ${quoteLiteral(await scratch.writableLocation(key))} (FORMAT parquet)`,
        { setup },
      );
      return null;
    } catch (error) {
      if (!isDataError(error)) throw error;
      return (error as Error).message;
    } finally {
      await scratch.delete(key);
      await cleanup();
    }
  }

  /**
   * Releases quarantined blocks (every one, or those another version recorded) and rebuilds what they
   * were left out of: each released set's partition covering the block, then those of the sets defined
   * in SQL that read it, directly or not. A block that still fails is quarantined again. Yields one
   * message per step, nothing when no block was quarantined.
   */
  async *retryQuarantined(
    views: readonly ViewSet[],
    options: { otherVersionsOnly?: boolean } = {},
  ): AsyncGenerator<string> {
    const version = options.otherVersionsOnly ? this.options.version : undefined;
    const released = await release(this.options.db, version);
    const audiences = await audiencesToRetry(this.options.db, version);
    if (released.length === 0 && audiences.length === 0) return;
    const times = new Map<string, bigint[]>();
    for (const block of released) {
      times.set(block.viewSetName, [...(times.get(block.viewSetName) ?? []), block.insertTime]);
      yield `released block ${block.blockId} of ${block.viewSetName}`;
    }
    for (const failed of audiences) {
      times.set(failed.viewSetName, [...(times.get(failed.viewSetName) ?? []), failed.range.begin]);
      // The rows of no known audience (null) apart from an audience '' (as snouttime.jobs tells them).
      const which =
        failed.audience === null
          ? 'the rows of no known audience'
          : `audience ${failed.audience === '' ? "''" : failed.audience}`;
      yield `released ${which} of ${failed.viewSetName} [${nanosToIso(failed.range.begin)}, ${nanosToIso(failed.range.end)})`;
    }
    yield* this.rebuildCovering(views, times);
    if (released.length > 0) yield `retried ${released.length} quarantined block(s)`;
    if (audiences.length > 0) yield `retried ${audiences.length} failed audience(s)`;
  }

  /**
   * Builds again, with a set's new definition (CREATE OR REPLACE), the ranges it left audiences out of (and those
   * of the sets defined in SQL that read it): each build records the audiences it leaves out in place of the old
   * definition's, so no record stays of an extract that is gone, and no audience stays out that the new one holds.
   */
  async *rebuildFailedAudiences(views: readonly ViewSet[], viewSet: string): AsyncGenerator<string> {
    const failed = (await failedAudiences(this.options.db, null)).filter((f) => f.viewSetName === viewSet);
    if (failed.length > 0) yield* this.rebuildCovering(views, new Map([[viewSet, failed.map((f) => f.range.begin)]]));
  }

  /** Rebuilds each set's partitions covering these insert times, then those of the sets defined in SQL that read them. */
  private async *rebuildCovering(views: readonly ViewSet[], times: Map<string, bigint[]>): AsyncGenerator<string> {
    const ordered = [...views].sort((a, b) => a.updateGroup - b.updateGroup || a.name.localeCompare(b.name));
    for (const view of ordered) {
      if (view.source.kind !== 'sql') continue;
      const read = view.source.reads.flatMap((name) => times.get(name) ?? []);
      if (read.length > 0) times.set(view.name, read);
    }
    for (const view of ordered) {
      const viewTimes = times.get(view.name);
      if (!viewTimes) continue;
      for (const range of await this.coveringRanges(view, viewTimes)) {
        const outcome = await this.materialize(view, range, view.source.kind === 'sql');
        yield `${view.name} [${nanosToIso(range.begin)}, ${nanosToIso(range.end)}): ${outcome}`;
      }
    }
  }

  /**
   * The ranges of a set's partitions holding these insert times; a one-second range where none does. Of a partition
   * wider than the set's source width (merged), the piece of that width holding the time: materialize builds no
   * wider range, and rebuilds the partition in such pieces around it.
   */
  private async coveringRanges(view: ViewSet, insertTimes: readonly bigint[]): Promise<InsertRange[]> {
    const ranges = new Map<string, InsertRange>();
    const second = 1_000_000_000n;
    const width = secondsToNanos(view.sourceDeltaSeconds);
    for (const time of insertTimes) {
      const partitions = await partitionsOverlapping(
        this.options.db,
        view.name,
        globalInstance,
        schemaHash(view.columns),
        time,
        time + 1000n,
      );
      const piece = (p: Partition): InsertRange => {
        // As cut() cuts the partition's range.
        const begin =
          time > p.beginInsertTime
            ? p.beginInsertTime + ((time - p.beginInsertTime) / width) * width
            : p.beginInsertTime;
        return { begin, end: begin + width < p.endInsertTime ? begin + width : p.endInsertTime };
      };
      const found =
        partitions.length > 0
          ? partitions.map(piece)
          : [{ begin: time - (time % second), end: time - (time % second) + second }];
      for (const range of found) ranges.set(`${range.begin}:${range.end}`, range);
    }
    return [...ranges.values()].sort((a, b) => (a.begin < b.begin ? -1 : a.begin > b.begin ? 1 : 0));
  }

  private async merge(view: ViewSet, range: InsertRange, inputs: Partition[], count: bigint): Promise<void> {
    const keys = filesOf(inputs);
    const files = keys.map((key) => this.options.store.location(key));
    const source = `(${filesRelation(view.columns, files)})`;
    const order = view.mergeSortOrder?.length ? ` ORDER BY ${view.mergeSortOrder.map(quoteIdentifier).join(', ')}` : '';
    const started = Date.now();
    await this.commit(
      view,
      await this.write(view, range, count, {
        sql: `SELECT * FROM (${view.mergeQuery.replaceAll('{source}', source)})${order}`,
        setup: [],
      }),
      started,
      keys,
    );
  }

  /** Writes the rows of an extract as the range's new partition file. */
  private async write(
    view: ViewSet,
    range: InsertRange,
    count: bigint,
    extract: Omit<ExtractQuery, 'cleanup'>,
  ): Promise<Partition> {
    const { sql, setup, oneStream = false, enums = [], direct } = extract;
    const { store, engine, db } = this.options;
    const key = partitionKey(view.name, globalInstance, range.begin);
    const path = await store.writableLocation(key);
    // Every stored column installed on the set is computed into the file (recorded as held at its commit).
    const stored = await installedColumns(db, [view.name]);
    // With a bloom_filter index on the set, every column chunk gets a Parquet bloom filter.
    const options = await parquetWriteOptions(db, view.name, partitionRowGroupSize);
    // ENUM columns go into the file as they are, but cast to their type for a stored column's expression (written
    // for the set's types) and for bloom filters (DuckDB writes none for an ENUM column).
    const uncast = stored.length === 0 && options === '' ? new Set(enums) : new Set<string>();
    const body = withStoredColumns(typedColumns(view.columns, sql, [], uncast), stored);
    // The native writer writes log_entries' columns alone, with the bloom filters DuckDB writes by default, to a
    // local file (not to S3, which DuckDB reaches through httpfs).
    const written =
      direct && stored.length === 0 && options === '' && !store.needsHttpfs && shippedLogEntries(view)
        ? await this.writtenDirectly(view, key, path, setup, direct)
        : null;
    const rows =
      written ??
      (await engine.execute(
        `COPY (${oneStream ? body : inOneStream(body)}) TO ${quoteLiteral(path)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${partitionRowGroupSize}${oneStream ? ', PRESERVE_ORDER false' : ''}${options})`,
        { setup },
      ));
    if (rows === 0) {
      await store.delete(key);
      return emptyPartition(view, range, count);
    }
    if (stored.length > 0)
      this.storedIn.set(
        key,
        stored.map((c) => c.name),
      );
    // Event-time bounds from the row groups' statistics in the footer: no data is read again.
    const [row] = await this.rows(
      `SELECT epoch_ns(min(TRY_CAST(stats_min AS TIMESTAMP_NS)) FILTER (WHERE path_in_schema = ${quoteLiteral(view.minTimeColumn)})),
              epoch_ns(max(TRY_CAST(stats_max AS TIMESTAMP_NS)) FILTER (WHERE path_in_schema = ${quoteLiteral(view.maxTimeColumn)}))
         FROM parquet_metadata(${quoteLiteral(path)})`,
      [],
    );
    return {
      ...emptyPartition(view, range, count),
      minEventTime: row[0] === null ? null : BigInt(row[0] as bigint),
      maxEventTime: row[1] === null ? null : BigInt(row[1] as bigint),
      filePath: key,
      fileSize: (await store.size(key)) ?? 0,
      numRows: rows,
    };
  }

  /**
   * The rows of the ordered read written to `path` by the native writer (orderedLogsWriter), or null when it is not
   * used, does not write these blocks (see writeOrderedLogsPartition) or fails: the statement then writes the file
   * (and fails, quarantines or reads the range unordered as it does). A failure is logged, unless it is one the
   * statement reads the range unordered for (orderedFirstTimeRefused, orderedGzipLengthRefused), which it rethrows.
   */
  private async writtenDirectly(
    view: ViewSet,
    key: string,
    path: string,
    setup: string[],
    direct: DirectWrite,
  ): Promise<number | null> {
    const writer = this.options.orderedLogsWriter;
    if (!writer) return null;
    // The block fields as the statement's read takes them (orderedBlocks, in the setup): the same text.
    const [[fields]] = await this.rows(`SELECT getvariable('__orrery_blocks')`, setup);
    const blocks = [...(fields as Iterable<string | null>)];
    try {
      return await writer(
        direct.file,
        direct.sizes,
        direct.firstTimes.map(String),
        blocks,
        path,
        `Orrery version ${this.options.version}`,
      );
    } catch (error) {
      await this.options.store.delete(key);
      const message = error instanceof Error ? error.message : String(error);
      if ([orderedFirstTimeRefused, orderedGzipLengthRefused].some((r) => message.includes(r))) throw error;
      this.options.log?.(
        'warn',
        `${view.name}: the native partition writer failed (${message}); the statement writes the partition`,
      );
      return null;
    }
  }

  /** The extract query of a range, with what it needs set up on its connection. */
  private async extract(view: ViewSet, range: InsertRange, ordered: boolean): Promise<ExtractQuery> {
    const { source } = view;
    const none = async (): Promise<void> => {};
    if (source.kind === 'sql') {
      return {
        sql: withRange(source.extractQuery, range),
        setup: await this.readSession(source.reads, range),
        cleanup: none,
      };
    }
    const { scratch } = this.options;
    const tempKey = scratchKey('jsonl');
    const cleanup = (): Promise<void> => scratch.delete(tempKey);
    if (source.kind === 'metadata') {
      const rows =
        source.table === 'blocks'
          ? await blocksInRange(this.options.db, range)
          : await metadataRows(this.options.db, source.table, range);
      if (rows.length === 0) return { sql: emptyOf(view.columns), setup: [], cleanup: none };
      await scratch.put(tempKey, jsonLines(rows), { durable: false });
      return { sql: readJson(scratch.location(tempKey), view.columns), setup: [], cleanup };
    }
    return this.payloadExtract(
      view,
      source,
      await blocksInRange(this.options.db, range, { view: view.name, tag: source.tag }),
      ordered,
    );
  }

  /** The extract of a payload set over these blocks: their metadata in `__blocks`, their payload files read as JSON. */
  private async payloadExtract(
    view: ViewSet,
    source: PayloadSource,
    blocks: readonly BlockRow[],
    ordered = false,
  ): Promise<ExtractQuery> {
    const { store, scratch } = this.options;
    if (blocks.length === 0) return { sql: emptyOf(view.columns), setup: [], cleanup: async () => {} };
    const tempKey = scratchKey('jsonl');
    const localKeys: string[] = [];
    const cleanup = async (): Promise<void> => {
      for (const key of [tempKey, ...localKeys]) await scratch.delete(key);
    };
    // A few objects at a time (the payloads of a group's blocks in one read), so that memory holds a few objects'.
    const byObject = new Map<string, BlockRow[]>();
    for (const b of blocks) {
      const key = b.payload_file ?? b.block_id;
      const sharing = byObject.get(key);
      if (sharing) sharing.push(b);
      else byObject.set(key, [b]);
    }
    const paths = new Map<BlockRow, string>();
    const indexes = new Map<BlockRow, number>();
    // Logs payloads holding protobuf, one after the other in one scratch file, for __orrery_otlp_logs (which
    // reads the scratch folder only): a file per payload cost ~1.7 ms of file calls each under load. `sizes`
    // are their bytes in the file, `contents` their protobuf's (what the ordered read holds decoded).
    const bundle = { key: scratchKey('otlp'), sizes: [] as number[], contents: [] as number[] };
    const protobuf = new Set<string>();
    const decodes = source.tag === 'log' ? this.options.protobufLogs : undefined;
    let bundleFile: Promise<FileHandle> | null = null;
    let bundleEnd = 0;
    const objects = [...byObject.values()];
    let next = 0;
    const reader = async (): Promise<void> => {
      for (let o = next++; o < objects.length; o = next++) {
        const sharing = objects[o];
        const places = sharing.map(payloadPlace);
        const payloads = await readPayloadsOfObject(store, places);
        // A protobuf payload the server compressed says so, and so does a gzip body kept as received once its first
        // bytes are inflated: it goes into the bundle as stored, and the table function decompresses it on the
        // thread that decodes it. Others (NDJSON, protobuf stored before that mark) are decompressed here together
        // on libuv's threads, to learn what they hold.
        const contents = await Promise.all(
          payloads.map(async (p) => {
            if (p === null || !decodes) return null;
            const size = storedProtobufSize(p);
            if (size !== null) return { content: p, size };
            const content = await decodes(p);
            return content === null ? null : { content, size: content.byteLength };
          }),
        );
        for (const [i, b] of sharing.entries()) {
          if (contents[i] !== null) {
            const { content, size } = contents[i];
            if (bundleFile === null) {
              localKeys.push(bundle.key);
              bundleFile = scratch.writableLocation(bundle.key).then((path) => open(path, 'w'));
            }
            // Its place and index taken at once, before any wait: the payloads lie in the order of their indexes.
            const position = bundleEnd;
            bundleEnd += content.byteLength;
            const name = protobufPayloadName(scratch.location(bundle.key), bundle.sizes.length);
            indexes.set(b, bundle.sizes.length);
            bundle.sizes.push(content.byteLength);
            bundle.contents.push(size);
            protobuf.add(name);
            paths.set(b, name);
            await (await bundleFile).write(content, 0, content.byteLength, position);
            continue;
          }
          const local = await this.localPayload(places[i], payloads[i]);
          if (local !== null) localKeys.push(local);
          paths.set(b, local === null ? store.location(places[i].key) : scratch.location(local));
        }
      }
    };
    try {
      // A few objects read at once: each read is a few file calls whose waits add up when made one by one.
      const settled = await Promise.allSettled(Array.from({ length: objectReads }, reader));
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    } finally {
      // Assigned in the readers, which TypeScript does not follow here.
      const opened = bundleFile as Promise<FileHandle> | null;
      if (opened !== null)
        await opened.then(
          (file) => file.close(),
          () => undefined,
        );
    }
    const withPaths = blocks.map((b) => ({ ...b, path: paths.get(b)!, payload: indexes.get(b) ?? null }));
    await scratch.put(tempKey, jsonLines(withPaths), { durable: false });
    const blockColumns: ColumnSpec[] = [
      { name: 'block_id', type: 'VARCHAR' },
      { name: 'stream_id', type: 'VARCHAR' },
      { name: 'process_id', type: 'VARCHAR' },
      { name: 'insert_time', type: 'TIMESTAMP_NS' },
      { name: 'exe', type: 'VARCHAR' },
      { name: 'username', type: 'VARCHAR' },
      { name: 'computer', type: 'VARCHAR' },
      { name: 'process_properties', type: 'JSON' },
      { name: 'audience', type: 'VARCHAR' },
      { name: 'path', type: 'VARCHAR' },
      { name: 'payload', type: 'UBIGINT' },
    ];
    const setup = [`CREATE OR REPLACE TEMP TABLE __blocks AS ${readJson(scratch.location(tempKey), blockColumns)}`];
    const ndjson = withPaths.map((b) => b.path).filter((path) => !protobuf.has(path));
    if (ndjson.length === 0 && source.ordered && ordered) {
      const firstTimes = mergeFirstTimes(withPaths, bundle.contents);
      if (firstTimes !== null) {
        const rows = orderedProtobufLogs(
          scratch.location(bundle.key),
          bundle.sizes,
          firstTimes,
          orderedEnumFields,
          partitionRowGroupSize,
        );
        return {
          enums: orderedEnumFields,
          sql: source.ordered.replaceAll('{payloads}', rows),
          setup: [...setup, orderedBlocks],
          cleanup,
          oneStream: true,
          direct: { file: scratch.location(bundle.key), sizes: bundle.sizes, firstTimes },
        };
      }
    }
    const rows = payloadRows(
      source.tag,
      ndjson,
      bundle.sizes.length > 0 ? { file: scratch.location(bundle.key), sizes: bundle.sizes } : undefined,
    );
    return { sql: source.extract.replaceAll('{payloads}', rows), setup, cleanup };
  }

  /**
   * A payload (read whole: an NDJSON payload of its own is then read again by DuckDB, as a prefix read used to
   * cost anyway) copied to a scratch object as the NDJSON lines DuckDB reads, whose key this returns: a segment of
   * a group's object (DuckDB reads whole files), or a payload stored as received (protobuf) decoded. Null for
   * an NDJSON payload that is an object of its own, which DuckDB reads in place, and for one that cannot be
   * read or decoded, which is then read in place too, so DuckDB's error on it quarantines its block as usual
   * (a segment that cannot be decoded is copied as it is, for the same reason).
   */
  private async localPayload(place: PayloadPlace, payload: Uint8Array | null): Promise<string | null> {
    const { scratch } = this.options;
    if (payload === null) return null; // gone: DuckDB's read of it fails and quarantines it
    const segment = place.size !== null;
    let lines = payload;
    if (payload.length > 0 && payload[0] !== 0x7b /* '{': NDJSON */) {
      try {
        lines = payloadLines(payload);
      } catch {
        if (!segment) return null;
      }
    } else if (!segment) return null;
    const local = scratchKey('jsonl');
    await scratch.put(local, lines, { durable: false });
    return local;
  }

  /** The sets a SQL-defined set reads, each with the object keys of its partition files in the range. */
  private async readPartitions(
    names: readonly string[],
    range: InsertRange,
  ): Promise<Array<{ view: ViewSet; keys: string[] }>> {
    const out = [];
    for (const name of names) {
      const view = this.options.viewSet(name);
      if (!view) throw maintenanceErrors.error('SOURCE_VIEW_NOT_LOADED', `view set '${name}' is not loaded`);
      const partitions = await partitionsOverlapping(
        this.options.db,
        view.name,
        globalInstance,
        schemaHash(view.columns),
        range.begin,
        range.end,
      );
      out.push({ view, keys: filesOf(partitions) });
    }
    return out;
  }

  /** The partition files (object keys) of the sets a SQL-defined set reads, in the range. */
  private async readFiles(names: readonly string[], range: InsertRange): Promise<string[]> {
    return (await this.readPartitions(names, range)).flatMap((read) => read.keys);
  }

  /** Temporary views of the sets a SQL-defined set reads, over their partitions in the range. */
  private async readSession(names: readonly string[], range: InsertRange): Promise<string[]> {
    const views = (await this.readPartitions(names, range)).map(({ view, keys }) => ({
      view,
      files: keys.map((key) => this.options.store.location(key)),
    }));
    return sessionStatements(views, { kind: 'all' });
  }

  private async rows(sql: string, setup: string[]): Promise<unknown[][]> {
    const { batches } = await this.options.engine.query(sql, { setup });
    const out: unknown[][] = [];
    for await (const batch of batches) {
      for (let i = 0; i < batch.numRows; i++) out.push(batch.schema.fields.map((_, c) => batch.getChildAt(c)?.get(i)));
    }
    return out;
  }
}

/**
 * Each bundled payload's first time when a merge of the payloads by first time holds at most orderedHoldBytes of
 * them at once, else null. A payload's first and last times are its block's begin_time and end_time: its records'
 * earliest and latest time as ingestion's scan found them, to the microsecond down and up (so the merge takes a
 * payload a little early, never late), with no walk of the payloads before the read. When payload j is decoded,
 * every payload before it whose last time is before j's first time is done; the others are held (a bound: their
 * early rows are out already).
 */
function mergeFirstTimes(
  blocks: ReadonlyArray<BlockRow & { readonly payload: number | null }>,
  sizes: readonly number[],
): bigint[] | null {
  const first = new Array<bigint>(sizes.length).fill(0n);
  const last = new Array<bigint>(sizes.length).fill(0n);
  for (const b of blocks)
    if (b.payload !== null) {
      first[b.payload] = pgIsoToNanos(b.begin_time);
      last[b.payload] = pgIsoToNanos(b.end_time);
    }
  const byFirst = sizes.map((_, i) => i).sort((a, b) => (first[a] < first[b] ? -1 : first[a] > first[b] ? 1 : a - b));
  const byLast = sizes.map((_, i) => i).sort((a, b) => (last[a] < last[b] ? -1 : last[a] > last[b] ? 1 : 0));
  // A payload whose last time is before j's first time comes before j by first time: it was added already.
  let added = 0;
  let done = 0;
  let next = 0;
  for (const j of byFirst) {
    added += sizes[j];
    for (; next < byLast.length && last[byLast[next]] < first[j]; next++) done += sizes[byLast[next]];
    if (added - done > orderedHoldBytes) return null;
  }
  return first;
}

/** The object keys of the partitions that have a file. */
function filesOf(partitions: readonly Partition[]): string[] {
  return partitions.flatMap((p) => (p.filePath === null ? [] : [p.filePath]));
}

/** A range cut in consecutive pieces at most `width` wide. */
function cut(range: InsertRange, width: bigint): InsertRange[] {
  const pieces: InsertRange[] = [];
  for (let b = range.begin; b < range.end; b += width)
    pieces.push({ begin: b, end: b + width < range.end ? b + width : range.end });
  return pieces;
}

/**
 * The rows of `sql` in its order, handed to the Parquet writer by one thread: a sorted result that several
 * threads copy in order makes DuckDB buffer the batches that come early, and that buffer grows with the rows
 * (2 M log records sorted by time ran out of a 256 MB limit, 6 M out of 384 MB; read in one stream, 6 M fit in
 * 384 MB). The sort, the decoding and the join before it still run on every thread; a row_number() over
 * nothing is DuckDB's streaming window, which reads its input in order on one thread.
 */
function inOneStream(sql: string): string {
  return `SELECT * EXCLUDE (__orrery_row) FROM (SELECT row_number() OVER () AS __orrery_row, * FROM (${sql}))`;
}

/** An extract query, with what it needs set up on its connection and removed after it. */
interface ExtractQuery {
  sql: string;
  setup: string[];
  cleanup: () => Promise<void>;
  /**
   * The rows come from __orrery_otlp_logs_ordered, in turns of a row group each, so inOneStream's window is left out
   * and the COPY runs with PRESERVE_ORDER false: with two or more maintenance threads (ORRERY_MAINTENANCE_THREADS),
   * two of them take the merged rows in turns and DuckDB's Parquet writer encodes and compresses each one's row group
   * on that thread, beside the other's (the statement's busiest thread 0.96-1.08 -> 0.49-0.58 CPU-s per 1 M rows
   * in-process, the process's CPU the same, bench/materialization/README.md). Each row group holds consecutive rows
   * of the merge in time order, but two of them may reach the file in either order.
   */
  oneStream?: boolean;
  /** Columns that may come as ENUMs of their values (orderedEnumFields), which the file may take as they are. */
  enums?: readonly string[];
  /** The ordered read's inputs (orderedProtobufLogs'), which the native writer may write the file from instead. */
  direct?: DirectWrite;
}

/** The payloads' file, their sizes in it and their first times, as orderedProtobufLogs takes them. */
interface DirectWrite {
  readonly file: string;
  readonly sizes: readonly number[];
  readonly firstTimes: readonly bigint[];
}

/** `{begin}` and `{end}` as RFC 3339 with nanoseconds. */
export function withRange(query: string, range: InsertRange): string {
  return query.replaceAll('{begin}', nanosToIso(range.begin)).replaceAll('{end}', nanosToIso(range.end));
}

function emptyOf(columns: readonly ColumnSpec[]): string {
  return filesRelation(columns, []);
}

function readJson(path: string, columns: readonly ColumnSpec[]): string {
  const spec = columns.map((c) => `${quoteIdentifier(c.name)}: ${quoteLiteral(c.type)}`).join(', ');
  return `SELECT * FROM read_json(${quoteLiteral(path)}, format = 'newline_delimited', columns = {${spec}})`;
}

function jsonLines(rows: readonly object[]): Uint8Array {
  return Buffer.from(rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
}

/** The record of a range without rows: no file, no event times. */
function emptyPartition(view: ViewSet, range: InsertRange, count: bigint): Partition {
  return {
    viewSetName: view.name,
    viewInstanceId: globalInstance,
    beginInsertTime: range.begin,
    endInsertTime: range.end,
    minEventTime: null,
    maxEventTime: null,
    filePath: null,
    fileSize: 0,
    schemaHash: schemaHash(view.columns),
    sourceCount: count,
    numRows: 0,
    sortOrder: view.mergeSortOrder ? [...view.mergeSortOrder] : null,
  };
}

/**
 * Postgres's exclusion_violation from lakehouse_partitions_no_overlap, as the error it means: another
 * process (a daemon's pass, an admin's call) registered a partition overlapping this range first.
 */
function overlapping(view: ViewSet, range: InsertRange, error: unknown): unknown {
  if ((error as { code?: unknown }).code !== '23P01') return error;
  return maintenanceErrors.error(
    'PARTITION_OVERLAP',
    `${view.name} [${nanosToIso(range.begin)}, ${nanosToIso(range.end)}): another process registered a partition overlapping this range first; nothing was changed, and a later pass rebuilds the range if its source changed`,
  );
}

/** The relation of each process's audience, from the processes set's files (none when no set read is keyed by process). */
function owners(processAudiences: SessionView | undefined): string {
  return processAudiences
    ? `(${filesRelation(processAudiences.view.columns, processAudiences.files)})`
    : '(SELECT NULL::VARCHAR AS process_id, NULL::VARCHAR AS audience LIMIT 0)';
}
