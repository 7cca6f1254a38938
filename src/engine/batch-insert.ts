import { randomBytes } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import { DataType, DateUnit, Precision, TimeUnit, type Data, type RecordBatch, type Schema } from 'apache-arrow';
import { appendBatch, stagingTypeOf } from './arrow-append.js';
import { OrreryError } from '../errors/index.js';
import { sqlError } from './errors.js';
import { connectionHandle, nativeExportModule, type NativeArrowIngest } from './native-export.js';

// A stream of Arrow record batches written by one INSERT ... SELECT (bulk ingest). With the native
// addon the batches reach DuckDB as an Arrow stream that one statement scans while they arrive;
// without it (or for a column type the addon does not take) they are appended to a temporary
// table and moved by the statement a million rows at a time.

/** Batches queued for DuckDB's scan before the sender waits (each is a client's batch, ~1-8 MiB). */
const queuedBatches = 4;
/** Rows staged in the temporary table before the statement moves them (the JavaScript path). */
const stagedRows = 1_000_000;

/** How the statement runs: `run(sql)` executes on the session's connection and answers the rows changed. */
export interface BatchInsert {
  readonly connection: DuckDBConnection;
  /** The catalog connections use by default. */
  readonly catalog: string;
  readonly native: boolean;
  run(sql: string): Promise<number>;
  /** Another connection to the same database, outside the caller's transaction; closed by `close()`. */
  connect(): Promise<{ readonly connection: DuckDBConnection; close(): void }>;
}

/** The in-memory databases that hold an ingest's stream are named from this (statements may not name them). */
export const ingestCatalogPrefix = '__orrery_ingest_';

/**
 * Runs `sqlFor(relation)`, an INSERT ... SELECT FROM `relation` (the stream's columns, by name),
 * over every batch of the stream; answers the rows it changed. The caller's transaction makes it
 * all or nothing: a failure, in DuckDB or in the stream, is thrown after DuckDB stopped reading.
 */
export async function insertBatches(
  target: BatchInsert,
  schema: Schema,
  batches: AsyncIterable<RecordBatch>,
  sqlFor: (relation: string) => string,
): Promise<number> {
  const formats = schema.fields.map((f) => arrowFormat(f.type as DataType));
  const module = target.native ? nativeExportModule() : null;
  if (module && formats.every((f) => f !== null)) {
    return streamed(target, module.ArrowIngest, schema, formats as string[], batches, sqlFor);
  }
  return staged(target, schema, batches, sqlFor);
}

type IngestClass = NonNullable<ReturnType<typeof nativeExportModule>>['ArrowIngest'];

async function streamed(
  target: BatchInsert,
  ArrowIngest: IngestClass,
  schema: Schema,
  formats: string[],
  batches: AsyncIterable<RecordBatch>,
  sqlFor: (relation: string) => string,
): Promise<number> {
  // duckdb_arrow_scan makes a view in its connection's default catalog, outside any transaction:
  // an in-memory database of this ingest's own, attached by a connection of its own, so the view
  // is no second database written by the caller's transaction, and is seen by it (a database
  // attached after a transaction began is new to it, unlike a view added to one it has read).
  const database = `${ingestCatalogPrefix}${randomBytes(6).toString('hex')}`;
  const own = await target.connect();
  const side = own.connection;
  let sink: NativeArrowIngest | undefined;
  let wake: () => void = () => {};
  try {
    await side.run(`ATTACH ':memory:' AS ${database}`);
    await side.run(`USE ${database}`);
    sink = new ArrowIngest(
      connectionHandle(side),
      'stream',
      formats,
      schema.fields.map((f) => f.name),
      queuedBatches,
      () => wake(),
    );
  } catch (error) {
    await side.run(`USE ${target.catalog}`).catch(() => {});
    await side.run(`DETACH DATABASE IF EXISTS ${database}`).catch(() => {});
    own.close();
    throw error instanceof OrreryError ? error : sqlError(error);
  }
  let statementEnded = false;
  const statement = target.run(sqlFor(`${database}.main.stream`)).finally(() => {
    statementEnded = true;
    wake();
  });
  const sending = (async () => {
    try {
      for await (const batch of batches) {
        if (statementEnded) return;
        if (batch.numRows === 0) continue;
        if (
          !sink.push(
            batch.numRows,
            batch.schema.fields.map((_, i) => columnBuffers(batch.getChildAt(i)!.data[0])),
          )
        ) {
          await new Promise<void>((resolve) => {
            wake = resolve;
            if (statementEnded) resolve();
          });
        }
      }
      sink.finish();
    } catch (error) {
      sink.fail(error instanceof Error ? error.message : String(error));
      throw error;
    }
  })();
  try {
    const [sent, inserted] = await Promise.allSettled([sending, statement]);
    // The stream's own failure (a malformed batch, a client gone) says more than DuckDB's report of it.
    if (sent.status === 'rejected') throw sent.reason;
    if (inserted.status === 'rejected') throw inserted.reason;
    return inserted.value;
  } finally {
    await side.run(`USE ${target.catalog}`).catch(() => {});
    await side.run(`DETACH DATABASE IF EXISTS ${database}`).catch(() => {});
    own.close();
    sink.close();
  }
}

async function staged(
  target: BatchInsert,
  schema: Schema,
  batches: AsyncIterable<RecordBatch>,
  sqlFor: (relation: string) => string,
): Promise<number> {
  const staging = `__ingest_${randomBytes(6).toString('hex')}`;
  const columns = schema.fields.map((f) => `"${f.name.replaceAll('"', '""')}" ${stagingTypeOf(f)}`).join(', ');
  await target.run(`CREATE TEMP TABLE ${staging} (${columns})`);
  try {
    const move = sqlFor(`temp.main.${staging}`);
    let rows = 0;
    let written = 0;
    const flush = async (): Promise<void> => {
      if (rows === 0) return;
      written += await target.run(move);
      await target.run(`DELETE FROM temp.main.${staging}`);
      rows = 0;
    };
    for await (const batch of batches) {
      if (batch.numRows === 0) continue;
      const appender = await target.connection.createAppender(staging, 'main', 'temp');
      try {
        appendBatch(appender, batch);
        appender.flushSync();
      } catch (error) {
        throw error instanceof OrreryError ? error : sqlError(error);
      } finally {
        appender.closeSync();
      }
      rows += batch.numRows;
      if (rows >= stagedRows) await flush();
    }
    await flush();
    return written;
  } finally {
    await target.run(`DROP TABLE IF EXISTS temp.main.${staging}`).catch(() => {});
  }
}

/**
 * The Arrow C data interface format of a column type the native ingest takes, or null: the flat
 * types (numbers, booleans, text, binary, dates, times, timestamps, decimals).
 */
export function arrowFormat(type: DataType): string | null {
  if (DataType.isInt(type)) {
    const letter = { 8: 'c', 16: 's', 32: 'i', 64: 'l' }[type.bitWidth];
    return letter ? (type.isSigned ? letter : letter.toUpperCase()) : null;
  }
  if (DataType.isFloat(type))
    return { [Precision.HALF]: 'e', [Precision.SINGLE]: 'f', [Precision.DOUBLE]: 'g' }[type.precision];
  if (DataType.isBool(type)) return 'b';
  if (DataType.isUtf8(type)) return 'u';
  if (DataType.isLargeUtf8(type)) return 'U';
  if (DataType.isBinary(type)) return 'z';
  if (DataType.isLargeBinary(type)) return 'Z';
  if (DataType.isDate(type)) return type.unit === DateUnit.DAY ? 'tdD' : 'tdm';
  if (DataType.isTime(type)) return `tt${unitLetter[type.unit]}`;
  if (DataType.isTimestamp(type)) return `ts${unitLetter[type.unit]}:${type.timezone ?? ''}`;
  if (DataType.isDecimal(type)) {
    return `d:${type.precision},${type.scale}${type.bitWidth === 128 ? '' : `,${type.bitWidth}`}`;
  }
  return null;
}

const unitLetter: Record<TimeUnit, string> = {
  [TimeUnit.SECOND]: 's',
  [TimeUnit.MILLISECOND]: 'm',
  [TimeUnit.MICROSECOND]: 'u',
  [TimeUnit.NANOSECOND]: 'n',
};

/**
 * [null count, offset, length, validity, ...buffers] of a column in the C data interface's
 * layout. Arrow JS slices value and offset buffers but keeps bitmaps whole with a bit offset; the
 * C interface has one offset for all, so a bitmap of sliced data is re-based to bit 0.
 */
function columnBuffers(data: Data): Array<number | Uint8Array | null> {
  const nullCount = data.nullCount;
  const bits = (bitmap: Uint8Array): Uint8Array =>
    data.offset === 0 ? bitmap : rebased(bitmap, data.offset, data.length);
  const validity = nullCount > 0 && data.nullBitmap ? bits(data.nullBitmap) : null;
  const bytes = (view: ArrayBufferView): Uint8Array => new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  const type = data.type as DataType;
  const head = [nullCount, 0, data.length, validity];
  if (DataType.isBool(type)) return [...head, bits(data.values as Uint8Array)];
  if (data.valueOffsets) return [...head, bytes(data.valueOffsets), bytes(data.values as ArrayBufferView)];
  return [...head, bytes(data.values as ArrayBufferView)];
}

/** `length` bits of `bitmap` from bit `offset`, starting at bit 0 of a new bitmap. */
function rebased(bitmap: Uint8Array, offset: number, length: number): Uint8Array {
  const out = new Uint8Array((length + 7) >> 3);
  for (let i = 0; i < length; i++) {
    const bit = offset + i;
    if (bitmap[bit >> 3] & (1 << (bit & 7))) out[i >> 3] |= 1 << (i & 7);
  }
  return out;
}
