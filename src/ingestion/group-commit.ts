/**
 * Group commit in two stages: requests that arrive while a stage is busy wait and go through it together, so
 * that N concurrent requests cost one round of payload writes and one Postgres statement instead of N. The
 * stages overlap: while one group's rows are being committed, the next group's payloads are written (and a
 * commit takes every group written meanwhile). A request arriving to an idle stage goes at once, alone.
 * A stage's failure fails every request in it (none was acknowledged; each may be retried).
 */
export class GroupCommit<T, W, R> {
  private toWrite: Entry<T, R>[] = [];
  private toCommit: Array<{ written: W; entry: Entry<T, R> }> = [];
  private writing = false;
  private committing = false;

  /**
   * `write` makes the items' payloads durable and says where each went (the first stage); `commit` then
   * records them together and gives each its result, in order (the second).
   */
  constructor(
    private readonly write: (items: readonly T[]) => Promise<W[]>,
    private readonly commit: (items: readonly W[]) => Promise<R[]>,
  ) {}

  /** Resolves with the item's result once the commit holding it has succeeded. */
  submit(item: T): Promise<R> {
    const result = new Promise<R>((resolve, reject) => this.toWrite.push({ item, resolve, reject }));
    if (!this.writing) void this.writeAll();
    return result;
  }

  private async writeAll(): Promise<void> {
    this.writing = true;
    while (this.toWrite.length > 0) {
      const group = this.toWrite.splice(0);
      let written: W[];
      try {
        written = await this.write(group.map((entry) => entry.item));
      } catch (error) {
        for (const entry of group) entry.reject(error);
        continue;
      }
      this.toCommit.push(...group.map((entry, i) => ({ written: written[i], entry })));
      if (!this.committing) void this.commitAll();
    }
    this.writing = false;
  }

  private async commitAll(): Promise<void> {
    this.committing = true;
    while (this.toCommit.length > 0) {
      const group = this.toCommit.splice(0);
      try {
        const results = await this.commit(group.map((written) => written.written));
        group.forEach(({ entry }, i) => entry.resolve(results[i]));
      } catch (error) {
        for (const { entry } of group) entry.reject(error);
      }
    }
    this.committing = false;
  }
}

interface Entry<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}
