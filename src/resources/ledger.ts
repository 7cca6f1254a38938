// The resource ledger and the publications, in Orrery's Postgres (created here on first use, as the
// rollups component does): each installed entry's declaration, hash, state, cutover, backfilled
// range, retirement and prune times; each publication's files and content hash; the minmax and set
// indexes (what each reads, its type) and their statistics per partition file; the stored columns and
// the partition files holding each.
import { createHash } from 'node:crypto';
import type { MetadataQueries } from '../metadata/index.js';
import type { ValidEntry } from './validation.js';

export const ledgerSchema = `
CREATE TABLE IF NOT EXISTS resource_publications (
  id           BIGSERIAL PRIMARY KEY,
  content_hash TEXT NOT NULL,
  files        JSONB NOT NULL,
  published_by TEXT,
  created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
  served_at    TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS resource_ledger (
  kind             TEXT NOT NULL,
  physical_table   TEXT NOT NULL,
  entry_key        TEXT NOT NULL,
  hash             TEXT NOT NULL,
  declaration      JSONB NOT NULL,
  state            TEXT NOT NULL,
  publication_id   BIGINT,
  cutover          TIMESTAMPTZ,
  backfilled_begin TIMESTAMPTZ,
  backfilled_end   TIMESTAMPTZ,
  detail           TEXT,
  retired_at       TIMESTAMPTZ,
  prune_after      TIMESTAMPTZ,
  pruned_at        TIMESTAMPTZ,
  updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (kind, physical_table, entry_key, hash)
);
CREATE TABLE IF NOT EXISTS resource_locks (
  namespace  TEXT PRIMARY KEY,
  token      TEXT NOT NULL,
  host       TEXT NOT NULL,
  pid        INTEGER NOT NULL,
  purpose    TEXT NOT NULL,
  since      TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE IF NOT EXISTS resource_indexes (
  index_hash    TEXT PRIMARY KEY,
  view_set_name TEXT NOT NULL,
  entry_key     TEXT NOT NULL,
  kind          TEXT NOT NULL,
  expression    TEXT NOT NULL,
  value_type    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS resource_partition_stats (
  index_hash        TEXT NOT NULL,
  view_set_name     TEXT NOT NULL,
  file_path         TEXT NOT NULL,
  begin_insert_time BIGINT NOT NULL,
  min_value         TEXT,
  max_value         TEXT,
  distinct_values   JSONB,
  PRIMARY KEY (index_hash, file_path)
);
ALTER TABLE resource_partition_stats ADD COLUMN IF NOT EXISTS bloom BYTEA;
-- A text index's postings (src/resources/text-index.ts); NULL for files indexed before they were kept.
ALTER TABLE resource_partition_stats ADD COLUMN IF NOT EXISTS postings BYTEA;
-- The audiences whose rows the file holds ('{}': none, or a set keyed by process), each with statistics of its
-- own rows in resource_audience_stats: a reader's statement decides by its audiences' rows alone (see
-- partition-stats.ts). NULL for files indexed before they were kept (a publish indexes them again).
ALTER TABLE resource_partition_stats ADD COLUMN IF NOT EXISTS audiences TEXT[];
CREATE TABLE IF NOT EXISTS resource_audience_stats (
  index_hash      TEXT NOT NULL,
  file_path       TEXT NOT NULL,
  audience        TEXT NOT NULL,
  min_value       TEXT,
  max_value       TEXT,
  distinct_values JSONB,
  bloom           BYTEA,
  postings        BYTEA,
  PRIMARY KEY (index_hash, file_path, audience)
);
-- A text index's copy of the rows its postings list (object key; partition-stats.ts, writeTextCopy): of the
-- file's rows, and of each audience's. NULL for other kinds, and for files indexed before copies were kept.
ALTER TABLE resource_partition_stats ADD COLUMN IF NOT EXISTS copy_path TEXT;
ALTER TABLE resource_audience_stats ADD COLUMN IF NOT EXISTS copy_path TEXT;
-- NULL until the set has a partition file (an index installed on an empty set): see valueTypeOf.
ALTER TABLE resource_indexes ALTER COLUMN value_type DROP NOT NULL;
-- Bumped when files' statistics are made again (partition-stats.ts, writeStatistics): every server keeps
-- what it read of each file (file-facts.ts) under the index's hash and this, so it reads them again.
ALTER TABLE resource_indexes ADD COLUMN IF NOT EXISTS statistics_generation INTEGER NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS resource_columns (
  column_name     TEXT NOT NULL,
  view_set_name   TEXT NOT NULL,
  entry_key       TEXT NOT NULL,
  expression      TEXT NOT NULL,
  stored_type     TEXT NOT NULL,
  expression_type TEXT,
  PRIMARY KEY (view_set_name, column_name)
);
CREATE TABLE IF NOT EXISTS resource_column_files (
  view_set_name TEXT NOT NULL,
  column_name   TEXT NOT NULL,
  file_path     TEXT NOT NULL,
  PRIMARY KEY (view_set_name, file_path, column_name)
);
-- A stored column of a series table (a DuckLake column) filled: every row of the table (its DuckLake id) at the
-- snapshot held the column's value; rows added since have row ids from next_row_id (src/tables/series-columns.ts).
CREATE TABLE IF NOT EXISTS resource_series_fills (
  table_name  TEXT NOT NULL,
  column_name TEXT NOT NULL,
  table_id    BIGINT NOT NULL,
  snapshot    BIGINT NOT NULL,
  next_row_id BIGINT NOT NULL,
  PRIMARY KEY (table_name, column_name)
);
CREATE TABLE IF NOT EXISTS resource_projections (
  projection_hash TEXT PRIMARY KEY,
  view_set_name   TEXT NOT NULL,
  entry_key       TEXT NOT NULL,
  order_by        JSONB NOT NULL
);
-- The columns a projection stores besides its order_by (NULL: every column).
ALTER TABLE resource_projections ADD COLUMN IF NOT EXISTS columns JSONB;
CREATE TABLE IF NOT EXISTS resource_projection_files (
  projection_hash TEXT NOT NULL,
  view_set_name   TEXT NOT NULL,
  file_path       TEXT NOT NULL,
  copy_path       TEXT NOT NULL,
  PRIMARY KEY (projection_hash, file_path)
);`;

/** One ledger row. */
export interface LedgerRow {
  readonly kind: string;
  readonly physicalTable: string;
  readonly entryKey: string;
  readonly hash: string;
  readonly declaration: ValidEntry;
  /** `installing` (backfill under way or interrupted), `ready`. */
  readonly state: 'installing' | 'ready';
  readonly publicationId: number | null;
  readonly cutover: Date | null;
  readonly backfilledBegin: Date | null;
  readonly backfilledEnd: Date | null;
  readonly detail: string | null;
  readonly retiredAt: Date | null;
  readonly pruneAfter: Date | null;
  readonly prunedAt: Date | null;
}

/** How long a retired resource is kept before prune may drop it. */
export const retirementDays = 7;

let schemaReady: WeakSet<object> = new WeakSet();

/** Creates the ledger tables when missing (once per metadata handle). */
export async function ensureLedger(db: MetadataQueries): Promise<void> {
  if (schemaReady.has(db)) return;
  // One query string: Postgres runs it as one transaction on one connection, so the lock that keeps two
  // servers from creating the tables at once is released with it. (A session lock taken and released by
  // two pooled queries could stay on a connection the release never reached, and stop every other server.)
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('orrery_resource_ledger', 0));\n${ledgerSchema}`);
  schemaReady.add(db);
}

/** Forgets which handles have the tables (a test that drops them). */
export function forgetLedgerSchema(): void {
  schemaReady = new WeakSet();
}

/** A call of arg_max or arg_min by any of DuckDB's and ClickHouse's names (argMax, max_by, min_by, ...). */
const argCall = /\b(?:arg_?(?:max|min)|(?:max|min)_by)\s*\(/i;

/**
 * The hash of an entry's installed shape: its kind, physical table and fields (not its file or
 * async; for a rollup not its retention either, which a publication changes in place).
 *
 * A rollup reading arg_max or arg_min (itself or in the `from` chain its fromShape holds) hashes with a mark of
 * their stored extremes: since 9ebfda0 each is stored beside the extreme it chose by, which targets installed
 * before under the same declaration (so the same hash and target name) lack. The new hash makes such an entry a
 * changed shape, which a publish installs as a new target (backfilled, its stable view cut over to it) and whose
 * old target it retires, as for any changed declaration. Entries without them keep their hash, so their targets stay.
 */
export function entryHash(entry: ValidEntry): string {
  const { key: _key, file: _file, async: _async, unsupported: _unsupported, ...shape } = entry;
  if (shape.kind === 'rollup') {
    const { retention: _retention, retentionSeconds: _seconds, ...stored } = shape;
    const text = JSON.stringify(stored);
    const marked = argCall.test(text) ? JSON.stringify({ ...stored, storedExtremes: true }) : text;
    return createHash('sha256').update(marked).digest('hex').slice(0, 8);
  }
  return createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 8);
}

interface Row {
  kind: string;
  physical_table: string;
  entry_key: string;
  hash: string;
  declaration: ValidEntry;
  state: 'installing' | 'ready';
  publication_id: string | null;
  cutover: Date | null;
  backfilled_begin: Date | null;
  backfilled_end: Date | null;
  detail: string | null;
  retired_at: Date | null;
  prune_after: Date | null;
  pruned_at: Date | null;
}

const fromRow = (r: Row): LedgerRow => ({
  kind: r.kind,
  physicalTable: r.physical_table,
  entryKey: r.entry_key,
  hash: r.hash,
  declaration: r.declaration,
  state: r.state,
  publicationId: r.publication_id === null ? null : Number(r.publication_id),
  cutover: r.cutover,
  backfilledBegin: r.backfilled_begin,
  backfilledEnd: r.backfilled_end,
  detail: r.detail,
  retiredAt: r.retired_at,
  pruneAfter: r.prune_after,
  prunedAt: r.pruned_at,
});

/** Every ledger row, by table, key, kind. */
export async function ledgerRows(db: MetadataQueries): Promise<LedgerRow[]> {
  await ensureLedger(db);
  const { rows } = await db.query<Row>(
    'SELECT * FROM resource_ledger ORDER BY physical_table, entry_key, kind, updated_at',
  );
  return rows.map(fromRow);
}

/** The ledger row of an entry's shape, created as `installing` (with its cutover) when missing. */
export async function ledgerEntry(db: MetadataQueries, entry: ValidEntry, publicationId: number): Promise<LedgerRow> {
  await ensureLedger(db);
  const { rows } = await db.query<Row>(
    `INSERT INTO resource_ledger (kind, physical_table, entry_key, hash, declaration, state, publication_id, cutover)
     VALUES ($1, $2, $3, $4, $5, 'installing', $6, now())
     ON CONFLICT (kind, physical_table, entry_key, hash) DO UPDATE
       SET publication_id = EXCLUDED.publication_id, declaration = EXCLUDED.declaration, updated_at = now()
     RETURNING *`,
    [entry.kind, entry.physical, entry.key, entryHash(entry), JSON.stringify(entry), publicationId],
  );
  return fromRow(rows[0]);
}

/** Records progress of an entry's install. */
export async function recordProgress(
  db: MetadataQueries,
  row: LedgerRow,
  update: { state?: 'installing' | 'ready'; backfilledBegin?: Date; backfilledEnd?: Date; detail?: string | null },
): Promise<void> {
  await db.query(
    `UPDATE resource_ledger SET state = COALESCE($5, state),
            backfilled_begin = COALESCE($6, backfilled_begin), backfilled_end = COALESCE($7, backfilled_end),
            detail = CASE WHEN $8 THEN $9 ELSE detail END, updated_at = now()
      WHERE kind = $1 AND physical_table = $2 AND entry_key = $3 AND hash = $4`,
    [
      row.kind,
      row.physicalTable,
      row.entryKey,
      row.hash,
      update.state ?? null,
      update.backfilledBegin ?? null,
      update.backfilledEnd ?? null,
      update.detail !== undefined,
      update.detail ?? null,
    ],
  );
}

/** Retires every live row not in `declared` (`kind/table/key/hash`), cancels the retirement of those in it. */
export async function retireUndeclared(
  db: MetadataQueries,
  declared: ReadonlySet<string>,
): Promise<{ retired: LedgerRow[]; restored: LedgerRow[] }> {
  const rows = (await ledgerRows(db)).filter((r) => r.prunedAt === null);
  const retired: LedgerRow[] = [];
  const restored: LedgerRow[] = [];
  for (const row of rows) {
    const isDeclared = declared.has(ledgerId(row));
    if (!isDeclared && row.retiredAt === null) {
      await setRetirement(db, row, true);
      retired.push(row);
    } else if (isDeclared && row.retiredAt !== null) {
      await setRetirement(db, row, false);
      restored.push(row);
    }
  }
  return { retired, restored };
}

async function setRetirement(db: MetadataQueries, row: LedgerRow, retire: boolean): Promise<void> {
  await db.query(
    `UPDATE resource_ledger
        SET retired_at = CASE WHEN $5 THEN now() END,
            prune_after = CASE WHEN $5 THEN now() + make_interval(days => ${retirementDays}) END,
            updated_at = now()
      WHERE kind = $1 AND physical_table = $2 AND entry_key = $3 AND hash = $4`,
    [row.kind, row.physicalTable, row.entryKey, row.hash, retire],
  );
}

/** Marks a row pruned (its objects dropped). */
export async function markPruned(db: MetadataQueries, row: LedgerRow): Promise<void> {
  await db.query(
    `UPDATE resource_ledger SET pruned_at = now(), updated_at = now()
      WHERE kind = $1 AND physical_table = $2 AND entry_key = $3 AND hash = $4`,
    [row.kind, row.physicalTable, row.entryKey, row.hash],
  );
}

/** `kind/table/key/hash`: how a declared entry is matched with its ledger row. */
export const ledgerId = (row: { kind: string; physicalTable: string; entryKey: string; hash: string }): string =>
  `${row.kind}/${row.physicalTable}/${row.entryKey}/${row.hash}`;

/** A publication: its id, and whether it is new (its content differs from the last one recorded). */
export async function recordPublication(
  db: MetadataQueries,
  files: ReadonlyMap<string, string>,
  by: string,
): Promise<{ id: number; created: boolean; contentHash: string }> {
  await ensureLedger(db);
  const contentHash = publicationHash(files);
  const { rows } = await db.query<{ id: string; content_hash: string }>(
    'SELECT id, content_hash FROM resource_publications ORDER BY id DESC LIMIT 1',
  );
  if (rows[0]?.content_hash === contentHash) return { id: Number(rows[0].id), created: false, contentHash };
  const inserted = await db.query<{ id: string }>(
    'INSERT INTO resource_publications (content_hash, files, published_by) VALUES ($1, $2, $3) RETURNING id',
    [contentHash, JSON.stringify(Object.fromEntries(files)), by],
  );
  return { id: Number(inserted.rows[0].id), created: true, contentHash };
}

/** A stored publication's files; the served head when `id` is null. Null when there is none. */
export async function storedPublication(
  db: MetadataQueries,
  id: number | null,
): Promise<{ id: number; files: Map<string, string>; servedAt: Date | null } | null> {
  await ensureLedger(db);
  const { rows } = await db.query<{ id: string; files: Record<string, string>; served_at: Date | null }>(
    id === null
      ? 'SELECT id, files, served_at FROM resource_publications WHERE served_at IS NOT NULL ORDER BY id DESC LIMIT 1'
      : 'SELECT id, files, served_at FROM resource_publications WHERE id = $1',
    id === null ? [] : [id],
  );
  if (rows.length === 0) return null;
  return { id: Number(rows[0].id), files: new Map(Object.entries(rows[0].files)), servedAt: rows[0].served_at };
}

export async function markServed(db: MetadataQueries, id: number): Promise<void> {
  await db.query('UPDATE resource_publications SET served_at = now() WHERE id = $1', [id]);
}

/** sha256 over the sorted (path, text) pairs. */
export function publicationHash(files: ReadonlyMap<string, string>): string {
  const hash = createHash('sha256');
  for (const path of [...files.keys()].sort()) hash.update(`${path}\u0000${files.get(path)}\u0000`);
  return hash.digest('hex');
}
