// Database resources as code (issue 13, spec database-resources.md): `*.resources.json` files
// declaring stored columns, indexes, projections and rollups over view sets; their validation;
// the `orrery resources` CLI. Knows files, DuckDB (to parse expressions) and the Flight SQL client.
export {
  entryKeyPattern,
  indexKinds,
  parseDuration,
  parseResourcesFile,
  resourceKinds,
  type ColumnEntry,
  type Diagnostic,
  type IndexEntry,
  type IndexKind,
  type Measure,
  type ProjectionEntry,
  type ResourceEntry,
  type ResourceKind,
  type ResourcesFile,
  type RollupEntry,
} from './declarations.js';
export { localPathReason, readPublicationFolder, type PublicationFiles } from './files.js';
export { ExpressionAnalyzer, propertyRead, type ExpressionFacts } from './expressions.js';
export {
  storedColumnName,
  validateResources,
  type ResolveTable,
  type TableResolution,
  type ValidEntry,
  type ValidationResult,
} from './validation.js';
export { parseSchemaText, tableResolver, type ServerViewSet } from './catalog.js';
export { parseResourcesArgs, resourcesUsage, type ResourcesArgs, type ResourcesCommand } from './cli-args.js';
export { diagnosticLine, runResourcesCli, serverViewSets, validateFolder, type ResourcesIo } from './cli.js';
export { ResourcesCliError, resourcesErrors, resourcesExitStatus, type ResourcesErrorCode } from './errors.js';
export { parseJsonText, type JsonText } from './json-text.js';
export {
  registerInstaller,
  installerOf,
  tablesMadeBy,
  type InstallContext,
  type ResourceInstaller,
  type WrittenObjects,
} from './installers.js';
export {
  ensureLedger,
  entryHash,
  ledgerRows,
  ledgerSchema,
  retirementDays,
  storedPublication,
  type LedgerRow,
} from './ledger.js';
export { lockNamespace, takeLock, type HeldLock } from './lock.js';
export { resourceDrift, type Drift } from './drift.js';
export {
  planEntries,
  planLines,
  planOmissions,
  publicationTables,
  publicationFiles,
  publishResources,
  pruneResources,
  validEntries,
  type Omission,
  type PlannedEntry,
  type PublishContext,
  type PublishStep,
} from './publish.js';
export { diagnosticText } from './diagnostics.js';
export {
  indexNewFiles,
  indexPartition,
  installStatistics,
  partitionStatsInstaller,
  type FileToIndex,
  type FilesToIndex,
  mayHold,
  partitionStatistics,
  audienceStatistics,
  recentIndexes,
  type InstalledIndex,
  type PartitionStatistics,
} from './partition-stats.js';
export {
  bothOf,
  copyRange,
  decodePostings,
  eitherOf,
  mayContain,
  rowCount,
  rowsMatching,
  asciiRuns,
  tokensOf,
  searchedTrigrams,
  type CopyRange,
  type Postings,
} from './text-index.js';
export { publicationOf, publishedTexts, readPublicationTexts } from './files.js';
export { parquetWriteOptions } from './parquet-bloom.js';
export {
  projectionCopies,
  projectionInstaller,
  recentProjections,
  storedBy,
  type InstalledProjection,
} from './projections.js';
/** Housekeeping's part: forgets what the resources record of partition files that are gone. */
export { forgetGoneFiles } from './gone-files.js';
export {
  columnsHeldByAll,
  forgetColumn,
  installedColumns,
  recentColumns,
  recordColumn,
  recordColumnFiles,
  storedColumnInstaller,
  withStoredColumns,
  type InstalledColumn,
} from './stored-columns.js';
