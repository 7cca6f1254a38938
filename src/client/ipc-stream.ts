import { RecordBatchReader, type RecordBatch, type Schema } from 'apache-arrow';
import type { FlightData } from './flight-protocol.js';

// Flight carries an Arrow IPC stream one message per FlightData, without the stream framing.
// These helpers put the framing back so apache-arrow's stream reader can decode it.

const pad8 = (n: number): number => (n + 7) & ~7;
const endOfStream = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

/** One FlightData as an encapsulated IPC message: marker, padded length, header, padding, body, padding. */
export function frameMessage(data: FlightData): Uint8Array {
  const headerLength = pad8(data.dataHeader.byteLength);
  const out = new Uint8Array(8 + headerLength + pad8(data.dataBody.byteLength));
  const view = new DataView(out.buffer);
  view.setInt32(0, -1, true);
  view.setInt32(4, headerLength, true);
  out.set(data.dataHeader, 8);
  out.set(data.dataBody, 8 + headerLength);
  return out;
}

async function* ipcStream(messages: AsyncIterable<FlightData>): AsyncGenerator<Uint8Array> {
  for await (const data of messages) {
    if (data.dataHeader.byteLength > 0) yield frameMessage(data);
  }
  yield endOfStream;
}

/**
 * The record batches of a DoGet stream, decoded as they arrive. The stream's schema is set on
 * `onSchema` before the first batch (also when there are no batches).
 */
export async function* decodeBatches(messages: AsyncGenerator<FlightData>, onSchema: (schema: Schema) => void): AsyncGenerator<RecordBatch> {
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

/** The schema in FlightInfo.schema or SchemaResult.schema (an encapsulated IPC schema message). */
export function decodeSchema(bytes: Uint8Array): Schema | undefined {
  if (bytes.byteLength === 0) return undefined;
  const prefixed = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(0, true) === -1;
  const header = prefixed ? bytes.subarray(8) : bytes;
  const framed = frameMessage({ dataHeader: header, dataBody: new Uint8Array(0) });
  const stream = new Uint8Array(framed.byteLength + endOfStream.byteLength);
  stream.set(framed);
  stream.set(endOfStream, framed.byteLength);
  const reader = RecordBatchReader.from(stream);
  reader.open();
  return reader.schema;
}
