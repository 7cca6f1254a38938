import type { IpcMessage } from './ipc.js';

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

/**
 * Serialises one IPC message as a FlightData protobuf. A body that lies after free room is
 * framed in place: the fields before it are written into the room and the body is not copied.
 */
export function encodeFlightData(message: IpcMessage): Buffer {
  const { header, bodyLength, inPlace } = message;
  const prefix = 1 + varintLength(header.byteLength) + header.byteLength + (bodyLength > 0 ? 2 + varintLength(bodyLength) : 0);
  const start = inPlace ? inPlace.bodyStart - prefix : -1;
  const out = start >= 0 ? Buffer.from(inPlace!.buffer, start, prefix + bodyLength) : Buffer.allocUnsafe(prefix + bodyLength);
  let offset = 0;
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
