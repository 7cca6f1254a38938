import type { ServerHttp2Stream } from 'node:http2';

/**
 * grpc-js's own call under the call object a server handler is given: the one place Orrery reaches into grpc-js's
 * internals (#10, #12), for prompt-end, coalesced-writes, framed-writes and upload-fate. In grpc-js 1.14 that is
 * `call.call`, a BaseServerInterceptingCall: it frames messages (`serializeMessage`), sends them (`sendMessage`) and
 * the status (`sendStatus`) on the call's Http2Stream (`stream`). Answers undefined when that is not what is there
 * (another grpc-js, or interceptors in between, whose calls hold no stream): each user then leaves the call as
 * grpc-js has it. test/flight/grpc-call checks on the installed grpc-js that it is there, for each kind of call.
 */
export function baseCallOf(call: object): BaseCall | undefined {
  const inner = (call as { call?: Partial<BaseCall> }).call;
  if (
    typeof inner?.sendMessage !== 'function' ||
    typeof inner.sendStatus !== 'function' ||
    typeof inner.serializeMessage !== 'function'
  )
    return undefined;
  const stream = inner.stream as Partial<ServerHttp2Stream> | undefined;
  if (typeof stream?.write !== 'function' || typeof stream.cork !== 'function' || typeof stream.rstCode !== 'number')
    return undefined;
  return inner as BaseCall;
}

/** What Orrery uses of grpc-js's BaseServerInterceptingCall. */
export interface BaseCall {
  serializeMessage(value: unknown): Buffer;
  sendMessage(message: unknown, callback: () => void): void;
  sendStatus(status: { code: number; details: string; metadata: null }): void;
  readonly stream: ServerHttp2Stream;
}
