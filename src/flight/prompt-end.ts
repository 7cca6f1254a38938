import type * as grpc from '@grpc/grpc-js';
import { baseCallOf } from './grpc-call.js';

/**
 * A call's last message and its status in one socket write (#10).
 *
 * grpc-js sends a call's status only once its last message's socket write has called back, and
 * Node's Http2Stream hands the trailers it is given to nghttp2 one `setImmediate` later ("so we don't
 * do it on nghttp2 stack"): every call answered OK left in two writes, the trailers one event-loop
 * turn or more behind the message, and the client, which needs the status to finish the call, waited
 * for the second. A small statement is two or three such calls (GetFlightInfo and DoGet; JDBC also
 * CreatePreparedStatement).
 *
 * Here the status is asked for as soon as the last message is in the Http2Stream's queue, and the
 * trailers are submitted from inside nghttp2's send loop when it asks for them ('wantTrailers', which
 * Node emits from nghttp2's data source callback), which nghttp2 sends in the same send as the data.
 *
 * Uses grpc-js's own call (grpc-call.ts: its `sendMessage`, `sendStatus` and Http2Stream) and the
 * server stream's `_final`, and reaches into Node's Http2Stream (20's: its native handle's
 * `trailers`, its state, its header list): each function answers false, leaving the call to end
 * as before, when what it uses is not there.
 * test/flight/coalesced-writes checks on the installed grpc-js and Node that each call's trailers leave
 * with its message; the interop suites, that the real clients read the status.
 */

/** Sends a unary call's response and status OK at once; false (nothing sent) when it cannot. */
export function respondPromptly(call: grpc.ServerUnaryCall<unknown, unknown>, response: unknown): boolean {
  const inner = baseCallOf(call);
  const stream = inner?.stream as Http2StreamInside | undefined;
  if (!inner || !stream || stream.writableLength !== 0 || !promptTrailers(stream)) return false;
  inner.sendMessage(response, ignore);
  // sendMessage fails the call itself (and has ended it) when the response cannot be serialized.
  if (stream.writableLength === 0) return true;
  inner.sendStatus({ code: 0, details: 'OK', metadata: null });
  stream._final(ignore);
  return true;
}

/** Ends a server-streaming call with status OK right behind its last message (call.end() else). */
export function endPromptly(call: grpc.ServerWritableStream<unknown, unknown>): void {
  const outer = call as unknown as PromptTarget;
  const stream = baseCallOf(call)?.stream as Http2StreamInside | undefined;
  const now =
    typeof outer._final === 'function' &&
    stream !== undefined &&
    typeof stream._final === 'function' &&
    call.writableLength > 0 &&
    outer.writableBuffer?.length === 0 &&
    stream.writableBuffer?.length === 0 &&
    promptTrailers(stream);
  call.end();
  if (!now) return;
  // The Writables would run these once the last message's write has called back; they run now.
  // Each runs once: grpc-js's `_final` is replaced for that later run, Node's shutdown is idempotent.
  const final = outer._final.bind(outer);
  outer._final = (callback) => callback(null);
  outer.destroy = destroyOnceFinished;
  final(ignore);
  stream._final(ignore);
}

/**
 * The call's destroy, held back while its last message's write is still in flight. grpc-js destroys a call's
 * Writable when its Http2Stream closes (reporting it cancelled, also after a normal end), and with the trailers in
 * that write the stream can close before the write calls back (a DoAction's one result, seen in 99 % of JDBC's
 * CreatePreparedStatement calls): the write then calls back on a destroyed Writable, which builds an
 * ERR_STREAM_DESTROYED, its stack trace captured, for nobody (Node 20's errorBuffer; 2.6 % of the main thread's busy
 * time under a JDBC loop, PROFILE.md, twenty-eighth pass). The Writable destroys itself once finished (autoDestroy);
 * an error, or a stream that did not close cleanly (the client's reset), destroys it at once.
 */
function destroyOnceFinished(this: PromptTarget, error?: Error | null, callback?: () => void): unknown {
  const destroy = (Object.getPrototypeOf(this) as PromptTarget).destroy;
  const clean = baseCallOf(this)?.stream.rstCode === 0;
  if (error || callback || !clean || this.writableFinished || this.writableLength === 0)
    return destroy.call(this, error, callback);
  this.once('finish', () => destroy.call(this));
  return this;
}

/**
 * Has `stream` submit its trailers as soon as it is given them in a 'wantTrailers' listener (Node defers
 * them by a `setImmediate`); answers false when Node's Http2Stream is not as expected.
 */
function promptTrailers(stream: Http2StreamInside): boolean {
  if (stream.destroyed || stream.closed) return false;
  if (stream.sendTrailers === sendTrailersNow) return true;
  if (inside === undefined) inside = insideOf(stream);
  if (!inside || typeof (stream[inside.handle] as NativeStream | undefined)?.trailers !== 'function') return false;
  stream.sendTrailers = sendTrailersNow;
  stream.destroy = destroyOnceWritten;
  return true;
}

/**
 * The stream's destroy, held back while its last message's write is still in flight. The trailers now
 * leave in that write, so nghttp2 closes the stream (and Node destroys it) before the write calls back;
 * a Writable whose write calls back after it was destroyed builds an ERR_STREAM_DESTROYED, its stack
 * trace captured whole, for nobody (Node 20's errorBuffer): ~0.05 ms of the main thread per call, 6 % of
 * its busy time under bench/latency (PROFILE.md, seventeenth pass). Destroyed once its writable side has
 * finished, as before the prompt end; an error, a reset or the session going destroys it at once.
 */
function destroyOnceWritten(this: Http2StreamInside, error?: Error | null, callback?: () => void): unknown {
  const destroy = (Object.getPrototypeOf(this) as Http2StreamInside).destroy;
  // Only a stream nghttp2 closed cleanly, which it does once every byte was handed to the socket: the write
  // then calls back when the socket's does (with an error, which destroys, if the socket fails).
  const written = this.closed && this.rstCode === 0 && this.session !== undefined && !this.session.destroyed;
  if (error || callback || !written || !this.writableEnded || this.writableFinished || this.writableLength === 0)
    return destroy.call(this, error, callback);
  this.once('finish', () => destroy.call(this));
  return this;
}

function sendTrailersNow(this: Http2StreamInside, headers: Record<string, unknown>): void {
  const { handle, state, maybeDestroy } = inside!;
  const flags = this[state] as { flags: number; trailersReady?: boolean };
  // Only within a 'wantTrailers' listener (nghttp2's send loop): anything else goes Node's way.
  if (!flags.trailersReady || this.destroyed || this.closed) return deferred(this, headers);
  let list = '';
  let count = 0;
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      const text = String(one);
      // Node validates (and refuses) what its own list could not carry.
      if (name.includes('\0') || text.includes('\0')) return deferred(this, headers);
      // Node's header list (mapToHeaders): name, value and nghttp2's flags (none), each ended by NUL.
      list += `${name.toLowerCase()}\0${text}\0\0`;
      count++;
    }
  }
  flags.flags &= ~STREAM_FLAGS_HAS_TRAILERS;
  const code = (this[handle] as NativeStream).trailers([list, count]);
  if (code < 0) this.destroy(new Error(`HTTP/2 trailers not sent (nghttp2 error ${code})`));
  else (this[maybeDestroy] as (this: Http2StreamInside) => void).call(this);
}

/** Node's own sendTrailers (one `setImmediate` later). */
function deferred(stream: Http2StreamInside, headers: Record<string, unknown>): void {
  (Object.getPrototypeOf(stream) as Http2StreamInside).sendTrailers.call(stream, headers);
}

// Node 20's internal/http2/core.js: the stream has trailers still to send.
const STREAM_FLAGS_HAS_TRAILERS = 0x20;

/** The Http2Stream's private keys sendTrailersNow uses, found once; null when they are not there. */
let inside: { handle: symbol; state: symbol; maybeDestroy: symbol } | null | undefined;

function insideOf(stream: Http2StreamInside): typeof inside {
  const handle = own(stream, 'kHandle');
  const state = own(stream, 'state');
  const maybeDestroy = inherited(stream, 'kMaybeDestroy');
  const flags = state && (stream[state] as { flags?: unknown } | undefined)?.flags;
  if (!handle || typeof flags !== 'number' || !maybeDestroy || typeof stream[maybeDestroy] !== 'function') return null;
  return { handle, state: state!, maybeDestroy };
}

function own(object: object, description: string): symbol | undefined {
  return Object.getOwnPropertySymbols(object).find((s) => s.description === description);
}

function inherited(object: object, description: string): symbol | undefined {
  for (let o = Object.getPrototypeOf(object) as object | null; o; o = Object.getPrototypeOf(o) as object | null) {
    const found = own(o, description);
    if (found) return found;
  }
  return undefined;
}

interface NativeStream {
  trailers(list: [string, number]): number;
}

const ignore = (): void => {};

interface Http2StreamInside {
  [key: symbol]: unknown;
  destroyed: boolean;
  closed: boolean;
  writableLength: number;
  writableBuffer?: unknown[];
  writableEnded: boolean;
  writableFinished: boolean;
  readonly rstCode?: number;
  readonly session?: { readonly destroyed: boolean };
  sendTrailers(headers: Record<string, unknown>): void;
  destroy: (this: Http2StreamInside, error?: Error | null, callback?: () => void) => unknown;
  once(event: 'finish', listener: () => void): unknown;
  _final(callback: () => void): void;
}

interface PromptTarget {
  _final(callback: (error: Error | null) => void): void;
  writableBuffer?: unknown[];
  readonly writableFinished: boolean;
  readonly writableLength: number;
  destroy: (this: PromptTarget, error?: Error | null, callback?: () => void) => unknown;
  once(event: 'finish', listener: () => void): unknown;
}
