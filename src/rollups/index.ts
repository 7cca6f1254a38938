// Rollups (issue 17): aggregates of a series table per time bucket, materialized in DuckLake,
// invalidated through DuckLake's change feed and read through views that are never stale; their
// refresh jobs; the spec's `snouttime.` names; the installer of resources files' rollup entries.
// Rollups of view sets follow their partitions (partitionsChanged, called in the transaction of
// every change to them). Knows DuckDB, DuckLake and Postgres; nothing of gRPC.
export {
  Rollups,
  type BackfillStep,
  type RollupAlias,
  type RollupCatalog,
  type RollupReadPoint,
  type RollupReadSetup,
  type RefreshOutcome,
  type RollupArguments,
  type RollupJob,
  type LostBuckets,
  type RollupListing,
} from './rollups.js';
export { RefreshJobs, type RefreshReport } from './refresh-jobs.js';
export { rollupErrors } from './errors.js';
export { jobsRelation, snouttimeNames } from './snouttime-names.js';
export { jobsRows, jobsUpdate } from './job-updates.js';
export { namesDroppedTail, readsKeptTail } from './tail-values.js';
export { keptColumnsSql, keptRowBytes, keptSizeSql } from './kept-size.js';
export { KeptBudget, type KeptHolder, type KeptKind } from './kept-budget.js';
export { bucketConditions } from './bucket-windows.js';
export type { LevelProvenance, Provenance, RollupRead, SkippedRollup } from './query-rewrite.js';
export { levelParts } from './query-rewrite.js';
export type { RollupValidation } from './validation.js';
export { rollupInstaller } from './resource-installer.js';
export type { ViewSetSources } from './view-set-sources.js';
export { baseTables, call as callNode, cast as castNode, key as expressionKey, ownNames, qualifierOf } from './tree.js';
/** DuckDB's value of a window bound written with the clock (`now() - INTERVAL '1 month'`), worked out without DuckDB. */
export { clockBoundText, isCurrentDate } from './clock-bounds.js';
export { isClock } from './constant-trends.js';
export { fileRows, filesSql } from './table-files.js';
