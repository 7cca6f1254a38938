// Query engine: one sandboxed DuckDB database; statements in, Arrow record batches out.
// Knows nothing of gRPC or of telemetry.
export {
  DuckDBEngine,
  EngineSession,
  HeldStatement,
  catalogName,
  fixedClockVariable,
  quoteIdentifier,
  type StartupObjects,
} from './duckdb-engine.js';
export type {
  EngineOptions,
  FunctionDescription,
  RunOptions,
  StatementDescription,
  TableDescription,
} from './duckdb-engine.js';
export { engineErrors, isAudienceRowsError, isDataError, isFileReadFailure } from './errors.js';
export {
  lowPriorityProblem,
  nativeExportProblem,
  nativeJsonLogsSeal,
  nativeLogsPayloads,
  nativeOrderedLogsWriter,
  nativeLogsScan,
  nativeLogsSeal,
  nativeSyncedWrite,
  nativeZstdContent,
  nativeZstdPayload,
} from './native-export.js';
export type { Deadline } from './statement-guard.js';
export { StatementType } from '@duckdb/node-api';
export {
  clockDateFunctions,
  clockInstantFunctions,
  clockKeywords,
  clockMacro,
  clockMacroFunctions,
  clockMacroKeywords,
  clockProblem,
  clockWordMacros,
  effectOnlyFunctions,
  varyingFunctions,
  varyingRead,
  withMacros,
  type Varying,
} from './varying-functions.js';
export {
  builtInQualifier,
  queryShape,
  type FunctionCall,
  type LoneCall,
  type QueryShape,
  type RelationRef,
  type TableFunctionCall,
} from './query-shape.js';
export {
  duckdbBuild,
  extensionCacheFolder,
  extensionCacheRoot,
  extensionFile,
  findExtensions,
  lakeExtensions,
  missingExtensionsHelp,
  type DuckDBBuild,
} from './extensions.js';
export {
  isColumnsListing,
  isTablesListing,
  isTablesShow,
  nanosecondTimestamps,
  scanTimeBounds,
  type MicrosecondTime,
  substituteListings,
} from './dialect.js';
export { duckdbTypeOf } from './arrow-append.js';
export { boundTexts, type BoundText } from './parameters.js';
