import type * as grpc from '@grpc/grpc-js';

/**
 * grpc-js's server stream is a Writable without `_writev`: it hands one message to Node's
 * Http2Stream and takes the next only once that message's socket write has called back, so a
 * DoGet's schema and first batch left in two socket writes, one event-loop turn apart (one more
 * system call here, one more wake-up of the client; #10). With `_writev`, the messages a call
 * has buffered go to the Http2Stream together, corked, and leave in one socket write.
 *
 * Reaches into grpc-js 1.14's call (`call.call`, the intercepting call with `sendMessage`, and
 * its `stream`, the Http2Stream); answers false, leaving the call as it was, when those are not
 * there (another grpc-js, or interceptors in between), and test/flight/coalesced-writes checks
 * them on the installed one.
 */
export function coalesceWrites(call: grpc.ServerWritableStream<unknown, unknown>): boolean {
  const inner = (call as unknown as { call?: Partial<InterceptingCall> }).call;
  const stream = inner?.stream;
  if (typeof inner?.sendMessage !== 'function' || typeof stream?.cork !== 'function') return false;
  const sendMessage = inner.sendMessage.bind(inner);
  (call as unknown as WritevTarget)._writev = (chunks, callback) => {
    stream.cork();
    try {
      // Each message is framed and written as grpc-js's `_write` would; the Writable waits for
      // the last one's write (an earlier one failing ends the call with INTERNAL, as before).
      const last = chunks.length - 1;
      chunks.forEach(({ chunk }, i) => sendMessage(chunk, i === last ? callback : ignore));
    } finally {
      stream.uncork();
    }
  };
  return true;
}

const ignore = (): void => {};

/** What coalesceWrites uses of grpc-js's BaseServerInterceptingCall. */
interface InterceptingCall {
  sendMessage(message: unknown, callback: () => void): void;
  readonly stream: { cork(): void; uncork(): void };
}

interface WritevTarget {
  _writev(chunks: Array<{ chunk: unknown }>, callback: (error?: Error | null) => void): void;
}
