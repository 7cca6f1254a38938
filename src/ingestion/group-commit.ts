/**
 * Group commit in two stages: requests that arrive while a stage is busy wait and go through it together, so
 * that N concurrent requests cost one round of payload writes and one Postgres statement instead of N. The
 * stages overlap: while one group's rows are being committed, the next group's payloads are written (and a
 * commit takes every group written meanwhile). A request arriving to an idle stage goes at once, alone.
 * A stage's failure fails every request in it that was not answered yet (each may be retried).
 */
export class GroupCommit<T, W, R> {
  private toWrite: Entry<T, R>[] = [];
  /** `answered`: the entry was resolved once written; called when its commit has ended (see answeredCommitted). */
  private toCommit: Array<{ written: W; entry: Entry<T, R>; answered?: () => void }> = [];
  private readonly answeredCommits = new Set<Promise<void>>();
  private writing = false;
  private committing = false;
  private idle: Array<() => void> = [];

  /**
   * `write` makes the items' payloads durable and says where each went (the first stage); `commit` then
   * records them together and gives each its result, in order (the second). `answerWritten`, when given, may
   * answer a written group at once (its results, or null to wait for the commit): the commit then runs as
   * before, and what follows its failure for that group is `commit`'s to handle (nobody is left to hear it).
   */
  constructor(
    private readonly write: (items: readonly T[]) => Promise<W[]>,
    private readonly commit: (items: readonly W[]) => Promise<R[]>,
    private readonly answerWritten?: (written: readonly W[]) => R[] | null,
  ) {}

  /** Resolves with the item's result once the commit holding it has succeeded, or once written when answered so. */
  submit(item: T): Promise<R> {
    const result = new Promise<R>((resolve, reject) => this.toWrite.push({ item, resolve, reject }));
    if (!this.writing) void this.writeAll();
    return result;
  }

  /** Resolves once the commits of the items answered so far (before their commit) have ended, failed or not. */
  answeredCommitted(): Promise<void> {
    return Promise.all(this.answeredCommits).then(() => undefined);
  }

  /** Resolves once no group is being written or committed (answered ones included). */
  settled(): Promise<void> {
    if (!this.writing && !this.committing) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
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
      const answers = this.answerWritten?.(written) ?? null;
      let answered: (() => void) | undefined;
      if (answers !== null) {
        group.forEach((entry, i) => entry.resolve(answers[i]));
        const committed = new Promise<void>((resolve) => (answered = resolve));
        this.answeredCommits.add(committed);
        void committed.then(() => this.answeredCommits.delete(committed));
      }
      this.toCommit.push(...group.map((entry, i) => ({ written: written[i], entry, answered })));
      if (!this.committing) void this.commitAll();
    }
    this.writing = false;
    this.wake();
  }

  private async commitAll(): Promise<void> {
    this.committing = true;
    while (this.toCommit.length > 0) {
      const group = this.toCommit.splice(0);
      try {
        const results = await this.commit(group.map((written) => written.written));
        group.forEach(({ entry, answered }, i) => (answered ? answered() : entry.resolve(results[i])));
      } catch (error) {
        for (const { entry, answered } of group) {
          if (answered) answered();
          else entry.reject(error);
        }
      }
    }
    this.committing = false;
    this.wake();
  }

  private wake(): void {
    if (!this.writing && !this.committing) for (const resolve of this.idle.splice(0)) resolve();
  }
}

interface Entry<T, R> {
  item: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}
