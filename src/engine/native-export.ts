import { createRequire } from 'node:module';
import {
  DuckDBTypeId,
  ResultReturnType,
  type DuckDBConnection,
  type DuckDBPreparedStatement,
  type DuckDBResult,
  type DuckDBType,
} from '@duckdb/node-api';
import { DataType, RecordBatch, Struct, makeData, type Data, type Schema } from 'apache-arrow';
import { DuckDBResultFailure, duckdbErrorType } from './errors.js';
import { decimalStorageWidth, fixedWidths, timestampFactors } from './column-layouts.js';

// The native exporter (native/arrow-export.cc, built by scripts/build-native.mjs): a thread of
// its own fetches DuckDB chunks and fills Arrow buffers, and this side wraps them in Arrow data
// without copying. It covers the flat column types; a result with any other column
// (lists, structs, enums, types sent as text) goes through the JavaScript converter.

/** Column layouts, numbered as in arrow-export.cc. */
const enum Kind {
  Fixed = 1,
  Scaled = 2,
  Bool = 3,
  Decimal128 = 4,
  Binary = 5,
}

/**
 * One batch: its buffers in IPC order, per column validity (null without nulls), then values, or
 * offsets and bytes, each its own memory padded to 8 bytes with zeros; `layout` holds per column its
 * null count and the length of each buffer.
 */
interface NativeBatch {
  rows: number;
  buffers: Array<ArrayBuffer | null>;
  layout: Float64Array;
}

interface NativeExporter {
  next(): Promise<NativeBatch | null>;
  /** The batch being filled ends at DuckDB's next chunk (see BatchSource.stop). */
  stop(): void;
  close(): void;
}

/** The bulk ingest stream (native/arrow-ingest.cc); used by native-ingest.ts. */
export interface NativeArrowIngest {
  push(rows: number, columns: Array<Array<number | Uint8Array | null>>): boolean;
  finish(): void;
  fail(message: string): void;
  close(): void;
}

interface NativeModule {
  Exporter: new (
    source: unknown,
    kinds: Int32Array,
    batchBytes: number,
    maxBinaryBytes: number,
    /** Given, `source` is a prepared statement the exporter runs, whose result must have these column types. */
    typeIds?: Int32Array,
    /** > 0: the exporter runs the statement and fetches its chunks on a thread of its own at this nice value. */
    nice?: number,
    /** Given with `fill`: the statement's connection, on which the exporter runs `fill` just before the statement. */
    connection?: unknown,
    fill?: string,
  ) => NativeExporter;
  ArrowIngest: new (
    connection: unknown,
    view: string,
    formats: string[],
    names: string[],
    capacity: number,
    onRoom: () => void,
  ) => NativeArrowIngest;
  resultError(result: unknown): ResultFailure | null;
  registerSketchFunctions(connection: unknown, inverseLogGamma: number, memoryLimitBytes: number): void;
  /**
   * Registers __orrery_tail_row (tail-rows.cc) in the connection's database; answers the instance's number, which
   * names its connections to the calls below (DuckDB numbers connections per instance).
   */
  registerTailRowFunction(connection: unknown): number;
  /** The row of each ring (by its database) the connection's next statements read. */
  setTailReads(connection: unknown, instance: number, rings: string[], ids: number[]): void;
  /** The connection closes: what setTailReads kept for it goes. */
  forgetTailReads(connection: unknown, instance: number): void;
  /** A ring's row is about to be deleted: a statement told to read it fails from now on. */
  /** A ring was made: its rows may be read (a run reads only rings made and not dropped). */
  tailRingMade(ring: string): void;
  tailRowGone(ring: string, id: number): void;
  /** A ring was dropped: no run reads it from now on, and its rows told gone are forgotten. */
  forgetTailRing(ring: string): void;
  /** The OTLP logs scan (logs-scan.cc): 11 numbers per ResourceLogs, or null (see scanLogsWith). */
  scanLogs(body: Uint8Array): Float64Array | null;
  /** The scan, sha256 and compression of a logs body on a worker thread (logs-seal.cc); absent when this Node lacks them. */
  sealLogs?(
    body: Uint8Array,
    compress: boolean,
  ): Promise<{ scan: Float64Array | null; digest?: Uint8Array; payload?: Uint8Array }>;
  /** An OTLP/JSON logs body transcoded to protobuf (logs-json.cc), then sealed as sealLogs(body, true); absent as sealLogs. */
  sealJsonLogs?(
    body: Uint8Array,
  ): Promise<{ body: Uint8Array | null; scan: Float64Array | null; digest?: Uint8Array; payload?: Uint8Array }>;
  /** Registers __orrery_otlp_logs (otlp-logs-table.cc), reading payload files under `root` only. */
  registerOtlpLogsTable(connection: unknown, root: string): void;
  /** A protobuf body as a zstd payload (payload-zstd.cc: its mark, length and frame); null when zstd fails. */
  zstdPayload(content: Uint8Array): Uint8Array | null;
  /** The content of a zstd frame that holds `size` bytes (payload-zstd.cc); throws when it is damaged. */
  zstdContent(stream: Uint8Array, size: number): Uint8Array;
  /** A stored logs payload's content when it is protobuf, decompressed off the event loop (see nativeLogsPayloads). */
  storedLogsPayloadContent(payload: Uint8Array): Promise<Uint8Array | null>;
  /**
   * A log_entries partition file written from the ordered read's inputs on a libuv worker thread (otlp-logs-table.cc's
   * WriteOrdered): the rows written, or null (nothing written) when its writer would not write what the statement does.
   * A row group is written early once its text reaches `rowGroupBytes` (256 MiB when not given).
   */
  writeOrderedLogsPartition(
    file: string,
    sizes: readonly number[],
    firstTimes: readonly string[],
    blocks: ReadonlyArray<string | null>,
    out: string,
    createdBy: string,
    rowGroupBytes?: number,
  ): Promise<number | null>;
  /** A group object's file written, fsynced, its link count read and closed on one libuv thread (group-write.cc). */
  writeSynced(fd: number, parts: readonly Uint8Array[]): Promise<number>;
  /** '' when a thread of this process may lower its priority to `nice`, else why not. */
  threadPriorityProblem(nice: number): string;
  /** Runs `SET threads = <threads>` from a thread at `nice`, whose background threads inherit it: '' or the error. */
  setThreadsAtPriority(connection: unknown, threads: number, nice: number): string;
}

/** The error a DuckDB result ended with: its type as duckdb.h numbers it (duckdb_error_type), and its message. */
export interface ResultFailure {
  readonly type: number;
  readonly message: string;
}

/** A source of record batches; `next` resolves to null after the last one. */
export interface BatchSource {
  next(): Promise<RecordBatch | null>;
  /**
   * Has a pending `next` settle at DuckDB's next chunk (with the end) rather than once its batch is full (up to the
   * batch's bytes of rows), without interrupting DuckDB; absent when the source cannot.
   */
  stop?(): void;
  /** Releases what the source holds; only when no `next` is pending. */
  close(): void;
}

let loaded: NativeModule | null | undefined;
let loadError = '';

/** The native module, or null when it is not built for this platform (the reason is in `nativeExportProblem`). */
export function nativeExportModule(): NativeModule | null {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)('../../native/arrow_export.node') as NativeModule;
  } catch (error) {
    loaded = null;
    loadError = error instanceof Error ? error.message : String(error);
  }
  return loaded;
}

/** Why the native exporter is unavailable, or '' when it is loaded. */
export function nativeExportProblem(): string {
  nativeExportModule();
  return loadError;
}

/** The native validating scan of OTLP logs protobuf bodies, or null when the addon is not loaded. */
export function nativeLogsScan(): ((body: Uint8Array) => Float64Array | null) | null {
  const module = nativeExportModule();
  return module ? (body) => module.scanLogs(body) : null;
}

/** The native seal of OTLP logs protobuf bodies (scan, sha256, brotli off the event loop), or null when not available. */
export function nativeLogsSeal(): NativeModule['sealLogs'] | null {
  const module = nativeExportModule();
  return module?.sealLogs ? (body, compress) => module.sealLogs!(body, compress) : null;
}

/** The native seal of OTLP/JSON logs bodies (transcoded to protobuf, then sealed), or null when not available. */
export function nativeJsonLogsSeal(): NativeModule['sealJsonLogs'] | null {
  const module = nativeExportModule();
  return module?.sealJsonLogs ? (body) => module.sealJsonLogs!(body) : null;
}

/**
 * Registers the OTLP logs payload table function (native/otlp-logs-table.cc) in the connection's database:
 * `__orrery_otlp_logs(paths)` decodes logs payloads stored as received, read from files under `root` only,
 * into the columns read_json gives from their NDJSON lines.
 */
export function registerNativeOtlpLogs(connection: DuckDBConnection, root: string): void {
  const module = nativeExportModule();
  if (!module) throw new Error(`the native OTLP logs decoder is not available: ${loadError}`);
  module.registerOtlpLogsTable(connectionHandle(connection), root);
}

/**
 * A stored logs payload's content (decompressed on a libuv worker thread) when it is protobuf, which
 * __orrery_otlp_logs reads; null for NDJSON, an empty payload or one that cannot be decompressed. Null when
 * the addon is not loaded.
 */
export function nativeLogsPayloads(): ((payload: Uint8Array) => Promise<Uint8Array | null>) | null {
  const module = nativeExportModule();
  return module ? (payload) => module.storedLogsPayloadContent(payload) : null;
}

/** The native writer of log_entries partition files (see writeOrderedLogsPartition), or null when the addon is not loaded. */
export function nativeOrderedLogsWriter(): NativeModule['writeOrderedLogsPartition'] | null {
  const module = nativeExportModule();
  return module ? (...args) => module.writeOrderedLogsPartition(...args) : null;
}

/**
 * A commit group object's write, fsync, link count and close in one trip to libuv's thread pool
 * (native/group-write.cc, FileObjectStore's SyncedWrite), or null when the addon is not loaded.
 */
export function nativeSyncedWrite(): ((fd: number, parts: readonly Uint8Array[]) => Promise<number>) | null {
  const module = nativeExportModule();
  return module ? (fd, parts) => module.writeSynced(fd, parts) : null;
}

/** A protobuf body as a zstd payload, compressed synchronously (native/payload-zstd.cc), or null when the addon is not loaded. */
export function nativeZstdPayload(): ((content: Uint8Array) => Uint8Array | null) | null {
  const module = nativeExportModule();
  return module ? (content) => module.zstdPayload(content) : null;
}

/**
 * The content of a protobuf payload's zstd frame that holds `size` bytes (the codec native/payload-zstd.cc shares with
 * the seal and the materializer's decoder), decompressed synchronously; throws when the frame is damaged or when the
 * addon is not loaded (only a server with it stores such payloads).
 */
export function nativeZstdContent(stream: Uint8Array, size: number): Uint8Array {
  const module = nativeExportModule();
  if (!module) throw new Error(`a zstd payload needs the native addon, which is not available: ${loadError}`);
  return module.zstdContent(stream, size);
}

/** A connection's handle as @duckdb/node-bindings holds it (an External over duckdb_connection). */
export function connectionHandle(connection: DuckDBConnection): unknown {
  return (connection as unknown as { connection: unknown }).connection;
}

/** What the native sketch aggregates take from the sketch macros (views' nativeSketchParameters). */
export interface NativeSketchParameters {
  /** 1 / ln(gamma) of the percentile sketches' log buckets. */
  readonly inverseLogGamma: number;
}

/**
 * Registers the native sketch aggregates (native/sketch-aggregates.cc) in the connection's
 * database, for every connection of it; sketchStatements(true) needs them. Their states, held
 * outside DuckDB's buffer manager, may take at most `memoryLimitBytes` (the database's
 * memory_limit) together: a query that would take more fails (QUERY_OUT_OF_MEMORY).
 */
export function registerNativeSketches(
  connection: DuckDBConnection,
  parameters: NativeSketchParameters,
  memoryLimitBytes: number,
): void {
  const module = nativeExportModule();
  if (!module) throw new Error(`the native sketch aggregates are not available: ${loadError}`);
  module.registerSketchFunctions(connectionHandle(connection), parameters.inverseLogGamma, memoryLimitBytes);
}

/**
 * The native addon's __orrery_tail_row and the calls around it (native/tail-rows.cc, RunOptions.tailReads): which
 * row of a rollup's ring of kept tails a statement reads, told to its connection without a statement. Null when the
 * addon is not loaded (reads then fill a temporary table, tail-values.ts).
 */
export function nativeTailRows(): Pick<
  NativeModule,
  'registerTailRowFunction' | 'setTailReads' | 'forgetTailReads' | 'tailRingMade' | 'tailRowGone' | 'forgetTailRing'
> | null {
  return nativeExportModule();
}

/**
 * The error a streaming result ended with, or null. @duckdb/node-api's fetchChunk answers a
 * failure midway like the end of the result. The C API's duckdb_result_error tells them apart,
 * with DuckDB's message, through the native module (when `useNative`); @duckdb/node-bindings does
 * not expose it, but its result_return_type answers INVALID once the result holds an error
 * (duckdb_result_return_type checks duckdb_result_error), so without the native module the failure
 * is still seen, only without DuckDB's reason. `rows` is how many rows were fetched before the end.
 */
export function resultError(result: DuckDBResult, rows: number, useNative: boolean): ResultFailure | null {
  const failure = useNative ? nativeExportModule()?.resultError(resultHandle(result)) : null;
  if (failure) return failure;
  if (result.returnType !== ResultReturnType.INVALID) return null;
  // DuckDB's error type is unknown here too (-1): the engine answers it as the query's error.
  const message = `the query failed after ${rows} row(s); DuckDB gives its reason only to the native Arrow exporter, which this server runs without`;
  return { type: -1, message };
}

/** The result's handle as @duckdb/node-bindings holds it (an External over duckdb_result*). */
function resultHandle(result: DuckDBResult): unknown {
  return (result as unknown as { result: unknown }).result;
}

/** The prepared statement's handle as @duckdb/node-bindings holds it (an External over its holder). */
function preparedHandle(prepared: DuckDBPreparedStatement): unknown {
  return (prepared as unknown as { prepared_statement: unknown }).prepared_statement;
}

/** [kind, parameter] of a column the native exporter fills, or null when it cannot. */
function nativeKind(type: DuckDBType, arrow: DataType): [Kind, number] | null {
  const id = type.typeId;
  const width = fixedWidths[id];
  if (width !== undefined) return [Kind.Fixed, width];
  const factor = timestampFactors[id];
  if (factor !== undefined) return factor === 1n ? [Kind.Fixed, 8] : [Kind.Scaled, Number(factor)];
  switch (id) {
    case DuckDBTypeId.BOOLEAN:
      return [Kind.Bool, 0];
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.DECIMAL:
      return [Kind.Decimal128, decimalStorageWidth(type)];
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.BLOB:
      return DataType.isUtf8(arrow) || DataType.isBinary(arrow) ? [Kind.Binary, 0] : null;
    default:
      return null;
  }
}

/** Arrow's utf8 and binary offsets are int32: the most string bytes one column of a batch may hold. */
const maxOffset = 2 ** 31 - 1;

/**
 * Batches of a streaming DuckDB result filled by the native exporter, or null when the
 * module is missing or a column type is not one it fills. The result must stay open (and
 * its connection too) until the source is closed. A batch is cut before its string bytes
 * in a column pass `maxBinaryBytes` (default and most: what int32 offsets reach).
 */
export function nativeBatches(
  result: DuckDBResult,
  schema: Schema,
  types: readonly DuckDBType[],
  batchBytes: number,
  maxBinaryBytes = maxOffset,
): BatchSource | null {
  return exporterBatches(resultHandle(result), undefined, schema, types, batchBytes, maxBinaryBytes);
}

/**
 * Batches of a prepared statement without parameters that the native exporter runs itself (see
 * nativeBatches): the statement's run and its first batch take one trip to a worker thread rather
 * than two (#10). Null when nativeBatches would be. The statement must not be destroyed, nor its
 * connection used for anything else, until the source is closed.
 */
export function nativeStatementBatches(
  prepared: DuckDBPreparedStatement,
  schema: Schema,
  types: readonly DuckDBType[],
  batchBytes: number,
  /** > 0: the statement runs on a thread of its own at this nice value (see lowPriorityProblem). */
  nice = 0,
  /** A statement run on the statement's connection just before it, in the same trip (RunOptions.fill). */
  fill?: { readonly connection: DuckDBConnection; readonly sql: string },
): BatchSource | null {
  const typeIds = Int32Array.from(types, (type) => type.typeId);
  const filled = fill ? { connection: connectionHandle(fill.connection), sql: fill.sql } : undefined;
  return exporterBatches(preparedHandle(prepared), typeIds, schema, types, batchBytes, maxOffset, nice, filled);
}

/**
 * Why this process cannot run DuckDB work on threads at `nice` (the native module missing, or
 * setpriority refused), or '' when it can.
 */
export function lowPriorityProblem(nice: number): string {
  const module = nativeExportModule();
  if (!module) return `the native addon is not loaded (${loadError.split('\n')[0]})`;
  const problem = module.threadPriorityProblem(nice);
  return problem && `setpriority failed: ${problem}`;
}

/**
 * Sets the DuckDB instance's threads (`SET threads`) from a thread at `nice`, so that its
 * background threads start at that nice value; the connection is the instance's, its
 * configuration not yet locked. Throws DuckDB's error.
 */
export function setThreadsAtPriority(connection: DuckDBConnection, threads: number, nice: number): void {
  const module = nativeExportModule();
  if (!module) throw new Error(`the native addon is not loaded: ${loadError}`);
  const error = module.setThreadsAtPriority(connectionHandle(connection), threads, nice);
  if (error) throw new Error(error);
}

function exporterBatches(
  source: unknown,
  typeIds: Int32Array | undefined,
  schema: Schema,
  types: readonly DuckDBType[],
  batchBytes: number,
  maxBinaryBytes: number,
  nice = 0,
  fill?: { readonly connection: unknown; readonly sql: string },
): BatchSource | null {
  const module = nativeExportModule();
  if (!module) return null;
  const kinds = types.map((type, i) => nativeKind(type, schema.fields[i].type));
  if (kinds.some((k) => k === null)) return null;
  const layouts = Int32Array.from(kinds.flatMap((k) => k!));
  const exporter = !typeIds
    ? new module.Exporter(source, layouts, batchBytes, maxBinaryBytes)
    : fill
      ? new module.Exporter(source, layouts, batchBytes, maxBinaryBytes, typeIds, nice, fill.connection, fill.sql)
      : new module.Exporter(source, layouts, batchBytes, maxBinaryBytes, typeIds, nice);
  const structType = new Struct(schema.fields);
  return {
    async next() {
      const batch = await exporter.next().catch((error: Error & { errorType?: number }) => {
        if (typeof error.errorType !== 'number') throw error;
        // -1: a statement that failed before its result existed, whose message alone (which names the type) DuckDB gives.
        const type = error.errorType >= 0 ? error.errorType : duckdbErrorType(error);
        throw new DuckDBResultFailure(type, error.message);
      });
      if (!batch) return null;
      let at = 0;
      let part = 0;
      const children = schema.fields.map((field, i) => {
        const kind = kinds[i]![0];
        const nullCount = batch.layout[at++];
        const buffers: Part[] = [];
        for (let b = 0; b < (kind === Kind.Binary ? 3 : 2); b++)
          buffers.push({ bytes: batch.buffers[part++], length: batch.layout[at++] });
        return columnData(field.type, kind, batch.rows, nullCount, buffers);
      });
      return new RecordBatch(schema, makeData({ type: structType, length: batch.rows, nullCount: 0, children }));
    },
    stop: () => exporter.stop(),
    close: () => exporter.close(),
  };
}

/** One of a column's buffers: its memory (null when empty) and its length before the padding. */
interface Part {
  bytes: ArrayBuffer | null;
  length: number;
}

const noBytes = new ArrayBuffer(0);

/** Views over one column's buffers; bitmaps span their padding, as an IPC writer would send them. */
function columnData(type: DataType, kind: Kind, length: number, nullCount: number, buffers: Part[]): Data {
  const bitmap = ({ bytes, length }: Part): Uint8Array => new Uint8Array(bytes!, 0, (length + 7) & ~7);
  const view = <T>(
    Type: new (buffer: ArrayBuffer, offset: number, length: number) => T,
    { bytes, length }: Part,
    width: number,
  ): T => new Type(bytes ?? noBytes, 0, length / width);
  const common = { type: type as never, length, nullCount, nullBitmap: nullCount > 0 ? bitmap(buffers[0]) : undefined };
  switch (kind) {
    case Kind.Binary:
      return makeData({
        ...common,
        valueOffsets: view(Int32Array, buffers[1], 4),
        data: view(Uint8Array, buffers[2], 1),
      } as never);
    case Kind.Bool:
      return makeData({ ...common, data: bitmap(buffers[1]) } as never);
    default: {
      const ArrayType = (
        type as unknown as {
          ArrayType: { new (b: ArrayBuffer, o: number, l: number): ArrayBufferView; BYTES_PER_ELEMENT: number };
        }
      ).ArrayType;
      return makeData({ ...common, data: view(ArrayType, buffers[1], ArrayType.BYTES_PER_ELEMENT) } as never);
    }
  }
}
