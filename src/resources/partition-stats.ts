// The minmax and set indexes: per partition file of a view set, the column's min and max (and, for
// set, its distinct values when there are at most 1000), kept in Postgres beside the partitions.
// Backfilled newest partition first; a file already done is skipped, so an interrupted install resumes.
import { allPartitions, type Partition } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { quoteLiteral } from '../views/index.js';
import { ExpressionAnalyzer } from './expressions.js';
import type { InstallContext, ResourceInstaller } from './installers.js';
import { entryHash, type LedgerRow } from './ledger.js';
import type { ValidEntry } from './validation.js';

export const partitionStatsSchema = `
CREATE TABLE IF NOT EXISTS resource_partition_stats (
  index_hash        TEXT NOT NULL,
  view_set_name     TEXT NOT NULL,
  file_path         TEXT NOT NULL,
  begin_insert_time BIGINT NOT NULL,
  min_value         TEXT,
  max_value         TEXT,
  distinct_values   JSONB,
  PRIMARY KEY (index_hash, file_path)
)`;

/** A set index keeps the distinct values of a partition when there are at most this many. */
export const setIndexLimit = 1000;

/** The SQL expression an index reads: a column entry's expression, or the physical column. */
function indexedExpression(entry: ValidEntry & { kind: 'index' }, entries: readonly ValidEntry[]): string {
  const column = entries.find((e) => e.kind === 'column' && e.file === entry.file && e.key === entry.column);
  return column?.kind === 'column' ? `(${column.expression})` : `"${entry.column.replace(/"/g, '""')}"`;
}

const dayOf = (nanos: bigint): string => new Date(Number(nanos / 1_000_000n)).toISOString().slice(0, 10);

async function* install(entry: ValidEntry, ctx: InstallContext): AsyncGenerator<string> {
  if (entry.kind !== 'index') return;
  await ctx.db.query(partitionStatsSchema);
  const hash = entryHash(entry);
  const files = (await allPartitions(ctx.db))
    .filter((p): p is Partition & { filePath: string } => p.viewSetName === entry.physical && p.filePath !== null)
    .sort((a, b) => (a.endInsertTime < b.endInsertTime ? 1 : a.endInsertTime > b.endInsertTime ? -1 : 0));
  const { rows } = await ctx.db.query<{ file_path: string }>(
    'SELECT file_path FROM resource_partition_stats WHERE index_hash = $1',
    [hash],
  );
  const done = new Set(rows.map((r) => r.file_path));
  const todo = files.filter((f) => !done.has(f.filePath));
  yield `backfill ${entry.indexKind} index ${entry.key} on ${entry.physical}: ${todo.length} of ${files.length} partition(s) to read (${done.size} done before), newest first`;
  if (todo.length === 0) return;
  if (ctx.store.needsHttpfs)
    throw new Error(`${entry.indexKind} indexes are built from a local lake only (this one is reached through httpfs)`);
  const expression = indexedExpression(entry, ctx.entries);
  const analyzer = await ExpressionAnalyzer.open();
  const started = Date.now();
  try {
    for (const [i, partition] of todo.entries()) {
      const source = `read_parquet(${quoteLiteral(ctx.store.location(partition.filePath))})`;
      const distinct =
        entry.indexKind === 'set'
          ? `, CASE WHEN count(DISTINCT v) <= ${setIndexLimit} THEN to_json(list(DISTINCT v::VARCHAR ORDER BY v::VARCHAR)) END AS distinct_values`
          : ', NULL AS distinct_values';
      const [stats] = await analyzer.rows(
        `SELECT min(v)::VARCHAR AS min_value, max(v)::VARCHAR AS max_value${distinct} FROM (SELECT ${expression} AS v FROM ${source})`,
      );
      await ctx.db.query(
        `INSERT INTO resource_partition_stats (index_hash, view_set_name, file_path, begin_insert_time, min_value, max_value, distinct_values)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (index_hash, file_path) DO NOTHING`,
        [
          hash,
          entry.physical,
          partition.filePath,
          partition.beginInsertTime.toString(),
          stats.min_value,
          stats.max_value,
          stats.distinct_values === null || stats.distinct_values === undefined
            ? null
            : String(stats.distinct_values as string),
        ],
      );
      await ctx.progress({
        backfilledBegin: new Date(Number(partition.beginInsertTime / 1_000_000n)),
        backfilledEnd: new Date(Number(todo[0].endInsertTime / 1_000_000n)),
      });
      const left = ((Date.now() - started) / (i + 1)) * (todo.length - i - 1);
      yield `  ${entry.key}: ${i + 1}/${todo.length} partition(s), reached ${dayOf(partition.beginInsertTime)}, about ${Math.ceil(left / 1000)} s left`;
    }
  } finally {
    analyzer.close();
  }
}

async function drop(row: LedgerRow, ctx: { readonly db: MetadataQueries }): Promise<string> {
  await ctx.db.query(partitionStatsSchema);
  const { rowCount } = await ctx.db.query('DELETE FROM resource_partition_stats WHERE index_hash = $1', [row.hash]);
  return `${rowCount ?? 0} partition statistics row(s) deleted`;
}

/** Installs minmax and set indexes; the other index kinds are reported as not installed by this server. */
export const partitionStatsInstaller: ResourceInstaller = {
  unsupported(entry) {
    if (entry.kind !== 'index') return null;
    return entry.indexKind === 'minmax' || entry.indexKind === 'set'
      ? null
      : `this server does not install ${entry.indexKind} indexes yet`;
  },
  install,
  drop,
};
