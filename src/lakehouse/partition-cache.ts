import { partitionsChannel, type ChangeFeed, type MetadataQueries } from '../metadata/index.js';
import { queryablePartitions, type Partition } from './partitions.js';

/** A view instance's partition list, as read at `version`. */
interface Entry {
  readonly version: string;
  readonly partitions: Promise<readonly Partition[] | null>;
}

/**
 * The partitions statements read, kept per view instance and schema between statements instead
 * of asked of Postgres each time, and dropped when any process changes that view set's partitions
 * (the change feed's notifications). While the feed is not listening, every read asks Postgres.
 * A list longer than `maxPartitions` is not kept (it would cost memory for little); each read
 * of it asks Postgres, with the event range.
 */
export class PartitionCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly db: MetadataQueries,
    private readonly changes: ChangeFeed,
    private readonly maxPartitions = 20_000,
  ) {}

  /** What queryablePartitions answers, from the cache when it is current. */
  async queryable(
    view: string,
    instance: string,
    schemaHash: Buffer,
    eventRange: { begin?: bigint; end?: bigint } = {},
  ): Promise<Partition[]> {
    const version = this.version(view);
    if (version === undefined) return queryablePartitions(this.db, view, instance, schemaHash, eventRange);
    const key = `${view}\u0000${instance}\u0000${schemaHash.toString('hex')}`;
    let entry = this.entries.get(key);
    if (entry?.version !== version) {
      entry = { version, partitions: this.read(view, instance, schemaHash) };
      this.entries.set(key, entry);
      // A failed read is not kept; nor is one that a change overtook (it may predate the change).
      entry.partitions.then(
        () => this.version(view) !== version && this.forget(key, entry!),
        () => this.forget(key, entry!),
      );
    }
    const all = await entry.partitions;
    if (!all) return queryablePartitions(this.db, view, instance, schemaHash, eventRange);
    return all.filter((p) => meets(p, eventRange));
  }

  /** Waits until every partition change committed before the call is seen here (after this process's own writes). */
  sync(): Promise<void> {
    return this.changes.sync();
  }

  /** The view set's version, moved by changes to it and by a truncation of the whole table. */
  private version(view: string): string | undefined {
    const own = this.changes.version(partitionsChannel, view);
    const all = this.changes.version(partitionsChannel, '*');
    return own === undefined || all === undefined ? undefined : `${own}/${all}`;
  }

  private async read(view: string, instance: string, schemaHash: Buffer): Promise<readonly Partition[] | null> {
    const all = await queryablePartitions(this.db, view, instance, schemaHash);
    return all.length <= this.maxPartitions ? all : null;
  }

  private forget(key: string, entry: Entry): void {
    if (this.entries.get(key) === entry) this.entries.delete(key);
  }
}

/**
 * Whether a partition meets the event range as queryablePartitions's SQL decides it: Postgres
 * keeps microseconds, so the bounds are rounded outwards to whole microseconds first.
 */
function meets(partition: Partition, range: { begin?: bigint; end?: bigint }): boolean {
  if (range.end !== undefined) {
    if (partition.minEventTime === null || partition.minEventTime > ceilMicros(range.end)) return false;
  }
  if (range.begin !== undefined) {
    if (partition.maxEventTime === null || partition.maxEventTime < floorMicros(range.begin)) return false;
  }
  return true;
}

function floorMicros(ns: bigint): bigint {
  const rest = ns % 1000n;
  return rest < 0n ? ns - rest - 1000n : ns - rest;
}

function ceilMicros(ns: bigint): bigint {
  const rest = ns % 1000n;
  return rest > 0n ? ns - rest + 1000n : ns - rest;
}
