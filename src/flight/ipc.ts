import { RecordBatch, RecordBatchReader, Table, type AsyncRecordBatchStreamReader, type Data, type Schema } from 'apache-arrow';
import { invalidArgument } from './errors.js';
import {
  DictionaryBatch as DictionaryBatchHeader,
  Message,
  RecordBatch as RecordBatchHeader,
} from 'apache-arrow/ipc/metadata/message';
import { VectorAssembler } from 'apache-arrow/visitor/vectorassembler';
import { bodyInPlace } from '../arrow/index.js';

/** One IPC message as Flight carries it: flatbuffer header (no prefix) and body. */
export interface IpcMessage {
  readonly header: Uint8Array;
  /** Body buffers, each padded to 8 bytes; concatenated they are `data_body`. */
  readonly body: Uint8Array[];
  readonly bodyLength: number;
  /** Set when the body already lies contiguous after free room in one buffer (see arrow/framing-room). */
  readonly inPlace?: { readonly buffer: ArrayBufferLike; readonly bodyStart: number };
}

/** The unprefixed flatbuffer Message of a schema. */
export function schemaHeader(schema: Schema): Uint8Array {
  return Message.encode(Message.from(schema));
}

/**
 * A schema in the encapsulated IPC form used by FlightInfo.schema, SchemaResult and
 * prepared-statement results: continuation marker, padded length, Message, padding.
 */
export function encapsulateSchema(schema: Schema): Uint8Array {
  const header = schemaHeader(schema);
  const padded = (header.byteLength + 7) & ~7;
  const out = new Uint8Array(8 + padded);
  const view = new DataView(out.buffer);
  view.setInt32(0, -1, true);
  view.setInt32(4, padded, true);
  out.set(header, 8);
  return out;
}

/** Reads an encapsulated schema (marker optional, trailing EOS tolerated). */
export function decodeSchema(bytes: Uint8Array): Schema {
  const reader = RecordBatchReader.from(withEos(copyAligned(bytes)));
  reader.open();
  return reader.schema;
}

/** The IPC messages of one record batch: its dictionaries first (when it has any), then itself. */
export function recordBatchMessages(batch: RecordBatch, sentDictionaries: Map<number, Data>): IpcMessage[] {
  const messages: IpcMessage[] = [];
  for (const [id, dictionary] of batch.dictionaries) {
    if (sentDictionaries.get(id) === dictionary.data[0]) continue;
    const assembled = VectorAssembler.assemble(dictionary);
    const header = new RecordBatchHeader(dictionary.length, assembled.nodes, assembled.bufferRegions, null);
    const message = Message.from(new DictionaryBatchHeader(header, id, false), assembled.byteLength);
    messages.push({ header: Message.encode(message), body: padBuffers(assembled.buffers), bodyLength: assembled.byteLength });
    sentDictionaries.set(id, dictionary.data[0]);
  }
  const assembled = VectorAssembler.assemble(batch);
  const header = new RecordBatchHeader(batch.numRows, assembled.nodes, assembled.bufferRegions, null);
  const message = Message.from(header, assembled.byteLength);
  const inPlace = bodyInPlace(assembled.buffers, assembled.bufferRegions, assembled.byteLength) ?? undefined;
  messages.push({
    header: Message.encode(message),
    body: padBuffers(assembled.buffers),
    bodyLength: assembled.byteLength,
    inPlace,
  });
  return messages;
}

function padBuffers(buffers: ArrayBufferView[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const buffer of buffers) {
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (bytes.byteLength === 0) continue;
    out.push(bytes);
    const padding = ((bytes.byteLength + 7) & ~7) - bytes.byteLength;
    if (padding > 0) out.push(new Uint8Array(padding));
  }
  return out;
}

/**
 * Rebuilds an IPC stream from the (header, body) pairs of DoPut FlightData and reads it.
 * The bytes are copied into one fresh buffer: gRPC buffers may be misaligned, and
 * arrow-js views typed arrays in place.
 */
export function readIpcMessages(messages: ReadonlyArray<{ header: Uint8Array; body: Uint8Array }>): Table | null {
  if (messages.length === 0) return null;
  let size = 8;
  for (const m of messages) size += 8 + pad8(m.header.byteLength) + pad8(m.body.byteLength);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const m of messages) {
    const headerLength = pad8(m.header.byteLength);
    view.setInt32(offset, -1, true);
    view.setInt32(offset + 4, headerLength, true);
    out.set(m.header, offset + 8);
    offset += 8 + headerLength;
    out.set(m.body, offset);
    offset += pad8(m.body.byteLength);
  }
  view.setInt32(offset, -1, true);
  view.setInt32(offset + 4, 0, true);
  const reader = RecordBatchReader.from(out);
  reader.open();
  const batches = [...reader] as RecordBatch[];
  return new Table(reader.schema, batches);
}

const pad8 = (n: number): number => (n + 7) & ~7;

/**
 * Reads an IPC stream as its (header, body) pairs arrive: the schema, then batches one at a time,
 * each message copied into an aligned buffer of its own. Null when the stream has no schema.
 * Malformed messages are INVALID_ARGUMENT.
 */
export async function readIpcStream(
  messages: AsyncIterable<{ header: Uint8Array; body: Uint8Array }>,
): Promise<{ schema: Schema; batches: AsyncIterable<RecordBatch> } | null> {
  async function* bytes(): AsyncGenerator<Uint8Array> {
    for await (const m of messages) {
      const headerLength = pad8(m.header.byteLength);
      const out = new Uint8Array(8 + headerLength + pad8(m.body.byteLength));
      const view = new DataView(out.buffer);
      view.setInt32(0, -1, true);
      view.setInt32(4, headerLength, true);
      out.set(m.header, 8);
      out.set(m.body, 8 + headerLength);
      yield out;
    }
    yield new Uint8Array([255, 255, 255, 255, 0, 0, 0, 0]);
  }
  let reader: AsyncRecordBatchStreamReader;
  try {
    reader = (await RecordBatchReader.from(bytes())) as AsyncRecordBatchStreamReader;
    await reader.open();
  } catch (error) {
    throw invalidArgument(`the Arrow stream cannot be read: ${(error as Error).message}`);
  }
  if (reader.closed || !reader.schema) return null;
  async function* batches(): AsyncGenerator<RecordBatch> {
    try {
      for await (const batch of reader) yield batch as RecordBatch;
    } catch (error) {
      throw invalidArgument(`the Arrow stream cannot be read: ${(error as Error).message}`);
    }
  }
  return { schema: reader.schema, batches: batches() };
}

function copyAligned(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.byteLength);
  out.set(bytes);
  return out;
}

function withEos(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.byteLength + 8);
  out.set(bytes);
  new DataView(out.buffer).setInt32(bytes.byteLength, -1, true);
  return out;
}
