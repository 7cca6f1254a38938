/**
 * Group commit: requests that arrive while a flush is under way wait and go together in the next one, so
 * that N concurrent requests cost one round of payload syncs and one Postgres statement instead of N. The
 * first request after a quiet spell flushes at once (no waiting for company); one flush runs at a time.
 * A flush's failure fails every request of it (none was acknowledged; each may be retried).
 */
export class GroupCommit<T, R> {
  private pending: Array<{ item: T; resolve: (result: R) => void; reject: (error: unknown) => void }> = [];
  private flushing = false;

  /** `flush` stores the items together and gives each its result, in order. */
  constructor(private readonly flush: (items: readonly T[]) => Promise<R[]>) {}

  /** Resolves with the item's result once the flush holding it has committed. */
  submit(item: T): Promise<R> {
    const result = new Promise<R>((resolve, reject) => this.pending.push({ item, resolve, reject }));
    if (!this.flushing) void this.run();
    return result;
  }

  private async run(): Promise<void> {
    this.flushing = true;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0);
      try {
        const results = await this.flush(batch.map((entry) => entry.item));
        batch.forEach((entry, i) => entry.resolve(results[i]));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    this.flushing = false;
  }
}
