import { randomUUID } from 'node:crypto';
import { nanosToIso } from './time.js';

// Where things live in the object store.

/**
 * A block's payload as an object of its own (how blocks were stored before commit-group files, which they
 * still read): newline-delimited JSON rows, or an OTLP logs protobuf request as received (the key is the same).
 */
export const payloadKey = (processId: string, streamId: string, blockId: string): string =>
  `blobs/${processId}/${streamId}/${blockId}.jsonl`;

/**
 * A commit group's payloads, one after another in one object: blobs/groups/<date>/<time>_<uuid>.payloads,
 * dated by the time it was written. Each block names it with its offset and size. Named by a server (`writer`), the
 * uuid starts with the writer's first 8 digits and has version 8 (a random one, version 4, names no writer): a replay
 * of that server's mark reads its groups alone.
 */
export function payloadGroupKey(at: bigint, writer?: string): string {
  const iso = nanosToIso(at);
  const random = randomUUID();
  const id = writer === undefined ? random : `${writer.slice(0, 8)}${random.slice(8, 14)}8${random.slice(15)}`;
  return `${payloadGroupFolder(at)}${iso.slice(11, 19).replaceAll(':', '-')}_${id}.payloads`;
}

/** False when the commit group's key names a writer other than `writer` (see payloadGroupKey). */
export function payloadGroupMayBeBy(key: string, writer: string): boolean {
  const id = key.slice(key.lastIndexOf('_') + 1);
  return id[14] !== '8' || id.startsWith(writer.slice(0, 8));
}

/** The folder of the commit groups written on the (UTC) day of `at`. */
const payloadGroupFolder = (at: bigint): string => `blobs/groups/${nanosToIso(at).slice(0, 10)}/`;

/**
 * How to list the commit groups named from `from` to `until` (their seconds, inclusive): per day folder, the keys
 * after `after` and up to `until` (see ObjectStore.listBetween). Keys sort by the second they name.
 */
export function payloadGroupRanges(
  from: bigint,
  until: bigint,
): Array<{ prefix: string; after: string; until: string }> {
  const second = (at: bigint): string => nanosToIso(at).slice(11, 19).replaceAll(':', '-');
  const ranges: Array<{ prefix: string; after: string; until: string }> = [];
  if (from > until) return ranges;
  for (let at = from; ; at += 86_400_000_000_000n) {
    const prefix = payloadGroupFolder(at);
    const last = prefix === payloadGroupFolder(until);
    ranges.push({
      prefix,
      after: at === from ? `${prefix}${second(from)}` : prefix,
      // '~' sorts after every character of a key's time and the '_' that follows it.
      until: last ? `${prefix}${second(until)}~` : `${prefix}~`,
    });
    if (last) return ranges;
  }
}

const groupKey = /^blobs\/groups\/(\d{4}-\d{2}-\d{2})\/(\d{2})-(\d{2})-(\d{2})_[0-9a-f-]{36}\.payloads$/;

/** The second (since the epoch) a commit group's key was named at; null for any other key. */
export function payloadGroupSecond(key: string): number | null {
  const m = groupKey.exec(key);
  return m ? Date.parse(`${m[1]}T${m[2]}:${m[3]}:${m[4]}Z`) / 1000 : null;
}

/** Where a block's payload is: a whole object (size null), or `size` bytes at `offset` of a group's object. */
export interface PayloadPlace {
  readonly key: string;
  readonly offset: number;
  readonly size: number | null;
}

/** The place of a block's payload from its row (Postgres's BIGINTs come as text). */
export function payloadPlace(block: {
  readonly process_id: string;
  readonly stream_id: string;
  readonly block_id: string;
  readonly payload_file: string | null;
  readonly object_offset: string | number | null;
  readonly payload_size: string | number | null;
}): PayloadPlace {
  return block.payload_file === null
    ? { key: payloadKey(block.process_id, block.stream_id, block.block_id), offset: 0, size: null }
    : { key: block.payload_file, offset: Number(block.object_offset), size: Number(block.payload_size) };
}

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
