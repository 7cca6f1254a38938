// View sets: what users query, how each is materialized, and how a session sees them.
export * from './view-set.js';
export {
  builtinViewSets,
  ndjsonPayloads,
  orderedBlocks,
  orderedEnumFields,
  orderedFirstTimeRefused,
  orderedGzipLengthRefused,
  orderedProtobufLogs,
  payloadColumns,
  payloadRows,
  protobufPayloadName,
  shippedLogEntries,
} from './builtin-views.js';
export { clockMacro, compatibilityMacros, compatibilityTableFunctions, integerBucketSql } from './sql-functions.js';
export {
  distinctPrecision,
  distinctSketchType,
  nativeSketchParameters,
  percentileRelativeError,
  percentileSketchType,
  sketchStatements,
  snouttimeCatalog,
  snouttimeCatalogFunctions,
} from './sketch-functions.js';
export {
  denyManagementFunctions,
  orreryFunctionKind,
  orreryFunctionNames,
  orreryFunctions,
  type OrreryFunctionKind,
  type OrreryFunctionName,
  type OrreryFunctionOf,
} from './orrery-functions.js';
export {
  bitmapLiteral,
  emptyRelation,
  filesRelation,
  partitionsMerged,
  readBackTypes,
  quoteIdentifier,
  quoteLiteral,
  scopedFileSummary,
  sessionRelation,
  sessionStatements,
  typedColumns,
  withSource,
  type EventRange,
  type ReadScope,
  type CopyRead,
  type RowsToRead,
  type SessionView,
} from './view-session.js';
export { instanceView, instanceViews, processSpansRelation, type InstanceView } from './instance-views.js';
export { perfettoTraceRelation } from './perfetto-trace.js';
export { ViewRegistry } from './view-registry.js';
export { viewErrors } from './errors.js';
export type { StoredDefinition, ViewDefinition } from './view-definition.js';
export { deleteDefinition, saveDefinition, storedDefinitions } from './definition-store.js';
export { buildViewSet, viewSetsRead } from './view-validation.js';
export { ViewLoader } from './view-loader.js';
export { findStaticTables, staticTableStatements, type StaticTable } from './static-tables.js';
