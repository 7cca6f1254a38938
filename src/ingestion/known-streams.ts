/**
 * The processes and streams this server's inserts found or made in Postgres, with the count of process and stream
 * deletes (migration 12's ingest_deletes) read before them: a commit group naming only those runs the blocks insert
 * alone, guarded by the count being unchanged (see insertRows), instead of orrery_insert_blocks' checks.
 *
 * Why that is safe: an id is taken in only after a statement that found or made its row, whose count was read in a
 * snapshot before that statement's own (taken after the lock on `blocks`). A delete of the row afterwards, by
 * retention or anyone, bumps the count in its transaction, so the guarded insert (whose snapshot is taken once it
 * holds its lock on `blocks`, which retention's deletes wait for and hold) either sees the new count and inserts
 * nothing, or commits before the delete, which then sees its block. A crash of Postgres may lose a commit made
 * without the WAL flush (see group-replay.ts), so an id from such a commit is used only once a mark set after it has
 * committed (a synchronous commit, which flushes every commit before it).
 */
export class KnownStreams {
  /** The count the ids were read with; null before the first, or when Postgres has no count (an older schema). */
  private count: string | null = null;
  private readonly ids = new Set<string>();
  /** Ids waiting for a mark set after `after` marks were sent (see ReplayMarks.marksSent). */
  private pending: Array<{ ids: readonly string[]; count: string; after: number }> = [];

  /**
   * `marks`: how many marks were sent, and how many had been sent when the last one that committed was (see
   * ReplayMarks); null when every commit waits for the WAL flush.
   */
  constructor(private readonly marks: { marksSent(): number; marksFlushed(): number } | null) {}

  /** The count to guard the blocks insert of a group naming these ids with, when every one of them is known. */
  guard(ids: readonly string[]): string | null {
    this.promote();
    return this.count !== null && ids.every((id) => this.ids.has(id)) ? this.count : null;
  }

  /**
   * `ids` were found or made by a statement that read `count` before them, and committed (`durable`: with the WAL
   * flush). A new count drops the ids known with another.
   */
  learn(ids: readonly string[], count: string | null, durable: boolean): void {
    if (count === null) return;
    if (durable || this.marks === null) this.add(ids, count);
    else this.pending.push({ ids, count, after: this.marks.marksSent() });
  }

  private promote(): void {
    if (this.pending.length === 0 || this.marks === null) return;
    const flushed = this.marks.marksFlushed();
    const ready = this.pending.filter((p) => flushed > p.after);
    if (ready.length === 0) return;
    this.pending = this.pending.filter((p) => flushed <= p.after);
    for (const { ids, count } of ready) this.add(ids, count);
  }

  private add(ids: readonly string[], count: string): void {
    // A count moves once per statement that deleted processes or streams (retention's, a few a day): the ids known
    // before it may be gone.
    if (count !== this.count || this.ids.size > MAX_KNOWN) {
      this.ids.clear();
      this.count = count;
    }
    for (const id of ids) this.ids.add(id);
  }
}

/** Ids kept at most (~100 bytes each); past it they are learnt again, a group at a time. */
const MAX_KNOWN = 100_000;
