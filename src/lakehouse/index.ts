// The lake: objects (payloads, Parquet partitions), the partitions table that indexes them and the
// retired files awaiting deletion (both tables are written only through this component).
export type { ObjectStore } from './object-store.js';
export { FileObjectStore } from './file-object-store.js';
export { S3ObjectStore, s3Settings, type S3Settings } from './s3-object-store.js';
export {
  allPartitions,
  clearPartitionLost,
  commitPartition,
  commitPartitions,
  decodeCount,
  deleteExpiredFiles,
  encodeCount,
  lostPartitionCounts,
  lostPartitions,
  markPartitionLost,
  partitionOfFile,
  partitionsOverlapping,
  queryablePartitions,
  quarantinedPartitionCounts,
  quarantinedPartitions,
  quarantinePartitionFile,
  queueForDeletion,
  replacePartitionFile,
  retireEverything,
  retireExactly,
  retireFile,
  retireInside,
  retirePartition,
  retirePartitionsOlderThan,
  type LostPartition,
  type Partition,
  type PartitionChange,
  type PartitionChangeHook,
  type QuarantinedPartition,
} from './partitions.js';
export { PartitionCache } from './partition-cache.js';
export { nanosToIso, nanosToPg, nowNanos, pgIsoToNanos, pgNanos, secondsToNanos } from './time.js';
export { deleteOrphans } from './orphans.js';
export {
  partitionKey,
  partitionKeysIn,
  payloadGroupRanges,
  payloadGroupKey,
  payloadGroupMayBeBy,
  payloadGroupSecond,
  payloadKey,
  payloadPlace,
  scratchKey,
  type PayloadPlace,
} from './object-keys.js';
export { readPayload, readPayloadsOfObject } from './payloads.js';
