import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants as zlib, gunzipSync } from 'node:zlib';
import { nativeZstdContent } from '../engine/index.js';
import { blockInsertTag, conflictOr, type MetadataStore } from '../metadata/index.js';
import { nanosToPg, nowNanos, payloadGroupKey, type ObjectStore } from '../lakehouse/index.js';
import type { OrreryMetrics } from '../metrics/index.js';
import {
  asFieldOne,
  decodeLogs,
  decodeMetrics,
  decodeTraces,
  logsLines,
  resourceKey,
  scanLogs,
  scanLogsWith,
  sealJsonLogsWith,
  sealLogsWith,
  type Attributes,
  type FlatJsonLogsSeal,
  type FlatLogsScan,
  type FlatLogsSeal,
  type OtlpContentType,
  type OtlpSignal,
  type ResourceGroup,
  type ScannedResourceLogs,
  type SealedJsonLogs,
  type SealedLogs,
} from './otlp/index.js';
import { GroupCommit } from './group-commit.js';
import { groupManifest, refusedRows, ReplayMarks, type BlockRow, type Replayed } from './group-replay.js';
import { KnownResources, type KnownResource } from './known-resources.js';
import { KnownStreams } from './known-streams.js';
import { logLine, metricLine, spanLine } from './payload-lines.js';

/**
 * Group objects reserved with one folder fsync (see writePayloads). Each fsync of the folder is a journal commit
 * of its own, which the next group's fsync may wait behind: one per group before, one per this many groups now.
 * The reservations are open files, used within seconds at any rate worth saving on (FileObjectStore drops one
 * older than 10 s).
 */
const RESERVED_AT_ONCE = 8;

/** Stream tag of each signal (what the view sets select blocks by). */
export const signalTags: Record<OtlpSignal, 'log' | 'metrics' | 'traces'> = {
  logs: 'log',
  metrics: 'metrics',
  traces: 'traces',
};

/** A UUID (version-8 layout) derived from text: the same input always gives the same id. */
export function derivedUuid(text: string): string {
  const hex = createHash('sha256').update(text).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16], 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

const text = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value : value == null ? null : String(value as string);

/**
 * Stores OTLP requests: each resource becomes a process (a stable id per audience and
 * resource), each signal a stream of it, and each request's records for one resource a block:
 * its payload written to the object store, then its row inserted. Concurrent requests of a signal
 * are stored together (group commit): their payloads in one object, their rows in one statement.
 */
export class IngestionService {
  private readonly commits: Record<OtlpSignal, GroupCommit<readonly StoredBlock[], readonly PlacedBlock[], number>>;
  private readonly scanLogs: (body: Uint8Array) => ScannedResourceLogs[] | null;
  private readonly sealLogs: ((body: Uint8Array, compress: boolean) => Promise<SealedLogs>) | null;
  private readonly sealJsonLogs: ((body: Uint8Array) => Promise<SealedJsonLogs>) | null;
  private readonly zstdPayload: ((content: Uint8Array) => Uint8Array | null) | null;
  private readonly known = new KnownResources();
  /** The processes and streams known to exist in Postgres (see insertRows). */
  private readonly knownStreams: KnownStreams;
  /** The object keys reserved for the next groups' payloads, oldest first (see writePayloads). */
  private readonly reservedFiles: string[] = [];
  /** Which groups may commit without Postgres's WAL flush (see group-replay.ts); null: every group waits for it. */
  private readonly marks: ReplayMarks | null;
  /** Group objects whose requests were answered before their rows committed (see answerWritten). */
  private readonly answered = new Set<string>();
  /** Failed commits of answered groups, tried again until they succeed (see commitLater), and their timers. */
  private failedCommits = 0;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private closed = false;
  private readonly log: (message: string, error: unknown) => void;

  /**
   * `nativeScan`: the native addon's logs scan (src/engine/native/logs-scan.cc), the same verdicts as the
   * JavaScript one at a fraction of its cost; without it (no addon, ORRERY_NATIVE=off) the JavaScript one.
   * `nativeSeal`: the same scan with the sha256 and compression of the body on a worker thread
   * (src/engine/native/logs-seal.cc); used for logs protobuf bodies instead of the scan when given.
   * `nativeJsonSeal`: an OTLP/JSON logs body transcoded to protobuf and sealed so, on a worker thread
   * (src/engine/native/logs-json.cc); without it (or for a body it does not vouch for) JSON is decoded the slow way.
   * `replay`: commit groups' rows without waiting for the WAL flush, durable as their objects' manifests, with a mark
   * set every `markIntervalMs` (see group-replay.ts and recover); with `answerSynced`, answer a request once its
   * group's object is synced, before its rows commit (see answerWritten). Without it every commit waits for the flush.
   * `nativeZstd`: a protobuf payload the seal did not compress (the pieces of a body of several resources) compressed
   * as the seal compresses (src/engine/native/payload-zstd.cc); without it, brotli (see compressed).
   */
  constructor(
    private readonly db: MetadataStore,
    private readonly store: ObjectStore,
    private readonly metrics?: OrreryMetrics,
    nativeScan?: FlatLogsScan | null,
    nativeSeal?: FlatLogsSeal | null,
    nativeJsonSeal?: FlatJsonLogsSeal | null,
    replay?: { markIntervalMs: number; answerSynced?: boolean; log: (message: string, error: unknown) => void },
    nativeZstd?: ((content: Uint8Array) => Uint8Array | null) | null,
  ) {
    this.zstdPayload = nativeZstd ?? null;
    this.scanLogs = nativeScan ? scanLogsWith(nativeScan) : scanLogs;
    this.sealLogs = nativeSeal ? sealLogsWith(nativeSeal) : null;
    this.sealJsonLogs = nativeJsonSeal ? sealJsonLogsWith(nativeJsonSeal) : null;
    const commit = (signal: OtlpSignal) =>
      new GroupCommit<readonly StoredBlock[], readonly PlacedBlock[], number>(
        (requests) => this.writePayloads(signal, requests),
        (requests) => this.insert(signal, requests),
        replay?.answerSynced ? (requests) => this.answerWritten(requests) : undefined,
      );
    this.commits = { logs: commit('logs'), metrics: commit('metrics'), traces: commit('traces') };
    this.marks = replay
      ? new ReplayMarks(
          db,
          store,
          (signal, rows, durable) => insertRows(db, signal, rows, durable),
          replay.markIntervalMs,
          replay.log,
        )
      : null;
    this.log = replay?.log ?? (() => {});
    this.knownStreams = new KnownStreams(this.marks);
  }

  /**
   * Before the first request: inserts again the rows of the groups a crash of Postgres may have lost since the
   * servers' last marks (their objects' manifests), then starts setting this server's marks. Returns what it read
   * and inserted.
   */
  recover(): Promise<Replayed> {
    return this.marks?.recover() ?? Promise.resolve({ listed: 0, readWhole: 0, inserted: 0, refused: 0 });
  }

  /**
   * Resolves once the requests answered so far before their commit (ORRERY_INGEST_ACK=synced) are committed (or
   * their commit failed, to be tried again): what this process acknowledged is then in Postgres for its readers.
   */
  async committed(): Promise<void> {
    await Promise.all(Object.values(this.commits).map((commit) => commit.answeredCommitted()));
  }

  /**
   * Waits for the commits of the requests answered already, then stops setting marks (a group whose commit failed
   * meanwhile keeps the mark: the next start inserts its rows; requests still in flight commit with the WAL flush).
   */
  async close(): Promise<void> {
    await Promise.all(Object.values(this.commits).map((commit) => commit.settled()));
    this.closed = true;
    for (const timer of this.retryTimers) clearTimeout(timer);
    // The next groups' objects, reserved ahead, hold nothing yet: they do not keep the mark.
    for (const file of this.reservedFiles.splice(0)) this.marks?.done(file, false);
    await this.marks?.close();
  }

  /**
   * Decodes and stores one request body; returns the number of records stored (of the request, when answered before
   * its commit). The whole body is checked before it joins a flush (a bad one fails alone, before anything is
   * written), and a flush's rows go into Postgres in one statement, so a request is stored whole or not at all; it
   * resolves once its flush has committed, or once its group's object is synced when a mark covers it (see
   * answerWritten).
   */
  async ingest(
    signal: OtlpSignal,
    body: Uint8Array,
    contentType: OtlpContentType,
    audience: string,
    received?: Uint8Array,
  ): Promise<number> {
    const now = nowNanos();
    const blocks = (await this.blocks(signal, body, contentType, now, received)).map((block) =>
      compressed(identified(signal, block, audience), this.zstdPayload),
    );
    if (blocks.length === 0) return 0;
    // A commit that gave way to another statement (a lock, a cancel) or that the database had no room for (disk full)
    // stored nothing: the client may send it again.
    return this.commits[signal].submit(blocks).catch((error: unknown) => {
      throw conflictOr(error);
    });
  }

  /**
   * The requests of a group whose object is synced are answered at once when a mark covers the group (the same test
   * as for committing without the WAL flush): its rows are durable already as the object's manifest, and the mark
   * keeps the group in the next replay's window until its commit is done, so a crash before the commit (of the server,
   * of Postgres or of the machine) loses nothing: the next start inserts its rows. Not while an answered group's
   * commit is failing (Postgres unreachable): then requests wait for their commit and fail with it, as without marks.
   * Answered with each request's records (a retry's, stored already, included).
   */
  private answerWritten(requests: readonly (readonly PlacedBlock[])[]): number[] | null {
    if (this.marks === null || this.failedCommits > 0) return null;
    const files = new Set(requests.flat().map((b) => b.file));
    if (!this.marks.mayDefer(files)) return null;
    for (const file of files) this.answered.add(file);
    return requests.map((request) => request.reduce((n, b) => n + b.count, 0));
  }

  /**
   * The first stage of storing checked requests: every payload of them appended to one new object (one write,
   * one sync, one name), each block placed at its offset (a block two requests carry, once), then the group's rows
   * (its manifest, see group-replay.ts). Payloads are written before their rows: an object whose rows never commit
   * is named by no block, and the orphan sweep deletes it (unless a replay inserts its rows: whole, as a retry
   * would); a retry writes its payloads again, and its rows, already there, keep naming the first copy.
   */
  private async writePayloads(
    signal: OtlpSignal,
    requests: readonly (readonly StoredBlock[])[],
  ): Promise<PlacedBlock[][]> {
    // The next groups' objects are reserved ahead, RESERVED_AT_ONCE at a time, before the last one is taken: their
    // creation and their folder's fsync are then off those groups' path (at 4 senders they were ~1-3 ms of each
    // request's ~7, stage 5 of bench/ingestion/PROFILE.md), and one folder fsync serves them all.
    const file = this.reservedFiles.shift() ?? this.newGroupFile();
    if (this.reservedFiles.length <= 1) {
      const next = Array.from({ length: RESERVED_AT_ONCE }, () => this.newGroupFile());
      this.store.reserveNew(next);
      this.reservedFiles.push(...next);
    }
    const offsets = new Map<string, number>();
    const payloads: Uint8Array[] = [];
    let size = 0;
    for (const block of requests.flat()) {
      if (offsets.has(block.blockId)) continue;
      offsets.set(block.blockId, size);
      payloads.push(block.payload);
      size += block.payload.byteLength;
    }
    const placed = requests.map((request) =>
      request.map((b) => ({ ...b, file, offset: offsets.get(b.blockId)!, size: b.payload.byteLength })),
    );
    try {
      await this.store.putNew(file, [
        ...payloads,
        ...groupManifest(
          payloads,
          signal,
          uniqueBy(placed.flat(), (b) => b.blockId),
        ),
      ]);
    } catch (error) {
      this.marks?.done(file, false);
      throw error;
    }
    return placed;
  }

  /** A key for a group's object, named now (a group not committed yet, for the marks). */
  private newGroupFile(): string {
    const at = this.marks?.nameNow() ?? nowNanos();
    const key = payloadGroupKey(at, this.marks?.writer);
    this.marks?.started(key, at);
    return key;
  }

  /** The second stage: the rows of the requests in one statement; returns each request's records newly stored. */
  private async insert(signal: OtlpSignal, requests: readonly (readonly PlacedBlock[])[]): Promise<number[]> {
    this.metrics?.ingestFlushRequests.observe({ signal }, requests.length);
    // Without the WAL flush when a recent mark covers the group: its object's manifest, fsynced, is what makes the
    // rows durable (see group-replay.ts); the rows are visible at commit either way.
    const files = new Set(requests.flat().map((b) => b.file));
    const deferred = this.marks?.mayDefer(files) ?? false;
    let inserted: Set<string>;
    try {
      inserted = await insertRows(
        this.db,
        signal,
        uniqueBy(requests.flat(), (b) => b.blockId),
        !deferred,
        this.knownStreams,
      );
    } catch (error) {
      // The answered groups stay in flight (the mark stays before them) and commit later; the others failed.
      const late = requests.flat().filter((b) => this.answered.has(b.file));
      if (late.length > 0) {
        this.failedCommits++;
        this.commitLater(signal, late, error, 0);
      }
      for (const file of files) if (!this.answered.has(file)) this.marks?.done(file, false);
      throw error;
    }
    for (const file of files) {
      this.answered.delete(file);
      this.marks?.done(file, deferred);
    }
    // A block two requests of the flush both carry (a retry racing its original) counts for the first.
    const stored = requests.map((request) =>
      request.reduce((n, b) => n + (inserted.delete(b.blockId) ? b.count : 0), 0),
    );
    this.metrics?.ingestedRecords.inc(
      { signal },
      stored.reduce((a, b) => a + b, 0),
    );
    return stored;
  }

  /**
   * Commits answered groups' rows whose commit failed, after a pause growing to 30 s, until it succeeds (with the
   * WAL flush). Until then no request is answered before its commit, and the groups keep the mark: a stop or a
   * crash meanwhile leaves them to the next start's replay. When Postgres refuses the rows themselves (refusedRows),
   * each group is committed alone, and a group refused alone is left out, as the replay leaves it out: the same rows
   * would be refused at every try, keeping the groups committed with them out of Postgres and every later request
   * waiting for its commit.
   */
  private commitLater(signal: OtlpSignal, blocks: readonly PlacedBlock[], error: unknown, attempt: number): void {
    this.log(`committing ${blocks.length} acknowledged block(s) failed: tried again, and by the next start`, error);
    if (this.closed) return;
    const timer = setTimeout(
      () => {
        this.retryTimers.delete(timer);
        insertRows(
          this.db,
          signal,
          uniqueBy(blocks, (b) => b.blockId),
          true,
        ).then(
          (inserted) => {
            this.committedLater(blocks);
            const records = blocks.reduce((n, b) => n + (inserted.delete(b.blockId) ? b.count : 0), 0);
            this.metrics?.ingestedRecords.inc({ signal }, records);
          },
          (failure: unknown) => {
            if (!refusedRows(failure)) return this.commitLater(signal, blocks, failure, attempt + 1);
            const groups = new Map<string, PlacedBlock[]>();
            for (const block of blocks) groups.set(block.file, [...(groups.get(block.file) ?? []), block]);
            if (groups.size === 1) {
              this.log(`the rows of commit group ${blocks[0].file} were refused by Postgres and left out`, failure);
              return this.committedLater(blocks);
            }
            this.failedCommits += groups.size - 1;
            for (const group of groups.values()) this.commitLater(signal, group, failure, 0);
          },
        );
      },
      Math.min(30_000, 250 * 2 ** attempt),
    );
    timer.unref();
    this.retryTimers.add(timer);
  }

  /** The end of a commitLater: its groups no longer hold the mark, nor stop answering requests before their commit. */
  private committedLater(blocks: readonly PlacedBlock[]): void {
    this.failedCommits--;
    for (const file of new Set(blocks.map((b) => b.file))) {
      this.answered.delete(file);
      this.marks?.done(file, false);
    }
  }

  private async blocks(
    signal: OtlpSignal,
    body: Uint8Array,
    contentType: OtlpContentType,
    now: bigint,
    received: Uint8Array | undefined,
  ): Promise<PendingBlock[]> {
    if (signal === 'logs' && contentType === 'protobuf') {
      // A gzip body is stored as it came (received), when its trailer states its length: only an identity one, or
      // one whose trailer does not, needs compressing.
      const kept = received && statesItsLength(received, body.byteLength) ? received : undefined;
      const { scanned, ...sealed }: SealedLogs = this.sealLogs
        ? await this.sealLogs(body, kept === undefined)
        : { scanned: this.scanLogs(body) };
      if (scanned !== null)
        return storedAsReceived(body, scanned, kept, sealed, this.known.resources(body, scanned, withoutReserved));
    }
    if (signal === 'logs' && contentType === 'json' && this.sealJsonLogs) {
      // Stored as the protobuf it stands for (never as received: the payload must be protobuf), decoded as one
      // at materialization; a retry transcodes to the same bytes, so to the same block.
      const { body: proto, scanned, ...sealed } = await this.sealJsonLogs(body);
      if (proto !== null && scanned !== null)
        return storedAsReceived(
          proto,
          scanned,
          undefined,
          sealed,
          this.known.resources(proto, scanned, withoutReserved),
        );
    }
    const build = <R>(
      groups: ResourceGroup<R>[],
      toLine: (r: R) => string,
      times: (r: R) => [bigint, bigint],
    ): PendingBlock[] =>
      groups
        .filter((g) => g.records.length > 0)
        .map((g) => {
          let begin = -1n;
          let end = -1n;
          for (const record of g.records) {
            const [b, e] = times(record);
            if (begin < 0n || b < begin) begin = b;
            if (e > end) end = e;
          }
          return {
            resource: withoutReserved(g.resource.attributes),
            payload: Buffer.from(g.records.map(toLine).join('\n') + '\n'),
            format: 'ndjson',
            count: g.records.length,
            begin,
            end,
          };
        });
    switch (signal) {
      case 'logs':
        return build(
          decodeLogs(body, contentType),
          (r) => logLine(r, now),
          (r) => {
            const t = r.timeUnixNano || r.observedTimeUnixNano || now;
            return [t, t];
          },
        );
      case 'metrics':
        return build(
          decodeMetrics(body, contentType),
          (p) => metricLine(p, now),
          (p) => {
            const t = p.timeUnixNano || now;
            return [t, t];
          },
        );
      case 'traces':
        return build(decodeTraces(body, contentType), spanLine, (s) => [s.startTimeUnixNano, s.endTimeUnixNano]);
    }
  }
}

/**
 * The blocks of a logs body the scan vouched for: each ResourceLogs's bytes kept as received (the whole
 * body when it is the only one), as an ExportLogsServiceRequest of its own, decoded at materialization
 * (see payloadLines). The resources come decoded alone (see KnownResources), which checks them as decoding the
 * body would. A body stored whole takes the digest and compressed payload the native seal made of it, when it did.
 */
function storedAsReceived(
  body: Uint8Array,
  scanned: ScannedResourceLogs[],
  received: Uint8Array | undefined,
  { digest, payload }: Omit<SealedLogs, 'scanned'>,
  resources: readonly KnownResource[],
): PendingBlock[] {
  const blocks: PendingBlock[] = [];
  scanned.forEach((r, i) => {
    if (r.records === 0) return;
    const [start, end] = r.bytes;
    blocks.push({
      resource: resources[i].attributes,
      resourceKey: resources[i].key,
      // One ResourceLogs: the body itself, compressed as it came (gzip) when it came so.
      payload: scanned.length === 1 ? (received ?? payload ?? body) : asFieldOne(body.subarray(start, end)),
      content: scanned.length === 1 ? body : undefined,
      digest: scanned.length === 1 ? digest : undefined,
      format: 'otlp',
      count: r.records,
      begin: r.begin,
      end: r.end,
    });
  });
  return blocks;
}

/** gzip's magic bytes: neither NDJSON ('{') nor protobuf (0x1f would be wire type 7, which does not exist) start so. */
const isGzip = (payload: Uint8Array): boolean => payload[0] === 0x1f && payload[1] === 0x8b;

/**
 * The first byte of a payload the server compressed, before the brotli stream (which has no magic bytes of its
 * own): wire type 6 in protobuf (none such exists), not '{' and not gzip's, so every payload says what it is.
 * NDJSON payloads carry it, and protobuf ones stored before PROTOBUF_BROTLI_MARK (their content is told apart
 * only once decompressed).
 */
const BROTLI_MARK = 0xce;

/**
 * The first byte of a protobuf payload the server compressed (wire type 7: none such exists either), then the
 * content's length as a varint, then the brotli stream. The materializer hands such a payload as it is to the
 * native decoder, which decompresses it on its own thread beside the statement: no decompression beforehand
 * to learn what it holds, and the length bounds the ordered read's memory as the content's would.
 */
const PROTOBUF_BROTLI_MARK = 0xcf;

/**
 * The first byte of a protobuf payload the native seal compressed (wire type 7 again), then the content's length as
 * a varint, then one zstd frame (src/engine/native/payload-zstd.cc: libduckdb's zstd, which every server loads): 32.7
 * against brotli's 40.1 bytes per record of the bench's records for the same CPU to compress, and a third of its CPU
 * to decompress on the materializer's decode thread. Read as PROTOBUF_BROTLI_MARK payloads are.
 */
const PROTOBUF_ZSTD_MARK = 0xd7;

/** A PROTOBUF_BROTLI_MARK or PROTOBUF_ZSTD_MARK payload's content length and where its stream starts; null for another payload. */
function protobufContentHead(payload: Uint8Array): { size: number; start: number } | null {
  if (payload[0] !== PROTOBUF_BROTLI_MARK && payload[0] !== PROTOBUF_ZSTD_MARK) return null;
  let size = 0;
  for (let i = 1, shift = 1; i < payload.length && i <= 7; i++, shift *= 128) {
    size += (payload[i] & 0x7f) * shift;
    if (payload[i] < 0x80) return { size, start: i + 1 };
  }
  return null;
}

/**
 * The content length of a payload the native decoder reads as stored, holding protobuf: one the server compressed
 * (PROTOBUF_BROTLI_MARK, PROTOBUF_ZSTD_MARK), or a gzip body kept as the client sent it. Null for any other payload (or one whose length
 * is damaged), whose content is known only once decompressed.
 */
export function storedProtobufSize(payload: Uint8Array): number | null {
  return isGzip(payload) ? gzipProtobufSize(payload) : (protobufContentHead(payload)?.size ?? null);
}

/** A gzip body's trailer: its last member's ISIZE, the length of what that member holds modulo 2^32. */
const gzipTrailerSize = (gzip: Uint8Array): number =>
  Buffer.from(gzip.buffer, gzip.byteOffset, gzip.byteLength).readUInt32LE(gzip.byteLength - 4);

/**
 * Whether a gzip body's trailer states the length `size` of all it holds, as the materializer reads it (see
 * gzipProtobufSize). Not for a body of several members that are not empty, nor with bytes after its end, which
 * gunzip takes as well: the client's bytes would size the ordered read's hold (0 for four zero bytes).
 */
const statesItsLength = (gzip: Uint8Array, size: number): boolean =>
  gzip.byteLength >= 18 && gzipTrailerSize(gzip) === size % 2 ** 32;

/**
 * A gzip payload's content length when it holds protobuf: its trailer's (ingestion stores a body as received only
 * when it states the whole length, see statesItsLength). NDJSON lines were stored gzip too once (ae63466), so what it
 * holds is told by the first bytes of its first 4 KiB inflated (zlib yields output as it goes), not the whole.
 * Null for NDJSON, and when those bytes do not tell (the JavaScript path then reads it as before).
 */
function gzipProtobufSize(payload: Uint8Array): number | null {
  if (payload.length < 18) return null; // a 10-byte header and an 8-byte trailer at least
  let head: Uint8Array;
  try {
    head = gunzipSync(payload.subarray(0, 4096), { finishFlush: zlib.Z_SYNC_FLUSH });
  } catch {
    return null;
  }
  if (head.length === 0 || head[0] === 0x7b /* '{' */) return null;
  return gzipTrailerSize(payload);
}

/**
 * The block with its payload compressed, unless it came so (gzip): payloads are kept until retention deletes
 * them, and OTLP logs shrink ~4x (170 to ~40 bytes per record of the bench's records). Brotli at quality 0 costs
 * ~0.26 ms of CPU per 170 KB request where gzip level 1 costs ~0.7 (for ~34 bytes per record), and the ack
 * path's CPU is what limits records/s; its window is at most 256 KiB (LGWIN 18), which bounds the memory
 * of each compression. It runs on the event loop: zlib's asynchronous API (a stream of 16 KiB chunks, each a
 * thread-pool round trip) cost twice the CPU (0.5-0.7 ms per request) and 29 % of the event loop's busy time
 * in its callbacks. The block id was derived from the content already. A protobuf payload is compressed with
 * `zstd` instead when the server has the native addon (PROTOBUF_ZSTD_MARK, as the seal compresses a body stored whole).
 */
function compressed(block: StoredBlock, zstd: ((content: Uint8Array) => Uint8Array | null) | null): StoredBlock {
  // Compressed as it came (gzip), or already (zstd, by the native seal).
  const first = block.payload[0];
  if (isGzip(block.payload) || first === BROTLI_MARK || first === PROTOBUF_BROTLI_MARK || first === PROTOBUF_ZSTD_MARK)
    return block;
  const frame = block.format === 'ndjson' ? null : zstd?.(block.payload);
  if (frame) return { ...block, payload: frame };
  const stream = brotliCompressSync(block.payload, {
    params: {
      [zlib.BROTLI_PARAM_QUALITY]: 0,
      [zlib.BROTLI_PARAM_LGWIN]: 18,
      [zlib.BROTLI_PARAM_SIZE_HINT]: block.payload.byteLength,
    },
  });
  const head: number[] = [];
  if (block.format === 'ndjson') head.push(BROTLI_MARK);
  else {
    head.push(PROTOBUF_BROTLI_MARK);
    let size = block.payload.byteLength;
    for (; size >= 0x80; size = Math.floor(size / 128)) head.push((size % 128) | 0x80);
    head.push(size);
  }
  const payload = Buffer.allocUnsafe(head.length + stream.byteLength);
  payload.set(head, 0);
  payload.set(stream, head.length);
  return { ...block, payload };
}

/** A stored payload's content: itself, or decompressed (gzip as received, brotli or zstd as `compressed` or the seal wrote it). */
export function payloadContent(payload: Uint8Array): Uint8Array {
  if (isGzip(payload)) return gunzipSync(payload);
  if (payload[0] === BROTLI_MARK) return brotliDecompressSync(payload.subarray(1));
  if (payload[0] !== PROTOBUF_BROTLI_MARK && payload[0] !== PROTOBUF_ZSTD_MARK) return payload;
  const head = protobufContentHead(payload);
  if (head !== null && payload[0] === PROTOBUF_ZSTD_MARK)
    return nativeZstdContent(payload.subarray(head.start), head.size);
  const content = head === null ? null : brotliDecompressSync(payload.subarray(head.start));
  if (content === null || content.byteLength !== head?.size) throw new Error('a compressed payload is damaged');
  return content;
}

/**
 * A block payload as the NDJSON lines the view sets read: an NDJSON payload as it is, a logs payload
 * stored as received (protobuf) decoded to them; either may be compressed (see payloadContent).
 * The decode cannot fail on what the scan accepted; if the payload was damaged since, it throws (the block
 * is then unreadable, as a damaged NDJSON one).
 */
export function payloadLines(payload: Uint8Array): Uint8Array {
  payload = payloadContent(payload);
  if (payload.length === 0 || payload[0] === 0x7b /* '{' */) return payload;
  const direct = logsLines(payload);
  if (direct !== null) return direct;
  const lines: string[] = [];
  for (const group of decodeLogs(payload, 'protobuf'))
    for (const record of group.records) lines.push(logLine(record, 0n));
  return Buffer.from(lines.join('\n') + '\n');
}

/** A block with its ids and payload: ids derive from the content, so a retried request stores nothing twice. */
function identified(signal: OtlpSignal, block: PendingBlock, audience: string): StoredBlock {
  const processId = derivedUuid(`process\u0000${audience}\u0000${block.resourceKey ?? resourceKey(block.resource)}`);
  const streamId = derivedUuid(`stream\u0000${processId}\u0000${signal}`);
  // An NDJSON block's id stays what it was; a protobuf one's names its format, so the two never meet.
  // The id hashes the content, not its compression: the same request gzipped otherwise is the same block.
  const digest =
    block.digest ??
    createHash('sha256')
      .update(block.content ?? block.payload)
      .digest('hex');
  const blockId = derivedUuid(`block\u0000${streamId}\u0000${block.format === 'ndjson' ? '' : 'otlp\u0000'}${digest}`);
  return { ...block, audience, processId, streamId, blockId };
}

/**
 * Inserts the processes, streams and blocks of a flush's requests in one statement (one round trip,
 * atomic); returns the ids of the blocks it inserted (not those already stored: a retry). Rows go in one
 * order (each table by id), so concurrent flushes naming the same processes wait on each other instead of
 * deadlocking. The statement calls orrery_insert_blocks (migration 11), which inserts a process or stream only
 * when it is missing: nearly every group names ones that exist, and inserting them anyway was two thirds of the
 * statement's Postgres CPU. When `known` holds every process and stream of the group, the blocks insert runs
 * alone, guarded by the count of their deletes (see KnownStreams): ~0.7x the function's Postgres CPU and of pg's
 * client's per group; when the count moved it inserts nothing and the function runs. `durable: false` commits
 * without waiting for the WAL flush (synchronous_commit off for this transaction alone).
 */
async function insertRows(
  db: MetadataStore,
  signal: OtlpSignal,
  blocks: readonly BlockRow[],
  durable: boolean,
  known?: KnownStreams,
): Promise<Set<string>> {
  const rows = insertParameters(blocks);
  const count = known?.guard(rows.ids) ?? null;
  if (count !== null) {
    // Tagged as the function's statement is (blockInsertsRunning), and prepared the same way.
    const alone = await db.prepared<{ inserted: string[]; deletes: string | null }>(
      'orrery_insert_known_blocks',
      `${blockInsertTag}
       WITH b AS (
         INSERT INTO blocks (block_id, stream_id, process_id, begin_time, begin_ticks, end_time, end_ticks, nb_objects,
                             payload_file, object_offset, payload_size, audience)
         SELECT id, stream_id, process_id, begin_time, 0, end_time, 0, nb_objects, payload_file, object_offset,
                payload_size, audience
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::timestamptz[], $5::timestamptz[], $6::int[], $7::text[],
                       $8::bigint[], $9::bigint[], $10::text[])
                AS t (id, stream_id, process_id, begin_time, end_time, nb_objects, payload_file, object_offset,
                      payload_size, audience)
          WHERE (SELECT n FROM ingest_deletes) = $12::bigint
         ON CONFLICT (block_id) DO NOTHING
         RETURNING block_id
       ), c AS (SELECT set_config('synchronous_commit',
                                  CASE WHEN $11::boolean THEN 'off' ELSE current_setting('synchronous_commit') END, true))
       SELECT coalesce((SELECT array_agg(block_id) FROM b), '{}') AS inserted,
              (SELECT n::text FROM ingest_deletes) AS deletes
         FROM c`,
      [...rows.blocks, !durable, count],
    );
    // The same count in the statement's snapshot: the guard held, the blocks are in (or were already: a retry).
    if (alone.rows[0].deletes === count) return new Set(alone.rows[0].inserted);
  }
  // Tagged so that the daemon's passes wait for it (blockInsertsRunning): its rows' insert time is its start.
  // Prepared: one runs per group (at 4 senders, nearly one per request), its text always the same. The count of
  // deletes is read in the statement's snapshot, before the function's own (see KnownStreams).
  const result = await db.prepared<{ inserted: string[]; deletes: string | null }>(
    'orrery_insert_blocks',
    `${blockInsertTag}
     SELECT orrery_insert_blocks($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
                                 $20, $21, $22, $23, $24) AS inserted,
            (SELECT n::text FROM ingest_deletes) AS deletes`,
    [...rows.processes, ...rows.streams, signalTags[signal], `otlp/v1/${signal}`, ...rows.blocks, !durable],
  );
  known?.learn(rows.ids, result.rows[0].deletes, durable);
  return new Set(result.rows[0].inserted);
}

/**
 * A group's rows as insertRows' parameters, each table's in the order its rows go in (by id), and the ids of its
 * processes and streams. Built apart from insertRows, in one pass per table: built inside it by nineteen `map` calls
 * and three sorts, each inlined with its callback, they made insertRows the costliest function TurboFan compiled in a
 * fresh server (0.1-0.8 s per compile, two or three compiles in the first 25 s of a 4-sender run, a sixth to a third of
 * the optimizing compiler's time then, on the cores the requests need: bench/ingestion/PROFILE.md, s19).
 */
function insertParameters(blocks: readonly BlockRow[]): {
  ids: string[];
  processes: unknown[][];
  streams: string[][];
  blocks: unknown[][];
} {
  const byId = (key: (b: BlockRow) => string) => (a: BlockRow, b: BlockRow) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
  const processes = uniqueBy(blocks, (b) => b.processId).sort(byId((b) => b.processId));
  const streams = uniqueBy(blocks, (b) => b.streamId).sort(byId((b) => b.streamId));
  const streamIds = streams.map((b) => b.streamId);
  return {
    ids: [...processes.map((b) => b.processId), ...streamIds],
    processes: processRowColumns(processes),
    streams: [streamIds, streams.map((b) => b.processId)],
    blocks: blockRowColumns([...blocks].sort(byId((b) => b.blockId))),
  };
}

/** The blocks' columns of the insert ($1-$10 of the insert alone, $14-$23 of orrery_insert_blocks), in one pass. */
function blockRowColumns(blocks: readonly BlockRow[]): unknown[][] {
  const ids: string[] = [];
  const streams: string[] = [];
  const processes: string[] = [];
  const begins: string[] = [];
  const ends: string[] = [];
  const counts: number[] = [];
  const files: string[] = [];
  const offsets: number[] = [];
  const sizes: number[] = [];
  const audiences: string[] = [];
  for (const b of blocks) {
    ids.push(b.blockId);
    streams.push(b.streamId);
    processes.push(b.processId);
    begins.push(nanosToPg(b.begin));
    ends.push(nanosToPg(b.end, 'ceil'));
    counts.push(b.count);
    files.push(b.file);
    offsets.push(b.offset);
    sizes.push(b.size);
    audiences.push(b.audience);
  }
  return [ids, streams, processes, begins, ends, counts, files, offsets, sizes, audiences];
}

/** The processes' columns of orrery_insert_blocks ($1-$9), in one pass. */
function processRowColumns(processes: readonly BlockRow[]): unknown[][] {
  const columns: Array<Array<string | null>> = Array.from({ length: 9 }, () => []);
  for (const b of processes) {
    const r = (name: string): string | null => text(b.resource[name]);
    const row = [
      b.processId,
      r('service.name') ?? r('process.executable.name'),
      r('process.owner'),
      r('service.instance.id'),
      r('host.name'),
      r('os.description') ?? r('os.type'),
      r('host.cpu.model.name'),
      JSON.stringify(b.resource),
      b.audience,
    ];
    row.forEach((value, i) => columns[i].push(value));
  }
  return columns;
}

const uniqueBy = <T>(items: readonly T[], key: (item: T) => string): T[] => [
  ...new Map(items.map((item) => [key(item), item])).values(),
];

/**
 * Resource attributes without the `micromegas.` ones: those are the server's to set (the
 * audience comes from the key), so a client cannot choose them.
 */
function withoutReserved(attributes: Attributes): Attributes {
  return Object.fromEntries(Object.entries(attributes).filter(([key]) => !key.startsWith('micromegas.')));
}

interface PendingBlock {
  resource: Attributes;
  /** resourceKey(resource), when known already. */
  resourceKey?: string;
  /** NDJSON lines (one per record), or the request's protobuf bytes; compressed once stored (see payloadContent). */
  payload: Uint8Array;
  /** The payload's content when the payload is compressed (what the block id hashes). */
  content?: Uint8Array;
  /** sha256 of the content, hex, when the native seal computed it already. */
  digest?: string;
  format: 'ndjson' | 'otlp';
  count: number;
  begin: bigint;
  end: bigint;
}

interface StoredBlock extends PendingBlock {
  /** The audience of the key that sent it (its process's too: the process id derives from it). */
  audience: string;
  processId: string;
  streamId: string;
  blockId: string;
}

/** A block whose payload is written: `size` bytes at `offset` of the object `file`. */
type PlacedBlock = StoredBlock & BlockRow;
