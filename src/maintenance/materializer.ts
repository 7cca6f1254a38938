import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type pg from 'pg';
import type { DuckDBEngine } from '../engine/index.js';
import {
  commitPartition,
  nanosToIso,
  partitionKey,
  partitionsOverlapping,
  payloadKey,
  scratchKey,
  type ObjectStore,
  type Partition,
} from '../lakehouse/index.js';
import {
  filesRelation,
  globalInstance,
  quoteIdentifier,
  quoteLiteral,
  schemaHash,
  sessionStatements,
  typedColumns,
  type ColumnSpec,
  type InsertRange,
  type ViewSet,
} from '../views/index.js';
import { blocksInRange, metadataRows, sourceCount } from './sources.js';

/** What materializing one range did. */
export type Outcome = 'created' | 'merged' | 'up to date' | 'skipped';

export interface MaterializerOptions {
  readonly db: pg.Pool;
  readonly store: ObjectStore;
  /** A DuckDB engine whose readable folder is the lake. */
  readonly engine: DuckDBEngine;
  /** View sets by name, to resolve what a SQL-defined set reads. */
  readonly viewSet: (name: string) => ViewSet | undefined;
  /** Seconds a retired file stays readable before deletion. */
  readonly retireDelaySeconds: number;
}

/**
 * Brings one insert-time range of one view set up to date, the way micromegas decides it:
 * no partition yet, or one whose source count no longer matches, is rebuilt from the
 * source; several partitions that together match are merged into one; a single matching
 * partition is left alone. Files are written before they are registered, and registering
 * retires what they replace in the same transaction, so a crash at any point loses nothing
 * and counts nothing twice.
 */
export class Materializer {
  constructor(private readonly options: MaterializerOptions) {}

  async materialize(view: ViewSet, range: InsertRange, force = false): Promise<Outcome> {
    const hash = schemaHash(view.columns);
    const existing = await partitionsOverlapping(this.options.db, view.name, globalInstance, hash, range.begin, range.end);
    if (existing.some((p) => p.beginInsertTime < range.begin || p.endInsertTime > range.end)) return 'skipped';
    const count = await this.sourceCount(view, range);
    const existingCount = existing.reduce((sum, p) => sum + p.sourceCount, 0n);
    const width = Number((range.end - range.begin) / 1_000_000_000n);
    if (!force && existing.length > 0 && existingCount === count) {
      if (existing.length === 1) return 'up to date';
      if (width > view.mergeDeltaSeconds) return 'skipped';
      await this.merge(view, range, existing, count);
      return 'merged';
    }
    if (width > view.sourceDeltaSeconds) return 'skipped';
    await this.create(view, range, count);
    return 'created';
  }

  /** The source count a partition of this range must carry to be fresh. */
  async sourceCount(view: ViewSet, range: InsertRange): Promise<bigint> {
    const { source } = view;
    if (source.kind !== 'sql') return sourceCount(this.options.db, source, range);
    const setup = await this.readSession(source.reads, range);
    const rows = await this.rows(withRange(source.countQuery, range), setup);
    if (rows.length !== 1 || rows[0].length !== 1) throw new Error(`${view.name}: count_src_query must return one row with one column`);
    return BigInt(rows[0][0] === null ? 0 : (rows[0][0] as number | bigint));
  }

  private async create(view: ViewSet, range: InsertRange, count: bigint): Promise<void> {
    const { sql, setup, cleanup } = await this.extract(view, range);
    try {
      await this.write(view, range, count, sql, setup);
    } finally {
      await cleanup();
    }
  }

  private async merge(view: ViewSet, range: InsertRange, inputs: Partition[], count: bigint): Promise<void> {
    const files = inputs.filter((p) => p.filePath !== null).map((p) => this.options.store.localPath(p.filePath!));
    const source = `(${filesRelation(view.columns, files)})`;
    const order = view.mergeSortOrder?.length ? ` ORDER BY ${view.mergeSortOrder.map(quoteIdentifier).join(', ')}` : '';
    await this.write(view, range, count, `SELECT * FROM (${view.mergeQuery.replaceAll('{source}', source)})${order}`, []);
  }

  /** Writes the rows of `sql` as the range's new partition and registers it. */
  private async write(view: ViewSet, range: InsertRange, count: bigint, sql: string, setup: string[]): Promise<void> {
    const { store, engine } = this.options;
    const key = partitionKey(view.name, globalInstance, range.begin);
    const path = store.localPath(key);
    await mkdir(dirname(path), { recursive: true });
    const rows = await engine.execute(
      `COPY (${typedColumns(view.columns, sql)}) TO ${quoteLiteral(path)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)`,
      { setup },
    );
    let stats: { min: bigint | null; max: bigint | null } = { min: null, max: null };
    if (rows > 0) {
      // Event-time bounds from the row groups' statistics in the footer: no data is read again.
      const [row] = await this.rows(
        `SELECT epoch_ns(min(TRY_CAST(stats_min AS TIMESTAMP_NS)) FILTER (WHERE path_in_schema = ${quoteLiteral(view.minTimeColumn)})),
                epoch_ns(max(TRY_CAST(stats_max AS TIMESTAMP_NS)) FILTER (WHERE path_in_schema = ${quoteLiteral(view.maxTimeColumn)}))
           FROM parquet_metadata(${quoteLiteral(path)})`,
        [],
      );
      stats = { min: row[0] === null ? null : BigInt(row[0] as bigint), max: row[1] === null ? null : BigInt(row[1] as bigint) };
    } else {
      await store.delete(key);
    }
    const partition: Partition = {
      viewSetName: view.name,
      viewInstanceId: globalInstance,
      beginInsertTime: range.begin,
      endInsertTime: range.end,
      minEventTime: stats.min,
      maxEventTime: stats.max,
      filePath: rows > 0 ? key : null,
      fileSize: rows > 0 ? ((await store.size(key)) ?? 0) : 0,
      schemaHash: schemaHash(view.columns),
      sourceCount: count,
      numRows: rows,
      sortOrder: view.mergeSortOrder ? [...view.mergeSortOrder] : null,
    };
    try {
      await commitPartition(this.options.db, partition, this.options.retireDelaySeconds);
    } catch (error) {
      if (rows > 0) await store.delete(key);
      throw error;
    }
  }

  /** The extract query of a range, with what it needs set up on its connection. */
  private async extract(view: ViewSet, range: InsertRange): Promise<{ sql: string; setup: string[]; cleanup: () => Promise<void> }> {
    const { source } = view;
    const none = async (): Promise<void> => {};
    if (source.kind === 'sql') {
      return { sql: withRange(source.extractQuery, range), setup: await this.readSession(source.reads, range), cleanup: none };
    }
    const { store } = this.options;
    const tempKey = scratchKey('jsonl');
    const cleanup = (): Promise<void> => store.delete(tempKey);
    if (source.kind === 'metadata') {
      const rows = source.table === 'blocks' ? await blocksInRange(this.options.db, range) : await metadataRows(this.options.db, source.table, range);
      if (rows.length === 0) return { sql: emptyOf(view.columns), setup: [], cleanup: none };
      await store.put(tempKey, jsonLines(rows));
      return { sql: readJson(store.localPath(tempKey), view.columns), setup: [], cleanup };
    }
    const blocks = await blocksInRange(this.options.db, range, source.tag);
    if (blocks.length === 0) return { sql: emptyOf(view.columns), setup: [], cleanup: none };
    const withPaths = blocks.map((b) => ({ ...b, path: store.localPath(payloadKey(b.process_id, b.stream_id, b.block_id)) }));
    await store.put(tempKey, jsonLines(withPaths));
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
    ];
    const setup = [`CREATE OR REPLACE TEMP TABLE __blocks AS ${readJson(store.localPath(tempKey), blockColumns)}`];
    const payloads = `[${withPaths.map((b) => quoteLiteral(b.path)).join(', ')}]`;
    return { sql: source.extract.replaceAll('{payloads}', payloads), setup, cleanup };
  }

  /** Temporary views of the sets a SQL-defined set reads, over their partitions in the range. */
  private async readSession(names: readonly string[], range: InsertRange): Promise<string[]> {
    const views = [];
    for (const name of names) {
      const view = this.options.viewSet(name);
      if (!view) throw new Error(`view set '${name}' is not loaded`);
      const partitions = await partitionsOverlapping(this.options.db, view.name, globalInstance, schemaHash(view.columns), range.begin, range.end);
      const files = partitions.filter((p) => p.filePath !== null).map((p) => this.options.store.localPath(p.filePath!));
      views.push({ view, files });
    }
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
