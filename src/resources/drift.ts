// Drift (database-resources.md, Installing: "run publish again to … repair drift"): what the ledger records
// as ready against what is installed on the view sets. A stored column, index or projection whose own row is
// gone (resource_columns, resource_indexes, resource_projections: dropped by hand, a restored Postgres), the
// partition files that lack its bytes, statistics or copy, and the objects no ledger row records. `orrery
// resources status` prints it under the ledger; a publish with no file changes repairs the first two kinds,
// prune retires the third.
import { allPartitions } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { installerOf } from './installers.js';
import { ensureLedger, ledgerRows, type LedgerRow } from './ledger.js';
import { unrecordedObjects } from './unrecorded.js';

/** One difference between the ledger and what is installed. */
export interface Drift {
  readonly physicalTable: string;
  readonly entryKey: string;
  readonly kind: string;
  readonly hash: string;
  /** What differs and what repairs it. */
  readonly problem: string;
}

/** Per kind: the table recording the installed object, and the one listing the partition files it covers. */
const installed = {
  column: {
    what: 'column',
    object: 'SELECT 1 FROM resource_columns WHERE view_set_name = $1 AND column_name = $2',
    files: 'SELECT file_path FROM resource_column_files WHERE view_set_name = $1 AND column_name = $2',
    lacking: 'the stored column',
  },
  index: {
    what: 'index',
    object: 'SELECT 1 FROM resource_indexes WHERE view_set_name = $1 AND index_hash = $2',
    files: 'SELECT file_path FROM resource_partition_stats WHERE view_set_name = $1 AND index_hash = $2',
    lacking: 'index statistics',
  },
  projection: {
    what: 'projection',
    object: 'SELECT 1 FROM resource_projections WHERE view_set_name = $1 AND projection_hash = $2',
    files: 'SELECT file_path FROM resource_projection_files WHERE view_set_name = $1 AND projection_hash = $2',
    lacking: 'a projection copy',
  },
} as const;

/** What a live, ready ledger row's object is named by in its tables: a stored column's name, else its hash. */
function installedName(row: LedgerRow): string | null {
  if (row.kind !== 'column') return row.hash;
  const { storedName, storedType, satisfiedBy } = row.declaration as {
    storedName?: string;
    storedType?: string | null;
    satisfiedBy?: string | null;
  };
  // A column an existing one satisfies, or one without a type, installs nothing.
  return storedName && storedType && !satisfiedBy ? storedName : null;
}

/** Every difference between the ledger's ready entries and what is installed, by table and key. */
export async function resourceDrift(db: MetadataQueries): Promise<Drift[]> {
  await ensureLedger(db);
  const partitions = await allPartitions(db);
  const filesOf = (viewSet: string): string[] =>
    partitions.filter((p) => p.viewSetName === viewSet && p.filePath !== null).map((p) => p.filePath!);
  const found: Drift[] = [];
  for (const row of await ledgerRows(db)) {
    if (row.state !== 'ready' || row.retiredAt !== null || row.prunedAt !== null || !(row.kind in installed)) continue;
    const drift = (problem: string) =>
      found.push({ physicalTable: row.physicalTable, entryKey: row.entryKey, kind: row.kind, hash: row.hash, problem });
    // An installer that keeps the row's objects elsewhere (a series table's sort order) tells its own drift.
    const own = await installerOf(row.kind, db)?.drift?.(row, db);
    if (own !== undefined) {
      if (own !== null) drift(own);
      continue;
    }
    const kind = installed[row.kind as keyof typeof installed];
    const name = installedName(row);
    if (name === null) continue;
    if ((await db.query(kind.object, [row.physicalTable, name])).rows.length === 0) {
      drift(`missing ${kind.what}${row.kind === 'column' ? ` ${name}` : ''}: not installed (publish again to repair)`);
      continue;
    }
    const files = filesOf(row.physicalTable);
    const done = new Set(
      (await db.query<{ file_path: string }>(kind.files, [row.physicalTable, name])).rows.map((r) => r.file_path),
    );
    const lacking = files.filter((f) => !done.has(f)).length;
    if (lacking > 0)
      drift(`${lacking} of ${files.length} partition file(s) without ${kind.lacking} (publish again to repair)`);
  }
  for (const object of await unrecordedObjects(db))
    found.push({
      physicalTable: object.physicalTable,
      entryKey: object.entryKey,
      kind: object.kind,
      hash: object.hash,
      problem: `installed${object.column ? ` as ${object.column}` : ''} but recorded by no ledger row (prune retires it)`,
    });
  return found;
}
