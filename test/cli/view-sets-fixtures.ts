// Statements and stored rows shared by the `orrery views` tests.
import type { StoredDefinition } from '../../src/views-cli/index.js';

/** A valid definition of `name` (the spec's example shape), with `extra` inside the extract query. */
export function createStatement(name: string, updateGroup: number, extra = '', orReplace = false): string {
  return `CREATE ${orReplace ? 'OR REPLACE ' : ''}MATERIALIZED VIEW ${name} WITH (
  extract_query = $$
    SELECT date_bin('1 minute', time) as time_bin, target, count(*) as count,
           arrow_cast(max(audience), 'Dictionary(Int32, Utf8)') as audience
      FROM log_entries
     WHERE insert_time >= '{begin}' AND insert_time < '{end}'${extra}
     GROUP BY time_bin, target, audience
  $$,
  count_src_query = $$
    SELECT sum(nb_objects) as count FROM blocks
     WHERE insert_time >= '{begin}' AND insert_time < '{end}'
  $$,
  merge_partitions_query = $$
    SELECT time_bin, target, sum(count) as count, audience
      FROM {source} GROUP BY time_bin, target, audience
  $$,
  update_group           = ${updateGroup},
  time_column            = 'time_bin',
  source_partition_delta = '1 day',
  merge_partition_delta  = '1 day',
  merge_sort_order       = 'time_bin, target'
)`;
}

/** A stored row as list_view_set_definitions() would give it. */
export function stored(
  name: string,
  updateGroup: number,
  definitionSql = createStatement(name, updateGroup),
  loadError: string | null = null,
): StoredDefinition {
  return { name, definitionSql, updateGroup, updatedAt: '2026-08-01T10:00:00.000Z', updatedBy: 'admin', loadError };
}
