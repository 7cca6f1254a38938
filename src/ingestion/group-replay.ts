import { randomUUID } from 'node:crypto';
import { crc32 } from 'node:zlib';
import type { MetadataStore } from '../metadata/index.js';
import {
  nowNanos,
  payloadGroupMayBeBy,
  payloadGroupRanges,
  payloadGroupSecond,
  type ObjectStore,
} from '../lakehouse/index.js';
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
 * The same replay covers a group answered before its commit (ORRERY_INGEST_ACK=synced): it stays in flight, before the
 * mark, until its commit is done, so a crash between its 200 and its commit leaves it to the next start.
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

/** Bytes read from a group object's end to find its manifest: one read for a group of up to ~150 requests. */
const TAIL_BYTES = 64 * 1024;

type Manifest = { signal: OtlpSignal; rows: BlockRow[] };

/**
 * The manifest `tail` ends with (the last bytes of the object `key`, `size` bytes in all); null when the trailer is
 * not one, or the manifest starts before `tail` does ('short': read more) or is not what a manifest is.
 */
function manifestAt(key: string, tail: Uint8Array, size: number): Manifest | 'short' | null {
  if (tail.byteLength < TRAILER_BYTES) return null;
  const trailer = Buffer.from(tail.buffer, tail.byteOffset + tail.byteLength - TRAILER_BYTES, TRAILER_BYTES);
  const length = trailer.readUInt32LE(0);
  if (trailer.readUInt32LE(8) !== MAGIC || length > size - TRAILER_BYTES) return null;
  if (length > tail.byteLength - TRAILER_BYTES) return 'short';
  const end = tail.byteLength - TRAILER_BYTES;
  try {
    const manifest = JSON.parse(Buffer.from(tail.subarray(end - length, end)).toString()) as {
      signal: OtlpSignal;
      rows: Array<Omit<BlockRow, 'file' | 'begin' | 'end'> & { begin: string; end: string }>;
    };
    return {
      signal: manifest.signal,
      rows: manifest.rows.map((row) => ({ ...row, file: key, begin: BigInt(row.begin), end: BigInt(row.end) })),
    };
  } catch {
    return null; // torn: the check of the whole (readGroup) would fail too
  }
}

/**
 * The signal and rows a group's object ends with, read from its end alone (one read, two for a large group); null
 * when it has none. Its payloads are not checked: the rows may name bytes a crash tore (see readGroup).
 */
export async function readManifest(store: ObjectStore, key: string): Promise<Manifest | null> {
  const size = await store.size(key);
  if (size === null || size < TRAILER_BYTES) return null;
  const read = async (length: number): Promise<Manifest | 'short' | null> => {
    const tail = await store.readRange(key, size - length, length);
    return tail === null || tail.byteLength !== length ? null : manifestAt(key, tail, size);
  };
  const manifest = await read(Math.min(size, TAIL_BYTES));
  if (manifest !== 'short') return manifest;
  const trailer = await store.readRange(key, size - TRAILER_BYTES, TRAILER_BYTES);
  const whole = trailer === null ? null : await read(TRAILER_BYTES + Buffer.from(trailer).readUInt32LE(0));
  return whole === 'short' ? null : whole;
}

/** The signal and rows of a group's object, read whole; null when it has none or fails its check (empty, torn). */
export async function readGroup(store: ObjectStore, key: string): Promise<Manifest | null> {
  const size = await store.size(key);
  if (size === null || size < TRAILER_BYTES) return null;
  const bytes = await store.readRange(key, 0, size);
  if (bytes === null || bytes.byteLength !== size) return null;
  const crc = Buffer.from(bytes.buffer, bytes.byteOffset + size - 8, 4).readUInt32LE(0);
  if (crc32(bytes.subarray(0, size - TRAILER_BYTES)) !== crc) return null;
  const manifest = manifestAt(key, bytes, size);
  return manifest === 'short' ? null : manifest;
}

/**
 * What a replay did: group objects named in its ranges, those read whole (rows missing), those inserted again, and
 * those whose rows Postgres refused (see replayGroups).
 */
export interface Replayed {
  listed: number;
  readWhole: number;
  inserted: number;
  refused: number;
}

/** Hears of a group whose rows Postgres refused on their own: its object's key and Postgres's error. */
export type RefusedGroup = (key: string, error: unknown) => void;

/**
 * Whether Postgres refused a statement for the rows it was given (SQLSTATE class 22, data exception, or 23, integrity
 * constraint violation): the same rows would be refused again. Anything else (the database unreachable, a conflict,
 * a cancelled statement) may pass on a later try, so the replay fails as a whole and is tried again.
 */
export function refusedRows(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code);
}

/** Manifests read at once (an object store's reads are round trips), and checked against Postgres in one query. */
const MANIFESTS_AT_ONCE = 16;
const MANIFESTS_PER_QUERY = 512;

/**
 * Group objects named from `from` to `until` (nanoseconds; keys name the second); when `writer` is given, not those
 * whose keys name another writer (see payloadGroupKey: a server's mark covers its own groups alone).
 */
export interface ReplayRange {
  readonly from: bigint;
  readonly until: bigint;
  readonly writer?: string;
}

/**
 * Inserts again the rows missing from Postgres of every group object named within one of `ranges`. Only the keys
 * in the ranges are listed, and only each object's manifest (none another writer named, when the range has one) is
 * read; a group is read whole (its payloads checked) only when one of its blocks is missing (`stored` says which
 * are there), and the missing rows of up to 512 groups are inserted in one statement per signal. When Postgres
 * refuses that statement (not for want of a connection), each of its groups is inserted alone, whole or not at all:
 * a group refused on its own is left out (`refused` hears of it) and the others are stored, as a request the ingest
 * path refuses fails alone. Such a group is one whose commit failed after its object was written: its insert, the
 * same rows, was refused then too, before any 200. Before, one such row failed every group of its batch, and the
 * start with it (at every start, as long as the mark's window held it).
 */
export async function replayGroups(
  store: ObjectStore,
  ranges: readonly ReplayRange[],
  stored: (blockIds: readonly string[]) => Promise<ReadonlySet<string>>,
  insert: InsertRows,
  refused: RefusedGroup = () => {},
): Promise<Replayed> {
  const keys = new Set<string>();
  for (const { from, until, writer } of ranges)
    for (const range of payloadGroupRanges(from, until))
      for (const key of await store.listBetween(range.prefix, range.after, range.until))
        if (payloadGroupSecond(key) !== null && (writer === undefined || payloadGroupMayBeBy(key, writer)))
          keys.add(key);
  const sorted = [...keys].sort();
  const replayed: Replayed = { listed: sorted.length, readWhole: 0, inserted: 0, refused: 0 };
  for (let i = 0; i < sorted.length; i += MANIFESTS_PER_QUERY) {
    const batch = sorted.slice(i, i + MANIFESTS_PER_QUERY);
    const manifests: Array<Manifest | null> = [];
    for (let j = 0; j < batch.length; j += MANIFESTS_AT_ONCE)
      manifests.push(...(await Promise.all(batch.slice(j, j + MANIFESTS_AT_ONCE).map((k) => readManifest(store, k)))));
    const ids = manifests.flatMap((m) => m?.rows.map((row) => row.blockId) ?? []);
    const present = ids.length > 0 ? await stored(ids) : new Set<string>();
    // The missing rows of the batch's groups, per signal: one statement (one WAL flush) each, every group whole.
    const missing = new Map<OtlpSignal, Array<{ key: string; rows: BlockRow[] }>>();
    for (const [j, manifest] of manifests.entries()) {
      if (manifest === null || manifest.rows.every((row) => present.has(row.blockId))) continue;
      replayed.readWhole++;
      const group = await readGroup(store, batch[j]);
      if (group === null) continue;
      const groups = missing.get(group.signal) ?? [];
      groups.push({ key: batch[j], rows: group.rows.filter((row) => !present.has(row.blockId)) });
      missing.set(group.signal, groups);
    }
    for (const [signal, groups] of missing) {
      try {
        await insert(
          signal,
          groups.flatMap((g) => g.rows),
          true,
        );
        replayed.inserted += groups.length;
        continue;
      } catch (error) {
        if (!refusedRows(error)) throw error;
      }
      for (const group of groups)
        try {
          await insert(signal, group.rows, true);
          replayed.inserted++;
        } catch (error) {
          if (!refusedRows(error)) throw error;
          replayed.refused++;
          refused(group.key, error);
        }
    }
  }
  return replayed;
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
/**
 * A server commits without the WAL flush only while its last mark is younger than this (its monotonic clock), and
 * only groups named (its own clock, see nameNow) at most this long after the mark's name time: the mark's
 * `replay_until`, the end of what a replay of it reads.
 */
const FRESH_MARK_MS = 5 * 60_000;
/**
 * Another server's mark not set for this long (Postgres's clock) is of a server that defers nothing to it any more
 * (FRESH_MARK_MS, which a server counts from before its mark's statement, so from before marked_at, plus a minute):
 * if it died, the groups it left uncommitted or unflushed are in the mark's window, so a running server replays such a
 * mark every GONE_CHECK_MS and deletes it (a live server marks again when it next commits).
 */
const GONE_MARK = `${FRESH_MARK_MS / 1000 + 60} seconds`;
const GONE_CHECK_MS = 10_000;
/** A mark of a server older than migration 9 has no `replay_until`: its groups are replayed up to this long after it. */
const REPLAY_AFTER_MARK_NS = 15n * 60_000_000_000n;

/**
 * This server's mark: which groups may commit without the WAL flush, and setting the mark after they have.
 * `inFlight` has the name time of every group from its name (reserved ahead) until its commit is done.
 */
export class ReplayMarks {
  readonly writer = randomUUID();
  private readonly inFlight = new Map<string, bigint>();
  /**
   * When (performance.now(): a clock stepped back or forward does not move it) the last mark's statement was sent; 0
   * before.
   */
  private markedAt = 0;
  /** The last mark's replay_until: a group named after it commits with the WAL flush. */
  private until = -1n;
  /** The latest name time given (see nameNow). */
  private named = 0n;
  private dirty = false;
  private marking: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private goneTimer: NodeJS.Timeout | undefined;
  private replayingGone = false;
  private closed = false;
  /** Marks sent, and how many had been when the last one to commit was sent (see marksFlushed). */
  private sent = 0;
  private flushed = 0;

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
   * The time to name a new group by: the wall clock, but never before a name given already. A mark's replay_from is
   * a name time, and every group named after it must be named at or after it: with the clock stepped back, a group
   * named by it would sort before the mark and no replay would read it.
   */
  nameNow(): bigint {
    const now = nowNanos();
    if (now > this.named) this.named = now;
    return this.named;
  }

  /**
   * At start-up, before any request: replays the groups of every server's mark (its own replay if it crashed with
   * Postgres, another's harmlessly), deletes the stale marks it replayed, then sets this server's first mark.
   */
  async recover(): Promise<Replayed> {
    const replayed = await this.replayMarks(false);
    await this.mark();
    this.timer = setInterval(() => {
      if (this.dirty) void this.mark();
    }, this.intervalMs);
    this.timer.unref();
    this.goneTimer = setInterval(() => void this.replayGone(), GONE_CHECK_MS);
    this.goneTimer.unref();
    return replayed;
  }

  /**
   * Replays the marks of every server (`gone` false: at start-up) or of the other servers that have not marked for
   * GONE_MARK (`gone`: a running server's check), then deletes those of them that are stale (STALE_MARK, or GONE_MARK
   * for `gone`), if still so.
   */
  private async replayMarks(gone: boolean): Promise<Replayed> {
    const stale = gone ? GONE_MARK : STALE_MARK;
    const { rows } = await this.db.query<{
      writer: string;
      replay_from: string;
      until: string;
      stale: boolean;
    }>(
      `SELECT writer, replay_from::text,
              coalesce(replay_until, (extract(epoch FROM marked_at) * 1e6)::bigint * 1000 + ${REPLAY_AFTER_MARK_NS})::text AS until,
              marked_at < now() - interval '${stale}' AS stale
         FROM ingest_marks
        ${gone ? `WHERE writer <> $1 AND marked_at < now() - interval '${GONE_MARK}'` : ''}`,
      gone ? [this.writer] : [],
    );
    let replayed: Replayed = { listed: 0, readWhole: 0, inserted: 0, refused: 0 };
    if (rows.length > 0) {
      replayed = await this.replay(
        rows.map((r) => ({ from: BigInt(r.replay_from), until: BigInt(r.until), writer: r.writer })),
      );
      const deleted = rows.filter((r) => r.stale);
      if (deleted.length > 0)
        await this.db.query(
          // Still stale when deleted: a server marking meanwhile keeps its replay_from while a group of its stays
          // in flight, and its deferred commits rely on that mark.
          `DELETE FROM ingest_marks m USING unnest($1::uuid[], $2::bigint[]) AS s (writer, replay_from)
            WHERE m.writer = s.writer AND m.replay_from = s.replay_from AND m.marked_at < now() - interval '${stale}'`,
          [deleted.map((r) => r.writer), deleted.map((r) => r.replay_from)],
        );
    }
    return replayed;
  }

  /**
   * While this server runs: the groups of a server that died (kill -9, its machine lost) and did not start again,
   * answered or committed without the WAL flush but not in Postgres, are inserted within GONE_MARK and GONE_CHECK_MS
   * of its last mark, not only at the next start.
   */
  private async replayGone(): Promise<void> {
    if (this.closed || this.replayingGone) return;
    this.replayingGone = true;
    try {
      const replayed = await this.replayMarks(true);
      if (replayed.inserted > 0)
        this.log(
          `inserted the rows of ${replayed.inserted} commit group(s) of a server gone since its mark`,
          undefined,
        );
    } catch (error) {
      this.log('replaying the marks of servers gone failed (tried again)', error);
    } finally {
      this.replayingGone = false;
    }
  }

  /** A group named `key` at `at` (a nameNow()) is being written (until `done`). */
  started(key: string, at: bigint): void {
    this.inFlight.set(key, at);
  }

  /**
   * True when the groups named `keys` may commit without the WAL flush: a mark was set lately and its window covers
   * their names, so a crash of Postgres is replayed from it. Else they commit durably and a mark is set at once.
   */
  mayDefer(keys: Iterable<string>): boolean {
    if (this.closed) return false; // the mark may be gone (see close)
    const fresh = this.markedAt > 0 && performance.now() - this.markedAt < FRESH_MARK_MS;
    if (fresh && [...keys].every((key) => (this.inFlight.get(key) ?? this.until + 1n) <= this.until)) return true;
    void this.mark();
    return false;
  }

  /** How many marks this server has sent. */
  marksSent(): number {
    return this.sent;
  }

  /**
   * How many marks had been sent when the last one that committed was: every commit that ended before that mark was
   * sent is flushed (a mark is a synchronous commit, which flushes the WAL up to it).
   */
  marksFlushed(): number {
    return this.flushed;
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
    clearInterval(this.goneTimer);
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
   * before this statement, whose synchronous commit flushes them), its window up to FRESH_MARK_MS of names after
   * now. If Postgres restarted since the last mark (a crash may have lost commits made after it), the mark does
   * not move: the groups of the old one's window are replayed first, and the mark moves on the next try.
   */
  private async setMark(): Promise<void> {
    this.dirty = false;
    const now = this.nameNow();
    const from = [...this.inFlight.values()].reduce((a, b) => (b < a ? b : a), now);
    const until = now + BigInt(FRESH_MARK_MS) * 1_000_000n;
    // Counted from before the statement, so from before its marked_at: see GONE_MARK.
    const asked = performance.now();
    const sent = ++this.sent;
    const { rows } = await this.db.query<{ replay_from: string; replay_until: string; restarted: boolean }>(
      `INSERT INTO ingest_marks AS m (writer, replay_from, replay_until, postgres_started)
       VALUES ($1, $2, $3, ${POSTGRES_STARTED})
       ON CONFLICT (writer) DO UPDATE
          SET replay_from = CASE WHEN m.postgres_started = EXCLUDED.postgres_started THEN EXCLUDED.replay_from
                                 ELSE m.replay_from END,
              replay_until = CASE WHEN m.postgres_started = EXCLUDED.postgres_started THEN EXCLUDED.replay_until
                                  ELSE m.replay_until END,
              marked_at = now()
       RETURNING replay_from::text, replay_until::text, postgres_started <> ${POSTGRES_STARTED} AS restarted`,
      [this.writer, from, until],
    );
    if (rows[0].restarted) {
      this.dirty = true;
      await this.replay([
        { from: BigInt(rows[0].replay_from), until: BigInt(rows[0].replay_until), writer: this.writer },
      ]);
      await this.db.query(`UPDATE ingest_marks SET postgres_started = ${POSTGRES_STARTED} WHERE writer = $1`, [
        this.writer,
      ]);
      return;
    }
    this.markedAt = asked;
    this.until = until;
    this.flushed = sent;
  }

  /** Inserts again the rows missing from Postgres of the groups named in `ranges` (see replayGroups). */
  private replay(ranges: readonly ReplayRange[]): Promise<Replayed> {
    return replayGroups(
      this.store,
      ranges,
      async (ids) =>
        new Set(
          (
            await this.db.query<{ block_id: string }>(
              'SELECT block_id::text FROM blocks WHERE block_id = ANY($1::uuid[])',
              [ids],
            )
          ).rows.map((row) => row.block_id),
        ),
      this.insert,
      (key, error) =>
        this.log(`ingest replay: the rows of commit group ${key} were refused by Postgres and left out`, error),
    );
  }
}
