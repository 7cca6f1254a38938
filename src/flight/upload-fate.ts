import type { Http2Session, ServerHttp2Stream } from 'node:http2';
import { baseCallOf } from './grpc-call.js';

/**
 * Whether the client of a call whose upload just ended reset it instead (#12).
 *
 * Node's HTTP/2 client cancels a stream (grpc-js's cancel, or its deadline passing mid-upload) by ending its
 * request body first (END_STREAM) and sending RST_STREAM only once that write has called back: on the wire the
 * upload ends as a finished one, and the reset follows one socket write later, some milliseconds under load. So
 * an ingest that commits as soon as its upload ends may commit what a client cut off. Nothing about the end itself
 * tells them apart, but the client's frames arrive in order: once the client has answered a PING sent after its
 * upload ended, a reset it had sent before reading that PING has arrived, and the stream is closed. (A client that
 * decides to cancel only later gave up after its upload ended: that is the race of any database's commit.)
 *
 * The PING goes out when the upload ends and is awaited at the end of the ingest's last batch: only an ingest
 * whose last batch takes less than a round trip waits for it. One PING per connection at a time: uploads that end
 * while one is out share the next.
 *
 * Uses grpc-js's own call's Http2Stream (grpc-call.ts), as prompt-end does; without it the call's `cancelled` alone
 * decides, as before.
 */
export function resetByClient(call: { readonly cancelled: boolean }): Promise<boolean> {
  const stream = baseCallOf(call)?.stream;
  if (!stream || stream.closed || stream.destroyed || !stream.session) return Promise.resolve(gone(call, stream));
  const closed = new Promise<void>((resolve) => stream.once('close', resolve));
  return Promise.race([roundTrip(stream.session), closed]).then(() => gone(call, stream));
}

const gone = (call: { readonly cancelled: boolean }, stream: ServerHttp2Stream | undefined): boolean =>
  call.cancelled || stream?.closed === true || stream?.destroyed === true;

interface Pinger {
  out: boolean;
  waiting: Array<() => void>;
}

const pingers = new WeakMap<Http2Session, Pinger>();

/** Resolves once the peer has answered a PING sent after this call (or the PING failed: the session is going). */
function roundTrip(session: Http2Session): Promise<void> {
  let pinger = pingers.get(session);
  if (!pinger) pingers.set(session, (pinger = { out: false, waiting: [] }));
  const waited = new Promise<void>((resolve) => pinger.waiting.push(resolve));
  if (!pinger.out) ping(session, pinger);
  return waited;
}

function ping(session: Http2Session, pinger: Pinger): void {
  const answered = pinger.waiting;
  pinger.waiting = [];
  pinger.out = true;
  let called = false;
  const done = (): void => {
    if (called) return;
    called = true;
    pinger.out = false;
    for (const resolve of answered) resolve();
    if (pinger.waiting.length > 0) ping(session, pinger);
  };
  try {
    // false: too many PINGs unanswered (Node's maxOutstandingPings, with grpc-js's keepalive ones).
    if (!session.ping(done)) done();
  } catch {
    done(); // the session is closed or destroyed: the stream's own close decides
  }
}
