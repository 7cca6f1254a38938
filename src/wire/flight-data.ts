import type { IpcMessage } from './ipc.js';
import { Flight } from './proto.js';

/** One FlightData message as decoded from the wire: flatbuffer IPC header (no prefix) and body. */
export interface FlightData {
  readonly dataHeader: Uint8Array;
  readonly dataBody: Uint8Array;
  readonly appMetadata?: Uint8Array;
  /** Set on the first message of a DoPut or DoExchange. */
  readonly flightDescriptor?: { readonly type?: number; readonly cmd?: Uint8Array; readonly path?: string[] };
}

// FlightData is written by hand rather than through protobufjs: it is the one message on
// the hot path, and this way the body is copied once, straight into the outgoing buffer.
// Fields: 2 data_header (tag 0x12), 1000 data_body (tag 0xC2 0x3E), both length-delimited.

function varintLength(n: number): number {
  let length = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    length++;
  }
  return length;
}

function writeVarint(out: Buffer, offset: number, n: number): number {
  while (n >= 0x80) {
    out[offset++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[offset++] = n;
  return offset;
}

/** Bytes of gRPC's own framing in front of each message: a compressed flag and the length (uint32, big-endian). */
const grpcPrefixBytes = 5;

/**
 * Serialises one IPC message as a FlightData protobuf. A body that lies after free room is
 * framed in place: the fields before it are written into the room and the body is not copied.
 * With `grpcPrefix`, gRPC's message prefix (uncompressed, the length) comes first, so that the
 * bytes can go to HTTP/2 as they are (see flight/framed-writes).
 */
export function encodeFlightData(message: IpcMessage, grpcPrefix = false): Buffer {
  const { header, bodyLength, inPlace } = message;
  const fields =
    1 + varintLength(header.byteLength) + header.byteLength + (bodyLength > 0 ? 2 + varintLength(bodyLength) : 0);
  const prefix = fields + (grpcPrefix ? grpcPrefixBytes : 0);
  const start = inPlace ? inPlace.bodyStart - prefix : -1;
  const out =
    start >= 0 ? Buffer.from(inPlace!.buffer, start, prefix + bodyLength) : Buffer.allocUnsafe(prefix + bodyLength);
  let offset = 0;
  if (grpcPrefix) {
    out[offset++] = 0;
    out.writeUInt32BE(fields + bodyLength, offset);
    offset += 4;
  }
  out[offset++] = 0x12;
  offset = writeVarint(out, offset, header.byteLength);
  out.set(header, offset);
  offset += header.byteLength;
  if (bodyLength === 0) return out;
  out[offset++] = 0xc2;
  out[offset++] = 0x3e;
  offset = writeVarint(out, offset, bodyLength);
  if (start >= 0) return out;
  for (const part of message.body) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/** Reads FlightData bytes as the service's deserializer does (absent fields as empty bytes). */
export function decodeFlightData(bytes: Uint8Array): FlightData {
  const data = Flight.FlightData.toObject(Flight.FlightData.decode(bytes), {
    longs: Number,
    defaults: false,
  }) as Partial<FlightData>;
  return { ...data, dataHeader: data.dataHeader ?? new Uint8Array(0), dataBody: data.dataBody ?? new Uint8Array(0) };
}
