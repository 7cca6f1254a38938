import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { MetadataStore } from '../metadata/index.js';
import { nowNanos, payloadGroupFolder, payloadGroupSecond, type ObjectStore } from '../lakehouse/index.js';
import type { Attributes, OtlpSignal } from './otlp/index.js';

/**
 * One durable write per acknowledged request. A commit group's object holds its payloads and, after them, its rows
 * (a manifest); the object is fsynced before the rows are inserted, and the insert commits without waiting for
 * Postgres's WAL flush (synchronous_commit off for that transaction: the rows are visible at once, as before, but a
 * crash of Postgres or of the machine may lose the last few hundred milliseconds of such commits). What such a crash
 * loses is read back from the objects: each server sets, with a synchronous commit (which flushes every commit
 * before it) a few times a second, its mark in `ingest_marks`, the name time of its oldest group not yet committed;
 * every group named before it is durable in Postgres. After a crash the groups named from the marks on are
 * inserted again (ON CONFLICT DO NOTHING: the ones that survived are left as they are); a server that stays up
 * while Postgres restarts or recovers from a crash finds out at its next mark (see POSTGRES_STARTED) and does the same.
 */

/** One block's row, as its group's insert writes it and the group's manifest keeps it. */
export interface BlockRow {
  readonly blockId: string;
  readonly streamId: string;
  readonly processId: string;
  /** The audience of the key that sent it. */
  readonly audience: string;
  /** Its resource's attributes (its process's columns and properties). */
  readonly resource: Attributes;
  readonly begin: bigint;
  readonly end: bigint;
  readonly count: number;
  /** The group's object, and where the block's payload is in it. */
  readonly file: string;
  readonly offset: number;
  readonly size: number;
}

/** Inserts a group's rows in one statement; `durable: false` commits without waiting for the WAL flush. */
export type InsertRows = (signal: OtlpSignal, rows: readonly BlockRow[], durable: boolean) => Promise<unknown>;

const MAGIC = 0x3147524f; // "ORG1"
const TRAILER_BYTES = 12;

/**
 * What ends a group's object after its payloads: the manifest (the signal and the rows, JSON), then a trailer of
 * the manifest's length, the CRC-32 of every byte before the trailer and a magic number. A torn object (a crash
 * mid-write, never acknowledged) fails the check and is not replayed; the orphan sweep deletes it.
 */
export function groupManifest(
  payloads: readonly Uint8Array[],
  signal: OtlpSignal,
  rows: readonly BlockRow[],
): Uint8Array[] {
  const json = Buffer.from(
    JSON.stringify({
      signal,
      // Its fields alone (a block carries its payload and content too), the object being the file.
      rows: rows.map((r) => ({
        blockId: r.blockId,
        streamId: r.streamId,
        processId: r.processId,
        audience: r.audience,
        resource: r.resource,
        begin: String(r.begin),
        end: String(r.end),
        count: r.count,
        offset: r.offset,
        size: r.size,
      })),
    }),
  );
  let crc = 0;
  for (const payload of payloads) crc = crc32(payload, crc);
  const trailer = Buffer.alloc(TRAILER_BYTES);
  trailer.writeUInt32LE(json.byteLength, 0);
  trailer.writeUInt32LE(crc32(json, crc), 4);
  trailer.writeUInt32LE(MAGIC, 8);
  return [json, trailer];
}

/** The signal and rows of a group's object; null when it has none or fails its check (empty, torn, older). */
export async function readGroup(
  store: ObjectStore,
  key: string,
): Promise<{ signal: OtlpSignal; rows: BlockRow[] } | null> {
  const size = await store.size(key);
  if (size === null || size < TRAILER_BYTES) return null;
  const bytes = await store.readRange(key, 0, size);
  if (bytes === null || bytes.byteLength !== size) return null;
  const trailer = Buffer.from(bytes.buffer, bytes.byteOffset + size - TRAILER_BYTES, TRAILER_BYTES);
  const length = trailer.readUInt32LE(0);
  if (trailer.readUInt32LE(8) !== MAGIC || length > size - TRAILER_BYTES) return null;
  if (crc32(bytes.subarray(0, size - TRAILER_BYTES)) !== trailer.readUInt32LE(4)) return null;
  const manifest = JSON.parse(
    Buffer.from(bytes.subarray(size - TRAILER_BYTES - length, size - TRAILER_BYTES)).toString(),
  ) as { signal: OtlpSignal; rows: Array<Omit<BlockRow, 'file' | 'begin' | 'end'> & { begin: string; end: string }> };
  return {
    signal: manifest.signal,
    rows: manifest.rows.map((row) => ({ ...row, file: key, begin: BigInt(row.begin), end: BigInt(row.end) })),
  };
}

/**
 * Inserts again the rows of every group object named within one of `ranges` ([from, until] in nanoseconds; keys
 * name the second), each group in one statement; returns how many groups it read.
 */
export async function replayGroups(
  store: ObjectStore,
  ranges: ReadonlyArray<readonly [bigint, bigint]>,
  insert: InsertRows,
): Promise<number> {
  const second = (ns: bigint): number => Number(ns / 1_000_000_000n);
  const day = 86_400_000_000_000n;
  const now = nowNanos();
  const folders = new Set<string>();
  for (const [from, until] of ranges) {
    const last = until < now ? until : now;
    for (let at = from; at < last + day; at += day) folders.add(payloadGroupFolder(at < last ? at : last));
  }
  let groups = 0;
  for (const folder of [...folders].sort())
    for (const key of await store.list(folder)) {
      const at = payloadGroupSecond(key);
      if (at === null || !ranges.some(([from, until]) => at >= second(from) && at <= second(until))) continue;
      const group = await readGroup(store, key);
      if (group === null || group.rows.length === 0) continue;
      await insert(group.signal, group.rows, true);
      groups++;
    }
  return groups;
}

/**
 * When Postgres last started or last recovered from a crash: either may have lost commits not flushed yet. A crash of
 * one of its processes (a backend killed by the OOM killer, say) makes the postmaster end the others and recover
 * from the WAL on disk, without changing pg_postmaster_start_time(); a crash recovery resets the shared statistics,
 * stamping pg_stat_bgwriter's stats_reset. (pg_stat_reset_shared() stamps it too: a replay then stores nothing twice.)
 */
const POSTGRES_STARTED = `greatest(pg_postmaster_start_time(), (SELECT stats_reset FROM pg_stat_bgwriter))`;

/** A server's mark older than this (Postgres's clock) is of a server gone: replayed and deleted at start-up. */
const STALE_MARK = '30 minutes';
/** A server commits without the WAL flush only while its last mark is younger than this (its own clock). */
const FRESH_MARK_MS = 5 * 60_000;
/**
 * How far after its mark's time a server's groups are replayed: past FRESH_MARK_MS it committed durably, and the
 * margin covers clocks of servers and Postgres that differ (names are on the server's clock, marks on Postgres's).
 */
const REPLAY_AFTER_MARK_NS = 15n * 60_000_000_000n;

/**
 * This server's mark: which groups may commit without the WAL flush, and setting the mark after they have.
 * `inFlight` has the name time of every group from its name (reserved ahead) until its commit is done.
 */
export class ReplayMarks {
  readonly writer = randomUUID();
  private readonly inFlight = new Map<string, bigint>();
  /** When (this process's clock) the last mark was set; 0 before the first. */
  private markedAt = 0;
  private dirty = false;
  private marking: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  /**
   * `intervalMs`: how often a mark is set while groups commit (each mark is one synchronous commit: a WAL flush);
   * `log` hears of a failed mark or replay (the next mark tries again; commits stay durable meanwhile).
   */
  constructor(
    private readonly db: MetadataStore,
    private readonly store: ObjectStore,
    private readonly insert: InsertRows,
    private readonly intervalMs: number,
    private readonly log: (message: string, error: unknown) => void,
  ) {}

  /**
   * At start-up, before any request: replays the groups of every server's mark (its own replay if it crashed with
   * Postgres, another's harmlessly), deletes the stale marks it replayed, then sets this server's first mark.
   */
  async recover(): Promise<number> {
    const { rows } = await this.db.query<{ writer: string; replay_from: string; marked: string; stale: boolean }>(
      `SELECT writer, replay_from::text, (extract(epoch FROM marked_at) * 1e6)::bigint::text AS marked,
              marked_at < now() - interval '${STALE_MARK}' AS stale
         FROM ingest_marks`,
    );
    let groups = 0;
    if (rows.length > 0) {
      groups = await replayGroups(
        this.store,
        rows.map((r) => [BigInt(r.replay_from), BigInt(r.marked) * 1000n + REPLAY_AFTER_MARK_NS] as const),
        this.insert,
      );
      const stale = rows.filter((r) => r.stale);
      if (stale.length > 0)
        await this.db.query(
          `DELETE FROM ingest_marks m USING unnest($1::uuid[], $2::bigint[]) AS s (writer, replay_from)
            WHERE m.writer = s.writer AND m.replay_from = s.replay_from`,
          [stale.map((r) => r.writer), stale.map((r) => r.replay_from)],
        );
    }
    await this.mark();
    this.timer = setInterval(() => {
      if (this.dirty) void this.mark();
    }, this.intervalMs);
    this.timer.unref();
    return groups;
  }

  /** A group named `key` at `at` is being written (until `done`). */
  started(key: string, at: bigint): void {
    this.inFlight.set(key, at);
  }

  /**
   * True when the group may commit without the WAL flush: a mark was set lately, so a crash of Postgres is
   * replayed from it. Else the group commits durably and a mark is set at once.
   */
  mayDefer(): boolean {
    if (this.closed) return false; // the mark may be gone (see close)
    if (this.markedAt > 0 && Date.now() - this.markedAt < FRESH_MARK_MS) return true;
    void this.mark();
    return false;
  }

  /** The group's commit is done (committed, deferred or failed). */
  done(key: string, deferred: boolean): void {
    this.inFlight.delete(key);
    if (deferred) this.dirty = true;
  }

  /**
   * Stops setting marks. With no group still committing, the mark is deleted: the DELETE's synchronous commit
   * flushes every deferred commit of this server before it, so nothing of its needs a replay, and starts after a
   * clean stop read none of its groups. A group still committing keeps the mark, replayed as after a crash.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.marking;
    if (this.inFlight.size > 0) return;
    // Kept when Postgres restarted since the mark (commits may have been lost): the next start replays them.
    await this.db
      .query(`DELETE FROM ingest_marks WHERE writer = $1 AND postgres_started = ${POSTGRES_STARTED}`, [this.writer])
      .catch((error: unknown) =>
        this.log('deleting the ingest replay mark failed: the next start replays from it', error),
      );
  }

  /** One mark at a time; a mark asked for while one runs is set after it. */
  private mark(): Promise<void> {
    this.marking ??= this.setMark()
      .catch((error: unknown) => {
        this.dirty = true; // tried again at the next tick
        this.log('setting the ingest replay mark failed', error);
      })
      .finally(() => (this.marking = null));
    return this.marking;
  }

  /**
   * Sets the mark at the name time of the oldest group not yet committed (every group named before it committed
   * before this statement, whose synchronous commit flushes them). If Postgres restarted since the last mark (a
   * crash may have lost commits made after it), the mark does not move: the groups from the old one are replayed
   * first, and the mark moves on the next try.
   */
  private async setMark(): Promise<void> {
    this.dirty = false;
    const from = [...this.inFlight.values()].reduce((a, b) => (b < a ? b : a), nowNanos());
    const { rows } = await this.db.query<{ replay_from: string; restarted: boolean }>(
      `INSERT INTO ingest_marks AS m (writer, replay_from, postgres_started) VALUES ($1, $2, ${POSTGRES_STARTED})
       ON CONFLICT (writer) DO UPDATE
          SET replay_from = CASE WHEN m.postgres_started = EXCLUDED.postgres_started THEN EXCLUDED.replay_from
                                 ELSE m.replay_from END,
              marked_at = now()
       RETURNING replay_from::text, postgres_started <> ${POSTGRES_STARTED} AS restarted`,
      [this.writer, from],
    );
    if (rows[0].restarted) {
      this.dirty = true;
      await replayGroups(this.store, [[BigInt(rows[0].replay_from), nowNanos()]], this.insert);
      await this.db.query(`UPDATE ingest_marks SET postgres_started = ${POSTGRES_STARTED} WHERE writer = $1`, [
        this.writer,
      ]);
      return;
    }
    this.markedAt = Date.now();
  }
}
