import { randomUUID } from 'node:crypto';
import { nanosToIso } from './time.js';

// Where things live in the object store.

/** A block's payload: newline-delimited JSON rows, or an OTLP logs protobuf request as received (the key is the same). */
export const payloadKey = (processId: string, streamId: string, blockId: string): string =>
  `blobs/${processId}/${streamId}/${blockId}.jsonl`;

/** A new partition file: views/<set>/<instance>/<date>/<time>_<uuid>.parquet, dated by its insert range. */
export function partitionKey(view: string, instance: string, begin: bigint): string {
  const iso = nanosToIso(begin);
  return `views/${view}/${instance}/${iso.slice(0, 10)}/${iso.slice(11, 19).replaceAll(':', '-')}_${randomUUID()}.parquet`;
}

/** The partition files (object keys) a message names, as their paths or keys (DuckDB's errors quote them). */
export function partitionKeysIn(message: string): string[] {
  const key = /views\/[^'"\s/]+\/[^'"\s/]+\/\d{4}-\d{2}-\d{2}\/\d{2}-\d{2}-\d{2}_[0-9a-f-]{36}\.parquet/g;
  return [...new Set(message.match(key) ?? [])];
}

/** A scratch object for one materialization. */
export const scratchKey = (extension: string): string => `tmp/${randomUUID()}.${extension}`;
