import type { MetadataQueries } from '../metadata/index.js';
import type { StoredDefinition, ViewDefinition, ViewOptionsJson } from './view-definition.js';

// lakehouse_view_set_definitions: where CREATE MATERIALIZED VIEW writes and every server reads.

interface Row {
  view_set_name: string;
  definition_sql: string;
  extract_query: string;
  count_src_query: string;
  merge_partitions_query: string;
  update_group: number;
  view_options: ViewOptionsJson;
  created_at: Date;
  updated_at: Date;
  updated_by: string | null;
}

/** Every stored definition, in load order: update group, then name. */
export async function storedDefinitions(db: MetadataQueries): Promise<StoredDefinition[]> {
  const { rows } = await db.query<Row>(
    'SELECT * FROM lakehouse_view_set_definitions ORDER BY update_group, view_set_name',
  );
  return rows.map((row) => ({
    name: row.view_set_name,
    definitionSql: row.definition_sql,
    extractQuery: row.extract_query,
    countQuery: row.count_src_query,
    mergeQuery: row.merge_partitions_query,
    updateGroup: row.update_group,
    minTimeColumn: row.view_options.minTimeColumn,
    maxTimeColumn: row.view_options.maxTimeColumn,
    sourcePartitionDelta: row.view_options.sourcePartitionDelta,
    mergePartitionDelta: row.view_options.mergePartitionDelta,
    mergeSortOrder: row.view_options.mergeSortOrder,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    updatedBy: row.updated_by,
  }));
}

/** Inserts or replaces a definition. */
export async function saveDefinition(db: MetadataQueries, definition: ViewDefinition, by: string): Promise<void> {
  const options: ViewOptionsJson = {
    minTimeColumn: definition.minTimeColumn,
    maxTimeColumn: definition.maxTimeColumn,
    sourcePartitionDelta: definition.sourcePartitionDelta,
    mergePartitionDelta: definition.mergePartitionDelta,
    ...(definition.mergeSortOrder ? { mergeSortOrder: [...definition.mergeSortOrder] } : {}),
  };
  await db.query(
    `INSERT INTO lakehouse_view_set_definitions
       (view_set_name, definition_sql, extract_query, count_src_query, merge_partitions_query, update_group, view_options, updated_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (view_set_name) DO UPDATE SET definition_sql = EXCLUDED.definition_sql, extract_query = EXCLUDED.extract_query,
       count_src_query = EXCLUDED.count_src_query, merge_partitions_query = EXCLUDED.merge_partitions_query,
       update_group = EXCLUDED.update_group, view_options = EXCLUDED.view_options, updated_at = now(), updated_by = EXCLUDED.updated_by`,
    [
      definition.name,
      definition.definitionSql,
      definition.extractQuery,
      definition.countQuery,
      definition.mergeQuery,
      definition.updateGroup,
      JSON.stringify(options),
      by,
    ],
  );
}

/** Deletes a definition; false when there was none. */
export async function deleteDefinition(db: MetadataQueries, name: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM lakehouse_view_set_definitions WHERE view_set_name = $1', [name]);
  return rowCount === 1;
}
