// Migration 2: log_stats ships as a stored definition, in the same table CREATE MATERIALIZED
// VIEW writes to, so an admin can inspect, replace or drop it like any other.

export const logStatsDefinitionSql = `CREATE MATERIALIZED VIEW log_stats WITH (
  extract_query = $$
    SELECT date_bin('1 minute', time) AS time_bin, process_id, level, target, count(*) AS count, audience
      FROM log_entries
     WHERE insert_time >= '{begin}' AND insert_time < '{end}'
     GROUP BY time_bin, process_id, level, target, audience
  $$,
  count_src_query = $$
    SELECT sum(nb_objects) AS count FROM blocks
     WHERE insert_time >= '{begin}' AND insert_time < '{end}' AND list_contains(tags, 'log')
  $$,
  merge_partitions_query = $$
    SELECT time_bin, process_id, level, target, sum(count) AS count, audience
      FROM {source} GROUP BY time_bin, process_id, level, target, audience
  $$,
  update_group = 3000,
  time_column = 'time_bin',
  source_partition_delta = '1 day',
  merge_partition_delta = '1 day',
  merge_sort_order = 'time_bin'
);`;

const between = (text: string, option: string): string => {
  const start = text.indexOf('$$', text.indexOf(option)) + 2;
  return text.slice(start, text.indexOf('$$', start));
};

const pgText = (text: string): string => `$orrery$${text}$orrery$`;

export const logStatsDefinition = `
INSERT INTO lakehouse_view_set_definitions
  (view_set_name, definition_sql, extract_query, count_src_query, merge_partitions_query, update_group, view_options, updated_by)
VALUES (
  'log_stats',
  ${pgText(logStatsDefinitionSql)},
  ${pgText(between(logStatsDefinitionSql, 'extract_query'))},
  ${pgText(between(logStatsDefinitionSql, 'count_src_query'))},
  ${pgText(between(logStatsDefinitionSql, 'merge_partitions_query'))},
  3000,
  '{"minTimeColumn": "time_bin", "maxTimeColumn": "time_bin", "timeColumn": "time_bin", "sourcePartitionDelta": "1 day", "mergePartitionDelta": "1 day", "mergeSortOrder": ["time_bin"]}',
  'orrery'
)
ON CONFLICT (view_set_name) DO NOTHING;
`;
