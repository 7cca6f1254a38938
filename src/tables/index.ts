// Series tables: tables clients create and write through Flight SQL (statements, bulk ingest,
// transactions), kept as DuckLake tables whose catalog lives in Orrery's Postgres and whose
// Parquet files live under the lake. Knows DuckDB and DuckLake; nothing of gRPC.
export {
  attachLakeSql,
  attachesDatabases,
  lakeCatalog,
  lakeCatalogWrites,
  lakeMetadataSchema,
  namesLakeInternals,
  prepareLakeMetadata,
  reachesLakeIndirectly,
} from './lake-catalog.js';
export { parseSeriesStatement, splitTopLevel, type SeriesStatement } from './series-statements.js';
export {
  SeriesTables,
  audienceColumn,
  isStoredColumn,
  lakeTable,
  lakeVersionSql,
  scopeFilter,
  tableColumnsSelect,
  tableRows,
  type DependentsSource,
  type RetentionDelete,
  type SeriesColumn,
  type SeriesTable,
  type TableScope,
  type Writer,
} from './series-tables.js';
export { tableErrors } from './errors.js';
export { flushTable, inlinedTables, type FlushOutcome } from './inlined-flush.js';
export { ingest, type IngestData, type IngestMode } from './ingest.js';
export { rebucketSeriesTables, seriesIndexInstaller } from './series-indexes.js';
export {
  fillBroken,
  seriesColumnInstaller,
  seriesColumnsView,
  seriesFills,
  type SeriesFill,
} from './series-columns.js';
export { indexSeriesTables, lakeFileKey, lakeFilesKey, seriesDataFiles } from './series-text.js';
