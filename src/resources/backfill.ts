// The backfill every per-partition resource shares (stored columns, index statistics, projection copies): a
// view set's partition files newest first within the lake's retention, those not done yet, and a loop that
// records the backfilled range after each, so an interrupted install resumes with the files not done.
import { allPartitions, type Partition } from '../lakehouse/index.js';
import type { InstallContext } from './installers.js';

export type FilePartition = Partition & { filePath: string };

/** What listing a set's files needs: the metadata and where the lake's retention begins. */
type Lister = Pick<InstallContext, 'db' | 'retainedFrom'>;

/** A view set's partition files within retention newest first, those `doneSql` (file_path rows, the resource's hash as $1) does not list, and how many past retention were left out. */
export async function partitionsToDo(
  ctx: Lister,
  viewSet: string,
  doneSql: string,
  hash: string,
): Promise<{ files: FilePartition[]; todo: FilePartition[]; done: number; past: number }> {
  const { files, past } = await partitionFiles(ctx, viewSet);
  const { rows } = await ctx.db.query<{ file_path: string }>(doneSql, [hash]);
  const done = new Set(rows.map((r) => r.file_path));
  return { files, todo: files.filter((f) => !done.has(f.filePath)), done: done.size, past };
}

/**
 * A view set's partition files newest first, but those whose insert range ended before the lake's retention
 * (`past`, counted): housekeeping retires them (retirePartitionsOlderThan, by the same bound) and no backfill
 * of them would be read for long, so writing them is wasted work. Until they go, a query reading one reads
 * it as it is (the expression computed, no statistics, the set's own file), so its answer stays the same.
 */
export async function partitionFiles(ctx: Lister, viewSet: string): Promise<{ files: FilePartition[]; past: number }> {
  const horizon = BigInt(ctx.retainedFrom.getTime()) * 1_000_000n;
  const all = (await allPartitions(ctx.db))
    .filter((p): p is FilePartition => p.viewSetName === viewSet && p.filePath !== null)
    .sort((a, b) => (a.endInsertTime < b.endInsertTime ? 1 : a.endInsertTime > b.endInsertTime ? -1 : 0));
  const files = all.filter((p) => p.endInsertTime >= horizon);
  return { files, past: all.length - files.length };
}

/**
 * Tells that `past` partition files were left out as past retention: a progress line, and the ledger row's
 * detail, which the entry keeps once ready (see installEntry).
 */
export async function* pastRetention(ctx: InstallContext, key: string, past: number): AsyncGenerator<string> {
  if (past === 0) return;
  const note = `${past} partition file(s) past the lake's retention (ended before ${ctx.retainedFrom.toISOString()}) not backfilled: housekeeping removes them`;
  await ctx.progress({ detail: note });
  yield `  ${key}: ${note}`;
}

/** Does each partition in turn, recording the backfilled range after each; yields a line per partition. */
export async function* backfillEach<T extends Pick<FilePartition, 'beginInsertTime' | 'endInsertTime'>>(
  ctx: InstallContext,
  todo: readonly T[],
  each: (partition: T) => Promise<void>,
  line: (done: number, partition: T, secondsLeft: number) => string,
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
