// The memory every kept table of a server's rollups (their stored rows' copies, their rings of kept tails:
// tail-values.ts) may take together. Each is capped alone (maxKeptRows, maxKeptBytes), but a server of hundreds of
// rollups, or of many tenants' rollups each near 64 MiB, would otherwise keep copies of them all in the query
// engine's memory, and ordinary statements would run out of memory_limit or spill. A kept table is charged with its
// measured bytes (kept-size.ts); a ring with each row put in it, deleted ones too: DuckDB frees a deleted row's memory
// only when the ring's database is detached (a 1,000-row tail replaced 3,000 times held 83 MB in one ring). A table
// that would take the total past the budget evicts the least recently read others first: reads of those go to their
// files, exact as ever, and their next read makes their copy again. One larger than the budget alone is not kept.

/** The part of a rollup's reads a kept table serves. */
export type KeptKind = 'stored' | 'tail';

/** A kept table charged to the budget: whose it is, and how to give it up when evicted. */
export interface KeptHolder {
  readonly rollup: string;
  readonly kind: KeptKind;
  /** Lets go of the table (its rollup's reads go to the files); called once, after it is no longer charged. */
  readonly evict: () => void;
}

/** The kept tables of one engine's rollups, charged to one budget of bytes. */
export class KeptBudget {
  /** By table, least recently read first (a Map keeps insertion order: a read moves its table last). */
  private readonly held = new Map<string, KeptHolder & { bytes: number }>();
  private total = 0;

  constructor(
    /** The most bytes all kept tables may take together. */
    readonly limit: number,
    private readonly onEvict: (holder: KeptHolder) => void = () => {},
  ) {}

  /** The bytes charged now, all tables together. */
  get bytes(): number {
    return this.total;
  }

  /**
   * Charges `bytes` more to `table` (a new one: its measure; a ring: its new row's), as read now, and evicts the least
   * recently read others until the total fits. False when `table` alone would take more than the budget: it is then
   * charged nothing, and its caller gives it up.
   */
  charge(table: string, holder: KeptHolder, bytes: number): boolean {
    const now = (this.held.get(table)?.bytes ?? 0) + bytes;
    this.release(table);
    if (now > this.limit) return false;
    this.held.set(table, { ...holder, bytes: now });
    this.total += now;
    for (const [other, held] of this.held) {
      if (this.total <= this.limit) break;
      this.release(other);
      this.onEvict(held);
      held.evict();
    }
    return true;
  }

  /** A read of `table`: the last to be evicted now. */
  read(table: string): void {
    const held = this.held.get(table);
    if (!held) return;
    this.held.delete(table);
    this.held.set(table, held);
  }

  /** `table` is no longer kept (replaced, dropped, evicted): its bytes are no longer charged. */
  release(table: string): void {
    const held = this.held.get(table);
    if (!held) return;
    this.held.delete(table);
    this.total -= held.bytes;
  }

  /** The bytes charged now by rollup and kind. */
  byRollup(): Array<{ rollup: string; kind: KeptKind; bytes: number }> {
    const sums = new Map<string, { rollup: string; kind: KeptKind; bytes: number }>();
    for (const { rollup, kind, bytes } of this.held.values()) {
      const key = `${rollup}\u0000${kind}`;
      const sum = sums.get(key) ?? { rollup, kind, bytes: 0 };
      sum.bytes += bytes;
      sums.set(key, sum);
    }
    return [...sums.values()];
  }
}
