import type * as grpc from '@grpc/grpc-js';

/**
 * grpc-js frames every message it sends into a new buffer (its 5-byte prefix, then a copy of the
 * message): for a large result a second copy of every byte sent, on the main thread, into freshly
 * allocated memory (a 10 M-row DoGet, ~350 MB: ~0.1 s of the main thread, as many new pages to
 * fault in and more external memory for V8 to collect; #10 item 3). With framedWrites, a message
 * the sender framed itself (encodeFlightData with its gRPC prefix, then `framed`) goes to the
 * Http2Stream as it is; any other message is framed by grpc-js as before.
 *
 * Reaches into grpc-js 1.14's call (`call.call`, the intercepting call, and its `serializeMessage`);
 * answers false, leaving the call as it was, when that is not there (another grpc-js, or
 * interceptors in between): the sender must then send messages without the prefix.
 * test/flight/framed-writes checks it on the installed grpc-js.
 */
export function framedWrites(call: grpc.ServerWritableStream<unknown, unknown>): boolean {
  const inner = (call as unknown as { call?: Partial<InterceptingCall> }).call;
  if (typeof inner?.serializeMessage !== 'function') return false;
  const serializeMessage = inner.serializeMessage.bind(inner);
  inner.serializeMessage = (value) => (isFramed(value) ? value : serializeMessage(value));
  return true;
}

const framedMessages = new WeakSet<Buffer>();

/** Marks a message as framed for gRPC already (see framedWrites); answers it. */
export function framed(message: Buffer): Buffer {
  framedMessages.add(message);
  return message;
}

function isFramed(value: unknown): value is Buffer {
  return Buffer.isBuffer(value) && framedMessages.has(value);
}

/** What framedWrites uses of grpc-js's BaseServerInterceptingCall. */
interface InterceptingCall {
  serializeMessage(value: unknown): Buffer;
}
