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
// the hot path, and this way the body is copied once at most, straight into the outgoing buffer.
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

/** Bytes of a FlightData before its body's bytes: data_header, then data_body's tag and length. */
function fieldsLength({ header, bodyLength }: IpcMessage): number {
  return 1 + varintLength(header.byteLength) + header.byteLength + (bodyLength > 0 ? 2 + varintLength(bodyLength) : 0);
}

/** Writes the bytes fieldsLength counts at `offset`; answers where the body's bytes go. */
function writeFields(out: Buffer, offset: number, { header, bodyLength }: IpcMessage): number {
  out[offset++] = 0x12;
  offset = writeVarint(out, offset, header.byteLength);
  out.set(header, offset);
  offset += header.byteLength;
  if (bodyLength === 0) return offset;
  out[offset++] = 0xc2;
  out[offset++] = 0x3e;
  return writeVarint(out, offset, bodyLength);
}

/** Serialises one IPC message as a FlightData protobuf, in one buffer (the body copied into it). */
export function encodeFlightData(message: IpcMessage): Buffer {
  const out = Buffer.allocUnsafe(fieldsLength(message) + message.bodyLength);
  let offset = writeFields(out, 0, message);
  for (const part of message.body) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

/** Bytes of gRPC's own framing in front of each message: a compressed flag and the length (uint32, big-endian). */
const grpcPrefixBytes = 5;

/**
 * One IPC message as a FlightData protobuf behind gRPC's message prefix (uncompressed, the length),
 * in parts to write one after another: `head`, the prefix and the fields before the body's bytes, then
 * the body's buffers as they lie, never copied (see flight/framed-writes).
 */
export function framedFlightData(message: IpcMessage): { head: Buffer; body: readonly Uint8Array[] } {
  const fields = fieldsLength(message);
  const head = Buffer.allocUnsafe(grpcPrefixBytes + fields);
  head[0] = 0;
  head.writeUInt32BE(fields + message.bodyLength, 1);
  writeFields(head, grpcPrefixBytes, message);
  return { head, body: message.body };
}

/** Reads FlightData bytes as the service's deserializer does (absent fields as empty bytes). */
export function decodeFlightData(bytes: Uint8Array): FlightData {
  const data = Flight.FlightData.toObject(Flight.FlightData.decode(bytes), {
    longs: Number,
    defaults: false,
  }) as Partial<FlightData>;
  return { ...data, dataHeader: data.dataHeader ?? new Uint8Array(0), dataBody: data.dataBody ?? new Uint8Array(0) };
}
