import type * as grpc from '@grpc/grpc-js';
import { baseCallOf } from './grpc-call.js';

/**
 * grpc-js frames every message it sends into a new buffer (its 5-byte prefix, then a copy of the
 * message), and a FlightData message built in one buffer had its body copied into it first: for a
 * large result two copies of every byte sent, on the main thread, into freshly allocated memory
 * (a 10 M-row DoGet, ~350 MB: ~0.1 s of the main thread each, as many new pages to fault in and
 * more external memory for V8 to collect; #10 item 3). With framedWrites, a message the sender
 * framed itself (framedFlightData, then `framed`) goes to the Http2Stream as its head (gRPC's
 * prefix and the protobuf fields before the body's bytes) followed by the body's buffers as they
 * lie, written corked so that they leave in one writev; any other message is framed by grpc-js as
 * before. The write's callback, which lets grpc-js take the call's next message, is the last
 * part's: backpressure holds a message's whole body, as it held the one buffer. grpc-js's own send
 * limit would see the head only (the server turns it off and keeps its messages under its limit
 * itself, splitBatch).
 *
 * Uses grpc-js's own call (grpc-call.ts: its `serializeMessage`, and the Http2Stream it writes
 * with `write(message, callback)`); answers false, leaving the call as it was, when that is not
 * there: the sender must then send whole messages without the prefix.
 * test/flight/framed-writes checks it on the installed grpc-js.
 */
export function framedWrites(call: grpc.ServerWritableStream<unknown, unknown>): boolean {
  const inner = baseCallOf(call);
  if (!inner) return false;
  const stream = inner.stream as unknown as WrittenStream;
  const serializeMessage = inner.serializeMessage.bind(inner);
  inner.serializeMessage = (value) => (isFramed(value) ? value : serializeMessage(value));
  const write = stream.write.bind(stream);
  stream.write = (chunk, ...rest) => {
    const body = Buffer.isBuffer(chunk) ? bodies.get(chunk) : undefined;
    // Dropped at once: a head that lives on past a young-generation collection would otherwise keep its body's
    // memory (batches of the native exporter, given back to its pool when collected) until the next full one.
    if (body) bodies.delete(chunk as Buffer);
    if (!body?.length) return write(chunk, ...rest);
    stream.cork();
    try {
      write(chunk);
      for (let i = 0; i < body.length - 1; i++) write(body[i]);
      return write(body[body.length - 1], ...rest);
    } finally {
      stream.uncork();
    }
  };
  return true;
}

/** The body parts of each framed message, by its head. */
const bodies = new WeakMap<Buffer, readonly Uint8Array[]>();

/** Marks a message as framed for gRPC already (see framedWrites); answers its head, to write to the call. */
export function framed(message: { head: Buffer; body: readonly Uint8Array[] }): Buffer {
  bodies.set(message.head, message.body);
  return message.head;
}

function isFramed(value: unknown): value is Buffer {
  return Buffer.isBuffer(value) && bodies.has(value);
}

/** What framedWrites uses of the call's Http2Stream (its `write` replaced, with its own arguments). */
interface WrittenStream {
  write(chunk: unknown, ...rest: unknown[]): boolean;
  cork(): void;
  uncork(): void;
}
