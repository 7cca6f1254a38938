// The lake: objects (payloads, Parquet partitions) and the partitions table that indexes them.
export { FileObjectStore, objectStoreFromUri, type ObjectStore } from './object-store.js';
export {
  allPartitions,
  commitPartition,
  commitPartitions,
  decodeCount,
  encodeCount,
  partitionsOverlapping,
  queryablePartitions,
  retireEverything,
  retireInside,
  type Partition,
} from './partitions.js';
export { nanosToIso, nanosToPg, nowNanos, pgNanos, secondsToNanos } from './time.js';
export { partitionKey, payloadKey, scratchKey } from './object-keys.js';
