import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import type { RecordBatch, Data } from 'apache-arrow';
import type { CallContext, FlightSqlBackend, QueryResult } from './backend.js';
import { authenticate, deadlineMillis, headerMap, makeContext, readCredentials } from './call-context.js';
import { runAction, supportedActions } from './actions.js';
import { commandInfo, commandSchema, decodeDescriptorCommand, decodeTicket, executeCommand } from './commands.js';
import { handleDoPut } from './do-put.js';
import { coalesceWrites } from './coalesced-writes.js';
import { framed, framedWrites } from './framed-writes.js';
import { endPromptly, respondPromptly } from './prompt-end.js';
import { FlightSessions } from './sessions.js';
import { flightErrors, invalidArgument, toGrpcStatus, unimplemented } from './errors.js';
import { schemaForClient } from './client-timestamps.js';
import {
  encapsulateSchema,
  encodeFlightData,
  framedFlightData,
  recordBatchBodyLength,
  recordBatchMessages,
  schemaHeader,
  serviceDefinition,
  type IpcMessage,
} from '../wire/index.js';

export interface FlightSqlServerOptions {
  /** host:port to listen on; port 0 picks a free one. */
  readonly address: string;
  /** PEM certificate chain and key; plaintext when absent. */
  readonly tls?: { readonly cert: Buffer; readonly key: Buffer };
  /** Largest message accepted from clients (default 256 MiB; ADBC sends up to 16 MiB). */
  readonly maxReceiveMessageBytes?: number;
  /** Largest FlightData sent; Grafana and arrow-go refuse messages above 4 MiB. */
  readonly maxSendMessageBytes?: number;
  readonly log?: (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;
}

type Handler = grpc.UntypedHandleCall;

/** An Arrow Flight SQL server in front of a backend. Knows the protocol, nothing about what queries mean. */
export class FlightSqlServer<P> {
  private readonly server: grpc.Server;
  private readonly log: NonNullable<FlightSqlServerOptions['log']>;
  private readonly maxSendBytes: number;
  private closed = false;
  private started = false;
  private readonly sessions = new FlightSessions();

  constructor(
    private readonly backend: FlightSqlBackend<P>,
    private readonly options: FlightSqlServerOptions,
  ) {
    this.log = options.log ?? (() => {});
    this.maxSendBytes = options.maxSendMessageBytes ?? 4 * 1024 * 1024;
    this.server = new grpc.Server({
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes ?? 256 * 1024 * 1024,
      'grpc.max_send_message_length': -1,
      // Channelz keeps per-call statistics for an admin service this server does not offer;
      // tracking them is a measurable share of a small statement's CPU.
      'grpc.enable_channelz': 0,
    });
    this.server.addService(serviceDefinition, this.handlers());
  }

  /** Binds and starts listening; resolves with the bound address. */
  async start(): Promise<{ host: string; port: number }> {
    if (this.closed) throw flightErrors.error('FLIGHT_SERVER_STATE', 'the Flight SQL server has already been closed');
    if (this.started) throw flightErrors.error('FLIGHT_SERVER_STATE', 'the Flight SQL server has already been started');
    this.started = true;
    const credentials = this.options.tls
      ? grpc.ServerCredentials.createSsl(
          null,
          [{ cert_chain: this.options.tls.cert, private_key: this.options.tls.key }],
          false,
        )
      : grpc.ServerCredentials.createInsecure();
    const { host } = splitAddress(this.options.address);
    const port = await new Promise<number>((resolve, reject) =>
      this.server.bindAsync(this.options.address, credentials, (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    return { host, port };
  }

  /** Stops accepting calls, lets running calls finish for up to `graceMs`, then cancels them. Idempotent. */
  async close(graceMs = 5000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private handlers(): Record<string, Handler> {
    return {
      Handshake: (call: grpc.ServerDuplexStream<unknown, unknown>) => void this.handshake(call),
      ListFlights: this.serverStream(async () => {
        throw unimplemented('ListFlights');
      }),
      GetFlightInfo: this.unary((ctx, request) => this.flightInfo(ctx, request as Descriptor)),
      PollFlightInfo: this.unary(async (ctx, request) => ({
        info: await this.flightInfo(ctx, request as Descriptor),
        progress: 1,
      })),
      GetSchema: this.unary(async (ctx, request) => {
        const descriptor = checkCommand(request as Descriptor);
        const schema = await commandSchema(this.backend, ctx, decodeDescriptorCommand(descriptor.cmd));
        return { schema: encapsulateSchema(schemaForClient(schema, ctx.options.zonedTimestamps)) };
      }),
      DoGet: this.serverStream(async (ctx, request, call) => {
        const ticket = (request as { ticket?: Uint8Array }).ticket ?? new Uint8Array(0);
        if (ticket.byteLength === 0) throw invalidArgument('empty ticket');
        const result = await executeCommand(this.backend, ctx, decodeTicket(ticket));
        await this.stream(call, { ...result, schema: schemaForClient(result.schema, ctx.options.zonedTimestamps) });
      }),
      DoPut: this.bidiStream((ctx, call) => handleDoPut(this.backend, ctx, call)),
      DoExchange: this.bidiStream(async () => {
        throw unimplemented('DoExchange');
      }),
      DoAction: this.serverStream(async (ctx, request, call) => {
        let headers: grpc.Metadata | undefined;
        const setHeader = (name: string, value: string): void => {
          headers ??= new grpc.Metadata();
          headers.set(name, value);
        };
        const action = request as { type?: string; body?: Uint8Array };
        const bodies = await runAction(this.backend, ctx, action, { sessions: this.sessions, setHeader });
        if (headers) call.sendMetadata(headers);
        for (const body of bodies) call.write({ body });
        endPromptly(call);
      }),
      ListActions: this.serverStream(async (_ctx, _request, call) => {
        for (const action of supportedActions(this.backend)) call.write(action);
        call.end();
      }),
    };
  }

  private async flightInfo(ctx: CallContext<P>, request: Descriptor): Promise<Record<string, unknown>> {
    const descriptor = checkCommand(request);
    const command = decodeDescriptorCommand(descriptor.cmd);
    const { schema, ticket } = await commandInfo(this.backend, ctx, command, descriptor.cmd);
    return {
      schema: encapsulateSchema(schemaForClient(schema, ctx.options.zonedTimestamps)),
      flightDescriptor: request,
      endpoint: [{ ticket: { ticket } }],
      totalRecords: -1,
      totalBytes: -1,
    };
  }

  /**
   * Streams a result: the schema message first (also for zero rows), then each batch, with backpressure.
   * The schema is written once the first batch (or the end) is there, and with it in one socket
   * write (coalesceWrites: grpc-js alone writes each message after the previous one's socket write),
   * and the trailers with the last message (endPromptly).
   */
  private async stream(call: grpc.ServerWritableStream<unknown, unknown>, result: QueryResult): Promise<void> {
    const iterator = result.batches[Symbol.asyncIterator]();
    // A client that stops reading past the statement's deadline has its call ended with why (the
    // finally ends the statement): it held the key's slot and the statement's DuckDB work until it read again.
    const send = async (message: Buffer): Promise<boolean> => {
      const sent = await write(call, message, result.deadline?.at);
      if (sent === 'late') throw flightErrors.error('RESULT_NOT_READ', result.deadline!.message);
      return sent === 'written';
    };
    // Messages framed for gRPC here go to HTTP/2 as their framing, then their body's buffers as they lie: neither
    // this side nor grpc-js copies the body.
    const prefixed = framedWrites(call);
    const encode = (message: IpcMessage): Buffer =>
      prefixed ? framed(framedFlightData(message)) : encodeFlightData(message);
    try {
      const first = await iterator.next();
      // The schema and the message after it (the first batch, or its first dictionary) leave in one socket write.
      let corked = coalesceWrites(call);
      if (corked) call.cork();
      if (!(await send(encode({ header: schemaHeader(result.schema), body: [], bodyLength: 0 })))) return;
      const sentDictionaries = new Map<number, Data>();
      for (let next = first; !next.done; next = await iterator.next()) {
        for (const piece of splitBatch(next.value, this.maxSendBytes - 64 * 1024)) {
          for (const message of recordBatchMessages(piece, sentDictionaries)) {
            if (!(await send(encode(message)))) return;
            if (corked) call.uncork();
            corked = false;
          }
        }
      }
      // A result of no rows: its schema is still corked, and goes with the trailers.
      if (corked) call.uncork();
      endPromptly(call);
    } finally {
      await iterator.return?.();
    }
  }

  private async handshake(call: grpc.ServerDuplexStream<unknown, unknown>): Promise<void> {
    try {
      const credentials = readCredentials(headerMap(call.metadata));
      const { token } = await authenticate(this.backend, credentials);
      const response = new grpc.Metadata();
      if (token) response.set('authorization', `Bearer ${token}`);
      call.sendMetadata(response);
      call.on('data', () => {});
      if (call.readableEnded) call.end();
      else call.on('end', () => call.end());
    } catch (error) {
      this.fail(call, error, 'Handshake');
    }
  }

  /**
   * The call's context, and `finished`, to call once the handler is done: grpc-js reports every
   * call cancelled when its stream closes, also after a normal end, and only a call still at
   * work has anything to stop (an abort costs an exception object and every listener's run).
   */
  private async context(call: {
    metadata: grpc.Metadata;
    getDeadline(): grpc.Deadline;
    on(event: 'cancelled', f: () => void): unknown;
  }): Promise<{ ctx: CallContext<P>; finished: () => void }> {
    const headers = headerMap(call.metadata);
    const { principal } = await authenticate(this.backend, readCredentials(headers));
    const controller = new AbortController();
    let done = false;
    // grpc-js answers DEADLINE_EXCEEDED itself when the client's deadline passes and reports the
    // call cancelled: the abort stops the statement's work then.
    call.on('cancelled', () => {
      if (!done) controller.abort();
    });
    const ctx = makeContext(principal, headers, controller.signal, deadlineMillis(call.getDeadline()));
    return { ctx, finished: () => (done = true) };
  }

  /** Runs `handler` in the call's context; `finished` once it has settled. */
  private async within<T>(
    call: Parameters<FlightSqlServer<P>['context']>[0],
    handler: (ctx: CallContext<P>) => Promise<T>,
  ): Promise<T> {
    const { ctx, finished } = await this.context(call);
    try {
      return await handler(ctx);
    } finally {
      finished();
    }
  }

  private unary(handler: (ctx: CallContext<P>, request: unknown) => Promise<unknown>): Handler {
    return (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      this.within(call, (ctx) => handler(ctx, call.request)).then(
        (response) => respondPromptly(call, response) || callback(null, response),
        (error) => callback(this.status(error, call.getPath())),
      );
    };
  }

  private serverStream(
    handler: (
      ctx: CallContext<P>,
      request: unknown,
      call: grpc.ServerWritableStream<unknown, unknown>,
    ) => Promise<void>,
  ): Handler {
    return (call: grpc.ServerWritableStream<unknown, unknown>) => {
      this.within(call, (ctx) => handler(ctx, call.request, call)).catch((error) =>
        this.fail(call, error, call.getPath()),
      );
    };
  }

  private bidiStream(
    handler: (ctx: CallContext<P>, call: grpc.ServerDuplexStream<unknown, unknown>) => Promise<void>,
  ): Handler {
    return (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      this.within(call, (ctx) => handler(ctx, call)).catch((error) => this.fail(call, error, call.getPath()));
    };
  }

  private fail(call: { emit(event: 'error', error: unknown): boolean }, error: unknown, path: string): void {
    call.emit('error', this.status(error, path));
  }

  private status(error: unknown, path: string): Partial<grpc.StatusObject> {
    const status = toGrpcStatus(error);
    if (status.internal) this.log('error', `${path} failed`, error);
    return { code: status.code, details: status.details, metadata: status.metadata };
  }
}

interface Descriptor {
  type?: number;
  cmd?: Uint8Array;
  path?: string[];
}

function checkCommand(descriptor: Descriptor): { cmd: Uint8Array } {
  if (descriptor.type !== 2 || !descriptor.cmd || descriptor.cmd.byteLength === 0) {
    throw unimplemented('a PATH flight descriptor (send a Flight SQL command)');
  }
  return { cmd: descriptor.cmd };
}

/**
 * Writes one message; waits while the client is slow, until `deadline` (ms since the epoch) at most:
 * `gone` when the call has gone away, `late` when the client was still not reading at the deadline.
 */
async function write(
  call: grpc.ServerWritableStream<unknown, unknown>,
  message: Buffer,
  deadline: number | undefined,
): Promise<'written' | 'gone' | 'late'> {
  if (call.cancelled || call.destroyed) return 'gone';
  if (call.write(message)) return 'written';
  const controller = new AbortController();
  const drained = once(call, 'drain', { signal: controller.signal }).then(
    () => 'written' as const,
    () => 'gone' as const,
  );
  const gone = Promise.race([
    once(call, 'cancelled', { signal: controller.signal }),
    once(call, 'close', { signal: controller.signal }),
  ]).then(
    () => 'gone' as const,
    () => 'gone' as const,
  );
  const late =
    deadline === undefined
      ? []
      : [
          sleep(Math.max(0, deadline - Date.now()), 'late' as const, { signal: controller.signal }).catch(
            () => 'gone' as const,
          ),
        ];
  const result = await Promise.race([drained, gone, ...late]);
  controller.abort();
  return call.cancelled ? 'gone' : result;
}

/**
 * Splits a batch whose buffers exceed the message limit into row slices that fit. A slice is measured by its own
 * rows' bytes (recordBatchBodyLength): its buffers are the whole batch's, so measured as a batch is, every slice of
 * a batch of strings over the limit would seem over it too, down to one row per message.
 */
function splitBatch(batch: RecordBatch, maxBytes: number, bytes = batchBytes(batch.data)): RecordBatch[] {
  if (bytes <= maxBytes || batch.numRows <= 1) return [batch];
  const pieces = Math.min(batch.numRows, Math.ceil(bytes / maxBytes) + 1);
  const rowsPerPiece = Math.ceil(batch.numRows / pieces);
  const out: RecordBatch[] = [];
  for (let start = 0; start < batch.numRows; start += rowsPerPiece) {
    const piece = batch.slice(start, Math.min(start + rowsPerPiece, batch.numRows));
    out.push(...splitBatch(piece, maxBytes, recordBatchBodyLength(piece)));
  }
  return out;
}

function batchBytes(data: Data): number {
  let bytes = 0;
  for (const buffer of [data.values, data.valueOffsets, data.nullBitmap, data.typeIds] as Array<
    ArrayBufferView | undefined
  >) {
    if (buffer) bytes += buffer.byteLength;
  }
  return data.children.reduce((sum, child) => sum + batchBytes(child), bytes);
}

function splitAddress(address: string): { host: string; port: string } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[|\]$/g, ''), port: address.slice(colon + 1) };
}
