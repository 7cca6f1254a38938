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

/** Serialises one IPC message as a FlightData protobuf. */
export function encodeFlightData(message: IpcMessage): Buffer {
  const headerLength = message.header.byteLength;
  const bodyLength = message.body.reduce((sum, part) => sum + part.byteLength, 0);
  const size =
    1 + varintLength(headerLength) + headerLength + (bodyLength > 0 ? 2 + varintLength(bodyLength) + bodyLength : 0);
  const out = Buffer.allocUnsafe(size);
  let offset = 0;
  out[offset++] = 0x12;
  offset = writeVarint(out, offset, headerLength);
  out.set(message.header, offset);
  offset += headerLength;
  if (bodyLength > 0) {
    out[offset++] = 0xc2;
    out[offset++] = 0x3e;
    offset = writeVarint(out, offset, bodyLength);
    for (const part of message.body) {
      out.set(part, offset);
      offset += part.byteLength;
    }
  }
  return out;
}
