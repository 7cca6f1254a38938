// prune's scan for objects no ledger row records (database-resources.md, Commands: prune checks "tables
// with __nm_* objects" too): stored columns, indexes and projections installed on a view set whose ledger
// rows are gone (a Postgres restored from an older backup or shared by another deployment, rows deleted by
// hand). Prune records each as retired, so it is dropped seven days later as any retired entry is, unless
// the served publication declares it (the next publish records it again).
import type { MetadataQueries } from '../metadata/index.js';
import { ensureLedger, retirementDays, type LedgerRow } from './ledger.js';

/** An installed object no ledger row records. */
export interface UnrecordedObject {
  readonly kind: 'column' | 'index' | 'projection';
  readonly physicalTable: string;
  readonly entryKey: string;
  /** The ledger hash it is recorded under: an index's or projection's own, a stored column's name's first 8 hex digits. */
  readonly hash: string;
  /** A stored column's `__orr_` name; null for the others. */
  readonly column: string | null;
}

/** The stored columns, indexes and projections of view sets that no ledger row (live, retired or pruned) records. */
export async function unrecordedObjects(db: MetadataQueries): Promise<UnrecordedObject[]> {
  await ensureLedger(db);
  const { rows } = await db.query<{
    kind: UnrecordedObject['kind'];
    physical_table: string;
    entry_key: string;
    hash: string;
    column_name: string | null;
  }>(
    `SELECT 'column' AS kind, view_set_name AS physical_table, entry_key, substr(column_name, 7, 8) AS hash, column_name
       FROM resource_columns c WHERE NOT EXISTS (SELECT 1 FROM resource_ledger l WHERE l.kind = 'column'
         AND l.physical_table = c.view_set_name AND l.declaration->>'storedName' = c.column_name)
     UNION ALL
     SELECT 'index', view_set_name, entry_key, index_hash, NULL
       FROM resource_indexes i WHERE NOT EXISTS (SELECT 1 FROM resource_ledger l WHERE l.kind = 'index'
         AND l.physical_table = i.view_set_name AND l.hash = i.index_hash)
     UNION ALL
     SELECT 'projection', view_set_name, entry_key, projection_hash, NULL
       FROM resource_projections p WHERE NOT EXISTS (SELECT 1 FROM resource_ledger l WHERE l.kind = 'projection'
         AND l.physical_table = p.view_set_name AND l.hash = p.projection_hash)
     ORDER BY 2, 3, 1`,
  );
  return rows.map((r) => ({
    kind: r.kind,
    physicalTable: r.physical_table,
    entryKey: r.entry_key,
    hash: r.hash,
    column: r.column_name,
  }));
}

/** Records an unrecorded object as retired now, with what its installer's drop reads of a declaration. */
export async function retireUnrecorded(db: MetadataQueries, object: UnrecordedObject): Promise<void> {
  const declaration = {
    kind: object.kind,
    key: object.entryKey,
    physical: object.physicalTable,
    ...(object.column === null ? {} : { storedName: object.column }),
    // What prune's ordering reads of a projection's declaration.
    ...(object.kind === 'projection' ? { orderBy: [] } : {}),
  };
  await db.query(
    `INSERT INTO resource_ledger (kind, physical_table, entry_key, hash, declaration, state, detail, retired_at, prune_after)
     VALUES ($1, $2, $3, $4, $5, 'ready', 'recorded by no ledger row: found by prune', now(),
             now() + make_interval(days => ${retirementDays}))
     ON CONFLICT (kind, physical_table, entry_key, hash) DO NOTHING`,
    [object.kind, object.physicalTable, object.entryKey, object.hash, JSON.stringify(declaration)],
  );
}

/**
 * Whether two ledger rows record one installed object: a stored column by its name, an index or projection
 * by its hash (a rollup's objects are named after its key too: never the same under two keys).
 */
export function sameObject(a: LedgerRow, b: LedgerRow): boolean {
  if (a.kind !== b.kind || a.physicalTable !== b.physicalTable || a.kind === 'rollup') return false;
  if (a.kind !== 'column') return a.hash === b.hash;
  const name = (row: LedgerRow) => (row.declaration as { storedName?: string }).storedName;
  return name(a) !== undefined && name(a) === name(b);
}
