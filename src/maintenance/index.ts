// The maintenance daemon: materializes view sets into Parquet partitions, merges them,
// deletes retired files and applies retention.
export { MaintenanceDaemon, defaultPasses, type DaemonOptions, type Pass } from './daemon.js';
export { Materializer, withRange, type Materialized, type MaterializerOptions, type Outcome } from './materializer.js';
export { failedAudiences, type FailedAudience } from './failed-audiences.js';
export { quarantineCounts, quarantinedBlocks, type QuarantinedBlock } from './quarantine.js';
export { blockRecords, type BlockRecords } from './sources.js';
