import type { MetadataStore } from '../metadata/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { messageOf } from '../errors/index.js';
import {
  clearPartitionLost,
  lostPartitions,
  markPartitionLost,
  nanosToIso,
  partitionOfFile,
  quarantinePartitionFile,
  type ObjectStore,
  type Partition,
  type PartitionChangeHook,
  type QuarantinedPartition,
} from '../lakehouse/index.js';
import type { InsertRange, ViewSet } from '../views/index.js';
import { maintenanceErrors } from './errors.js';

// Partition files of the lake that cannot be read: missing (deleted while Postgres still names them),
// truncated or overwritten. One whose range's source still holds what it was built from is quarantined
// and the range rebuilt from that source. One whose source is gone (past retention) cannot be rebuilt:
// it stays a partition, so every statement reading it fails with PARTITION_LOST naming it (its rows are
// not silently left out), until an admin retires it (retire_partition_by_file).

/** What became of an unreadable partition file: `quarantined` (range rebuilt), `lost`, or `failed` (containing it failed). */
export type UnreadableOutcome = 'quarantined' | 'lost' | 'failed';

/** What containing needs of the materializer. */
export interface ContainmentParts {
  readonly db: MetadataStore;
  readonly store: ObjectStore;
  readonly version: string;
  readonly viewSet: (name: string) => ViewSet | undefined;
  /** Reads every value of an existing file: null when that works, else DuckDB's message. */
  readonly readWhole: (path: string) => Promise<string | null>;
  /** The source count of a view set over a range now. */
  readonly sourceCount: (view: ViewSet, range: InsertRange) => Promise<bigint>;
  /**
   * Writes a range's partitions again from its source and has `register` register them (true when it
   * did); their files are deleted when it declines or fails.
   */
  readonly rebuild: (
    view: ViewSet,
    range: InsertRange,
    register: (partitions: readonly Partition[]) => Promise<boolean>,
  ) => Promise<void>;
  readonly onPartitionsChanged?: PartitionChangeHook;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Told of each unreadable partition file's outcome (the orrery_unreadable_partitions_total metric). */
  readonly onOutcome?: (viewSet: string, outcome: UnreadableOutcome) => void;
}

/** A file that cannot be read, of a partition that cannot be rebuilt. */
interface Lost {
  readonly partition: Partition;
  readonly error: string;
  readonly sourceNow: bigint;
}

type Verdict = 'readable' | 'contained' | Lost;

/** Contains unreadable partition files; one containment per file at a time, in this process and across processes. */
export class UnreadablePartitions {
  /** Containments under way, by file: a second statement failing on the file waits for the first's. */
  private readonly underWay = new Map<string, Promise<Verdict>>();

  constructor(private readonly parts: ContainmentParts) {}

  /**
   * Contains the files among `paths` that cannot be read and returns how many the lake no longer
   * names as partitions (quarantined now or before, retired or replaced since they were listed), so a
   * statement run again does not read them. Throws PARTITION_LOST naming the files whose range
   * cannot be rebuilt (after containing the others), PARTITION_CONTAINMENT_FAILED when containing fails.
   */
  async contain(paths: readonly string[]): Promise<number> {
    const verdicts: Verdict[] = [];
    for (const path of new Set(paths)) verdicts.push(await this.verdict(path));
    const lost = verdicts.filter((v): v is Lost => typeof v === 'object');
    if (lost.length > 0) throw maintenanceErrors.error('PARTITION_LOST', lost.map(lostMessage).join('; '));
    return verdicts.filter((v) => v === 'contained').length;
  }

  /**
   * Forgets the lost partitions whose file reads whole again (put back in the object store): they
   * leave list_lost_partitions() and the orrery_lost_partitions gauge. A statement reading such a file
   * already answers from it; nothing else would look at the file again.
   */
  async forgetRecovered(): Promise<void> {
    const { db, store, log } = this.parts;
    for (const { partition } of await lostPartitions(db)) {
      const path = partition.filePath;
      if (path === null || (await store.size(path)) === null || (await this.parts.readWhole(path)) !== null) continue;
      await clearPartitionLost(db, path);
      log?.('info', `${partition.viewSetName}'s partition file ${path} reads whole again: no longer lost`);
    }
  }

  private verdict(path: string): Promise<Verdict> {
    let running = this.underWay.get(path);
    if (!running) {
      running = this.judge(path).finally(() => this.underWay.delete(path));
      this.underWay.set(path, running);
    }
    return running;
  }

  /**
   * Judges a file holding a Postgres advisory lock named after it, so one process at a time contains it:
   * without it, two servers meeting the file at once both rebuilt its range and the later one's files
   * were written for nothing. A process that finds the lock held waits, then finds the file no longer a
   * partition and reads nothing.
   */
  private async judge(path: string): Promise<Verdict> {
    const found: Found = { partition: null, error: null };
    try {
      for (;;) {
        const verdict = await this.parts.db.locks.tryWhileHolding(`orrery_contain:${path}`, () =>
          this.judgeHolding(path, found),
        );
        if (verdict !== undefined) return verdict;
        await sleep(lockPollMs);
      }
    } catch (failure) {
      const { partition, error } = found;
      const what = partition
        ? `${partition.viewSetName}'s partition file ${path} ${show(rangeOf(partition))}`
        : `partition file ${path}`;
      const message = `${what} cannot be read${error ? ` (${error})` : ''}; containing it failed: ${messageOf(failure)}`;
      this.parts.log?.('error', message);
      this.parts.onOutcome?.(partition?.viewSetName ?? 'unknown', 'failed');
      throw maintenanceErrors.error('PARTITION_CONTAINMENT_FAILED', message, { cause: failure });
    }
  }

  /** judge's work, under the file's lock; fills `found` as it learns, for the message of a failure. */
  private async judgeHolding(path: string, found: Found): Promise<Verdict> {
    const { db, store, version, log, onOutcome } = this.parts;
    const partition = (found.partition = await partitionOfFile(db, path));
    if (!partition) return 'contained'; // no longer a partition: a statement run again does not read it
    const error = (found.error =
      (await store.size(path)) === null
        ? 'the file is missing from the object store'
        : // DuckDB's first line: its context lines quote Orrery's internal SQL.
          ((await this.parts.readWhole(path))?.split('\n')[0] ?? null));
    if (error === null) return 'readable';
    const view = this.parts.viewSet(partition.viewSetName);
    const range = rangeOf(partition);
    if (view) {
      const sourceNow = await this.parts.sourceCount(view, range);
      if (sourceNow < partition.sourceCount) {
        const lost = { partition, error, sourceNow };
        await markPartitionLost(db, path, error);
        log?.('error', lostMessage(lost));
        onOutcome?.(partition.viewSetName, 'lost');
        return lost;
      }
    }
    // The rebuilt partitions take the file's place in the transaction that quarantines it: no statement
    // sees the range empty.
    let record: QuarantinedPartition | null = null;
    const register = async (rebuilt: readonly Partition[]): Promise<boolean> => {
      record = await quarantinePartitionFile(db, path, error, version, rebuilt, this.parts.onPartitionsChanged);
      return record !== null;
    };
    if (view) await this.parts.rebuild(view, range, register);
    else await register([]);
    if (record) {
      log?.('warn', `quarantined partition file ${path} of ${partition.viewSetName} ${show(range)}: ${error}`);
      onOutcome?.(partition.viewSetName, 'quarantined');
    } else {
      // The partition left between our look and our commit (retired by an admin or a merge): the rebuild's files are deleted.
      log?.(
        'info',
        `partition file ${path} of ${partition.viewSetName} left the lake while its range was rebuilt here`,
      );
    }
    return 'contained';
  }
}

/** What judging a file has learnt so far. */
interface Found {
  partition: Partition | null;
  error: string | null;
}

/** How often a process waiting for another's containment of a file tries its lock again. */
const lockPollMs = 50;

const rangeOf = (p: Partition): InsertRange => ({ begin: p.beginInsertTime, end: p.endInsertTime });
const show = (range: InsertRange): string => `[${nanosToIso(range.begin)}, ${nanosToIso(range.end)})`;

function lostMessage({ partition, error, sourceNow }: Lost): string {
  return (
    `${partition.viewSetName}'s partition file ${partition.filePath} ${show(rangeOf(partition))} cannot be read (${error}) ` +
    `and cannot be rebuilt: its source counts ${sourceNow} of the ${partition.sourceCount} it was built from (past retention), ` +
    `so its ${partition.numRows} row(s) are lost. An admin retires it with retire_partition_by_file('${partition.filePath}'); ` +
    'statements then answer without those rows'
  );
}
