// The backfill both per-partition resources share (index statistics, projection copies): a view set's
// partition files newest first, those not done yet, and a loop that records the backfilled range after
// each, so an interrupted install resumes with the files not done.
import { allPartitions, type Partition } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import type { InstallContext } from './installers.js';

export type FilePartition = Partition & { filePath: string };

/** A view set's partition files newest first, and those `doneSql` (file_path rows, the resource's hash as $1) does not list. */
export async function partitionsToDo(
  db: MetadataQueries,
  viewSet: string,
  doneSql: string,
  hash: string,
): Promise<{ files: FilePartition[]; todo: FilePartition[]; done: number }> {
  const files = await partitionFiles(db, viewSet);
  const { rows } = await db.query<{ file_path: string }>(doneSql, [hash]);
  const done = new Set(rows.map((r) => r.file_path));
  return { files, todo: files.filter((f) => !done.has(f.filePath)), done: done.size };
}

/** A view set's partition files, newest first. */
export async function partitionFiles(db: MetadataQueries, viewSet: string): Promise<FilePartition[]> {
  return (await allPartitions(db))
    .filter((p): p is FilePartition => p.viewSetName === viewSet && p.filePath !== null)
    .sort((a, b) => (a.endInsertTime < b.endInsertTime ? 1 : a.endInsertTime > b.endInsertTime ? -1 : 0));
}

/** Does each partition in turn, recording the backfilled range after each; yields a line per partition. */
export async function* backfillEach(
  ctx: InstallContext,
  todo: readonly FilePartition[],
  each: (partition: FilePartition) => Promise<void>,
  line: (done: number, partition: FilePartition, secondsLeft: number) => string,
): AsyncGenerator<string> {
  const started = Date.now();
  for (const [i, partition] of todo.entries()) {
    await each(partition);
    await ctx.progress({
      backfilledBegin: new Date(Number(partition.beginInsertTime / 1_000_000n)),
      backfilledEnd: new Date(Number(todo[0].endInsertTime / 1_000_000n)),
    });
    const left = ((Date.now() - started) / (i + 1)) * (todo.length - i - 1);
    yield line(i + 1, partition, Math.ceil(left / 1000));
  }
}
