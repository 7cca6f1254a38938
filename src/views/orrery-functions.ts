// Every function Orrery answers itself rather than DuckDB, in one list: the SQL service routes
// calls and checks permissions with it, and view definitions refuse the table functions and
// procedures (each is answered for the statement calling it, so none exists where partitions are
// materialized). The macros are DuckDB's to answer: every engine defines them at start-up.

/** What an Orrery function is, and who may call it. */
export type OrreryFunctionKind =
  /** A table function any key may call, defined on the statement's connection. */
  | 'table'
  /** A table function only admins may call. */
  | 'admin table'
  /** An admin procedure: runs in Orrery, called alone as `SELECT * FROM f(...)`, streams (time, msg) rows. */
  | 'procedure'
  /**
   * A scalar or aggregate macro defined on every engine (views/sketch-functions.ts), so any key and
   * any view definition may call it; also under the spec's `snouttime.` prefix.
   */
  | 'macro';

export const orreryFunctions = {
  list_partitions: 'table',
  list_view_sets: 'table',
  list_view_set_definitions: 'table',
  view_instance: 'table',
  process_spans: 'table',
  perfetto_trace_chunks: 'table',
  parse_block: 'table',
  list_query_denials: 'admin table',
  list_quarantined_blocks: 'admin table',
  list_quarantined_partitions: 'admin table',
  list_lost_partitions: 'admin table',
  list_failed_audiences: 'table',
  retire_partitions: 'procedure',
  materialize_partitions: 'procedure',
  regenerate_partitions: 'procedure',
  retire_partition_by_metadata: 'procedure',
  retire_partition_by_file: 'procedure',
  retire_incompatible_partitions: 'procedure',
  deny_queries: 'procedure',
  remove_query_denial: 'procedure',
  retry_quarantined_blocks: 'procedure',
  set_retention: 'procedure',
  list_rollups: 'table',
  explain_resources: 'table',
  validate_rollups: 'admin table',
  create_rollup: 'procedure',
  refresh_rollup: 'procedure',
  drop_rollup: 'procedure',
  set_rollup_retention: 'procedure',
  set_job_schedule: 'procedure',
  publish_resources: 'procedure',
  prune_resources: 'procedure',
  resource_ledger: 'admin table',
  resource_drift: 'admin table',
  resource_omissions: 'table',
  percentile_sketch: 'macro',
  percentile: 'macro',
  distinct_sketch: 'macro',
  distinct_count: 'macro',
  merge: 'macro',
} as const satisfies Record<string, OrreryFunctionKind>;

export type OrreryFunctionName = keyof typeof orreryFunctions;
/** The names of the functions of one kind. */
export type OrreryFunctionOf<K extends OrreryFunctionKind> = {
  [N in OrreryFunctionName]: (typeof orreryFunctions)[N] extends K ? N : never;
}[OrreryFunctionName];

/** The kind of the Orrery function a (case-insensitive) name calls; undefined for any other name. */
export function orreryFunctionKind(name: string): OrreryFunctionKind | undefined {
  const lower = name.toLowerCase();
  return Object.hasOwn(orreryFunctions, lower) ? orreryFunctions[lower as OrreryFunctionName] : undefined;
}

/** The names of every Orrery function of one kind. */
export function orreryFunctionNames(kind: OrreryFunctionKind): ReadonlySet<string> {
  return new Set(Object.entries(orreryFunctions).flatMap(([name, k]) => (k === kind ? [name] : [])));
}

/** Statements that manage deny rules are never denied themselves, so a rule cannot lock admins out. */
export const denyManagementFunctions: ReadonlySet<string> = new Set<OrreryFunctionName>([
  'deny_queries',
  'remove_query_denial',
  'list_query_denials',
]);
