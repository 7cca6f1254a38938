import {
  RecordBatch,
  RecordBatchReader,
  Table,
  type AsyncRecordBatchStreamReader,
  type Data,
  type Schema,
} from 'apache-arrow';
import { DictionaryBatchHeader, Message, RecordBatchHeader, VectorAssembler } from './arrow-internals.js';
import type { FlightData } from './flight-data.js';

// Flight carries an Arrow IPC stream one message per FlightData, without the stream framing
// (continuation marker, length, padding, end-of-stream). Writing, messages are made from
// batches directly; reading, the framing is put back so apache-arrow's reader can decode it.

/** One IPC message to send: flatbuffer header (no prefix) and body. */
export interface IpcMessage {
  readonly header: Uint8Array;
  /** Body buffers, each padded to 8 bytes; concatenated they are `data_body`. */
  readonly body: Uint8Array[];
  readonly bodyLength: number;
}

const pad8 = (n: number): number => (n + 7) & ~7;
const endOfStream = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

/** Encoded schemas: a statement's schema object is sent twice (GetFlightInfo, DoGet), and again for each run of its plan. */
const schemaHeaders = new WeakMap<Schema, Uint8Array>();

/** The unprefixed flatbuffer Message of a schema. */
export function schemaHeader(schema: Schema): Uint8Array {
  let header = schemaHeaders.get(schema);
  if (!header) {
    header = Message.encode(Message.from(schema));
    schemaHeaders.set(schema, header);
  }
  return header;
}

/**
 * A schema in the encapsulated IPC form used by FlightInfo.schema, SchemaResult and
 * prepared-statement results: continuation marker, padded length, Message, padding.
 */
export function encapsulateSchema(schema: Schema): Uint8Array {
  let framed = encapsulatedSchemas.get(schema);
  if (!framed) {
    framed = frameMessage({ dataHeader: schemaHeader(schema), dataBody: new Uint8Array(0) });
    encapsulatedSchemas.set(schema, framed);
  }
  return framed;
}

/**
 * Encapsulated schemas, as schemaHeaders: a JDBC statement's schema goes out at its CreatePreparedStatement and its
 * GetFlightInfo. Only ever read (protobufjs copies a bytes field into the message it encodes).
 */
const encapsulatedSchemas = new WeakMap<Schema, Uint8Array>();

/** Reads an encapsulated schema (continuation marker optional, a trailing end-of-stream tolerated). */
export function decodeSchema(bytes: Uint8Array): Schema {
  if (bytes.byteLength < 8) throw new Error(`not an encapsulated IPC schema (${bytes.byteLength} bytes)`);
  const prefixed =
    bytes.byteLength >= 4 && new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(0, true) === -1;
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(prefixed ? 4 : 0, true);
  const start = prefixed ? 8 : 4;
  return tableFromFlightData([{ dataHeader: bytes.subarray(start, start + length), dataBody: new Uint8Array(0) }])!
    .schema;
}

/** The IPC messages of one record batch: its dictionaries first (when not sent before), then itself. */
export function recordBatchMessages(batch: RecordBatch, sentDictionaries: Map<number, Data>): IpcMessage[] {
  const messages: IpcMessage[] = [];
  for (const [id, dictionary] of batch.dictionaries) {
    if (sentDictionaries.get(id) === dictionary.data[0]) continue;
    const assembled = VectorAssembler.assemble(dictionary);
    const header = new RecordBatchHeader(dictionary.length, assembled.nodes, assembled.bufferRegions, null);
    const message = Message.from(new DictionaryBatchHeader(header, id, false), assembled.byteLength);
    messages.push({
      header: Message.encode(message),
      body: padBuffers(assembled.buffers),
      bodyLength: assembled.byteLength,
    });
    sentDictionaries.set(id, dictionary.data[0]);
  }
  const assembled = VectorAssembler.assemble(batch);
  const header = new RecordBatchHeader(batch.numRows, assembled.nodes, assembled.bufferRegions, null);
  const message = Message.from(header, assembled.byteLength);
  messages.push({
    header: Message.encode(message),
    body: padBuffers(assembled.buffers),
    bodyLength: assembled.byteLength,
  });
  return messages;
}

/** The IPC body bytes of a batch: a slice's own rows' (its buffers are the whole batch's, shared). */
export const recordBatchBodyLength = (batch: RecordBatch): number => VectorAssembler.assemble(batch).byteLength;

function padBuffers(buffers: ArrayBufferView[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const buffer of buffers) {
    const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (bytes.byteLength === 0) continue;
    out.push(bytes);
    const padding = pad8(bytes.byteLength) - bytes.byteLength;
    if (padding > 0) out.push(zeros.subarray(0, padding));
  }
  return out;
}

/** Padding: only ever read (the body's parts are sent as they lie, see flight/framed-writes). */
const zeros = new Uint8Array(8);

/** The FlightData messages of a table as a client sends them to DoPut: the schema, then each batch. */
export function tableToFlightData(table: Table): FlightData[] {
  const out: FlightData[] = [{ dataHeader: schemaHeader(table.schema), dataBody: new Uint8Array(0) }];
  const sentDictionaries = new Map<number, Data>();
  for (const batch of table.batches) {
    for (const message of recordBatchMessages(batch, sentDictionaries)) {
      const dataBody = new Uint8Array(message.bodyLength);
      let offset = 0;
      for (const part of message.body) {
        dataBody.set(part, offset);
        offset += part.byteLength;
      }
      out.push({ dataHeader: message.header, dataBody });
    }
  }
  return out;
}

/** One FlightData as an encapsulated IPC message: marker, padded length, header, padding, body, padding. */
export function frameMessage(data: FlightData): Uint8Array {
  const out = new Uint8Array(framedLength(data));
  writeFramed(out, 0, data);
  return out;
}

const framedLength = (data: FlightData): number =>
  8 + pad8(data.dataHeader.byteLength) + pad8(data.dataBody.byteLength);

function writeFramed(out: Uint8Array, offset: number, data: FlightData): number {
  const headerLength = pad8(data.dataHeader.byteLength);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  view.setInt32(offset, -1, true);
  view.setInt32(offset + 4, headerLength, true);
  out.set(data.dataHeader, offset + 8);
  out.set(data.dataBody, offset + 8 + headerLength);
  return offset + framedLength(data);
}

/**
 * The table of a whole sequence of FlightData (schema first), decoded at once; null when there is
 * none. The bytes are copied into one fresh buffer: gRPC buffers may be misaligned, and arrow-js
 * views typed arrays in place.
 */
export function tableFromFlightData(messages: readonly FlightData[]): Table | null {
  const withHeaders = messages.filter((m) => m.dataHeader.byteLength > 0);
  if (withHeaders.length === 0) return null;
  const out = new Uint8Array(withHeaders.reduce((size, m) => size + framedLength(m), endOfStream.byteLength));
  let offset = 0;
  for (const message of withHeaders) offset = writeFramed(out, offset, message);
  out.set(endOfStream, offset);
  const reader = RecordBatchReader.from(out);
  reader.open();
  return new Table(reader.schema, [...reader] as RecordBatch[]);
}

async function* ipcStream(messages: AsyncIterable<FlightData>): AsyncGenerator<Uint8Array> {
  for await (const data of messages) {
    if (data.dataHeader.byteLength > 0) {
      yield frameMessage(data);
      // apache-arrow's byte reader hands on a read that ends exactly where its chunks end only after
      // pulling one more chunk: without this empty one, each batch waited for the next message, and the
      // last one before an error (a procedure's last progress line) was lost with it.
      yield noBytes;
    }
  }
  yield endOfStream;
}

const noBytes = new Uint8Array(0);

/**
 * The record batches of a stream of FlightData (a DoGet), decoded as they arrive. The stream's
 * schema is passed to `onSchema` before the first batch (also when there are no batches).
 */
export async function* decodeBatches(
  messages: AsyncGenerator<FlightData>,
  onSchema: (schema: Schema) => void,
): AsyncGenerator<RecordBatch> {
  try {
    const reader = await RecordBatchReader.from(ipcStream(messages));
    await reader.open();
    if (reader.schema) onSchema(reader.schema);
    for await (const batch of reader) yield batch;
  } finally {
    // The reader does not pass an early stop on to its source: end the messages (the call) here.
    await messages.return(undefined);
  }
}

/**
 * Reads a stream of FlightData as it arrives (DoPut ingest): the schema, then batches one at a
 * time, each message copied into an aligned buffer of its own. Null when the stream has no schema.
 * `fail` makes the error for a malformed message.
 */
export async function readFlightDataStream(
  messages: AsyncIterable<FlightData>,
  fail: (message: string) => Error,
): Promise<{ schema: Schema; batches: AsyncIterable<RecordBatch> } | null> {
  let reader: AsyncRecordBatchStreamReader;
  try {
    reader = (await RecordBatchReader.from(ipcStream(messages))) as AsyncRecordBatchStreamReader;
    await reader.open();
  } catch (error) {
    throw fail(`the Arrow stream cannot be read: ${(error as Error).message}`);
  }
  if (reader.closed || !reader.schema) return null;
  async function* batches(): AsyncGenerator<RecordBatch> {
    try {
      for await (const batch of reader) yield batch as RecordBatch;
    } catch (error) {
      throw fail(`the Arrow stream cannot be read: ${(error as Error).message}`);
    }
  }
  return { schema: reader.schema, batches: batches() };
}
