import type * as grpc from '@grpc/grpc-js';
import { baseCallOf } from './grpc-call.js';

/**
 * grpc-js's server stream is a Writable without `_writev`: it hands one message to Node's
 * Http2Stream and takes the next only once that message's socket write has called back, so a
 * DoGet's schema and first batch left in two socket writes, one event-loop turn apart (one more
 * system call here, one more wake-up of the client; #10). With `_writev`, the messages a call
 * has buffered go to the Http2Stream together, corked, and leave in one socket write.
 *
 * Uses grpc-js's own call (grpc-call.ts: its `sendMessage`, and its Http2Stream); answers false,
 * leaving the call as it was, when that is not there, and test/flight/coalesced-writes checks
 * that messages leave together on the installed grpc-js.
 */
export function coalesceWrites(call: grpc.ServerWritableStream<unknown, unknown>): boolean {
  const inner = baseCallOf(call);
  if (!inner) return false;
  const { stream } = inner;
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

interface WritevTarget {
  _writev(chunks: Array<{ chunk: unknown }>, callback: (error?: Error | null) => void): void;
}
