import * as grpc from '@grpc/grpc-js';
import { Table, type RecordBatch, type Schema } from 'apache-arrow';
import { FlightClientError, clientClosed, toClientError } from './errors.js';
import { decodeBatches, decodeSchema, decodeSql, packAny, serviceDefinition, type FlightData } from '../wire/index.js';

/** How to reach a Flight SQL server and who to be. */
export interface FlightSqlClientOptions {
  /** `host:port` of the server. */
  readonly address: string;
  /** Use TLS: `true` trusts the system's roots; `{ ca }` trusts those PEM certificates instead. */
  readonly tls?: boolean | { readonly ca?: Buffer };
  /** An API key, sent as `authorization: Bearer <key>` on every call. */
  readonly apiKey?: string;
  /** More headers sent on every call. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Options of one call. */
export interface CallOptions {
  /** Headers for this call only; they win over the client's. */
  readonly headers?: Readonly<Record<string, string>>;
  /** The gRPC deadline of the call (a Date, or ms since the epoch): past it the call fails with DEADLINE_EXCEEDED. */
  readonly deadline?: Date | number;
  /** Called with the response headers (DoAction): a session cookie comes back there. */
  readonly onHeaders?: (headers: ReadonlyMap<string, string>) => void;
}

/** What GetFlightInfo answered. */
export interface FlightInfo {
  /** The result schema, when the server sent one. */
  readonly schema: Schema | undefined;
  readonly endpoints: ReadonlyArray<{ readonly ticket: Uint8Array; readonly locations: readonly string[] }>;
  readonly totalRecords: number;
  readonly totalBytes: number;
}

interface RawFlightInfo {
  schema?: Uint8Array;
  endpoint?: Array<{ ticket?: { ticket?: Uint8Array }; location?: Array<{ uri: string }> }>;
  totalRecords?: number;
  totalBytes?: number;
}

function flightInfoOf(info: RawFlightInfo): FlightInfo {
  return {
    schema: info.schema?.byteLength ? decodeSchema(info.schema) : undefined,
    endpoints: (info.endpoint ?? []).map((e) => ({
      ticket: e.ticket?.ticket ?? new Uint8Array(0),
      locations: (e.location ?? []).map((l) => l.uri),
    })),
    totalRecords: info.totalRecords ?? 0,
    totalBytes: info.totalBytes ?? 0,
  };
}

type GenericClient = grpc.Client & Record<string, (...args: unknown[]) => unknown>;
const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'FlightService');

/**
 * A Flight SQL client over one gRPC channel. Errors are {@link FlightClientError}s carrying the
 * gRPC status and the server's message. Close it with `close()` (idempotent); calls after that fail.
 *
 * @example
 * const client = await FlightSqlClient.connect({ address: '127.0.0.1:50051', apiKey: process.env.ORRERY_API_KEY });
 * try {
 *   const table = await client.query('SELECT view_set_name FROM list_view_set_definitions()');
 * } finally {
 *   client.close();
 * }
 */
export class FlightSqlClient {
  /** Headers sent on every call (`authorization` among them once a key or handshake set it). */
  readonly headers: Record<string, string>;
  private readonly client: GenericClient;
  private closed = false;

  constructor(readonly options: FlightSqlClientOptions) {
    const credentials = !options.tls
      ? grpc.credentials.createInsecure()
      : grpc.credentials.createSsl(options.tls === true ? undefined : options.tls.ca);
    this.client = new Client(options.address, credentials, {
      'grpc.max_receive_message_length': -1,
    }) as unknown as GenericClient;
    this.headers = { ...options.headers };
    if (options.apiKey) this.headers.authorization = `Bearer ${options.apiKey}`;
  }

  /** A client whose channel is ready: fails with UNAVAILABLE when the server cannot be reached in `timeoutMs`. */
  static async connect(options: FlightSqlClientOptions, timeoutMs = 10_000): Promise<FlightSqlClient> {
    const client = new FlightSqlClient(options);
    try {
      await new Promise<void>((resolve, reject) =>
        client.client.waitForReady(Date.now() + timeoutMs, (error) => (error ? reject(error) : resolve())),
      );
    } catch (error) {
      client.close();
      const reason = error instanceof Error ? error.message : String(error);
      throw new FlightClientError(
        grpc.status.UNAVAILABLE,
        `cannot reach the Flight SQL server at ${options.address} within ${timeoutMs} ms (${reason})`,
      );
    }
    return client;
  }

  /**
   * Basic handshake with a user name and password (an Orrery key name and key). Keeps the bearer
   * token the server answers in its response headers, and returns it.
   */
  async handshake(username: string, password: string, options: { padded?: boolean } = {}): Promise<string | undefined> {
    let basic = Buffer.from(`${username}:${password}`).toString('base64');
    if (options.padded === false) basic = basic.replace(/=+$/, '');
    const call = this.open<grpc.ClientDuplexStream<unknown, unknown>>(
      'Handshake',
      this.metadata({ headers: { authorization: `Basic ${basic}` } }),
    );
    const header = new Promise<string | undefined>((resolve) =>
      call.on('metadata', (md: grpc.Metadata) => resolve(md.get('authorization')[0] as string | undefined)),
    );
    await this.mapErrors(
      new Promise<void>((resolve, reject) => {
        call.on('data', () => {});
        call.on('error', reject);
        call.on('end', resolve);
        call.end();
      }),
    );
    const token = await header;
    if (token) this.headers.authorization = token;
    return token;
  }

  /** Runs a query and collects every batch of every endpoint into one table. */
  async query(sql: string, options: CallOptions = {}): Promise<Table> {
    const info = await this.getFlightInfo(packAny('CommandStatementQuery', { query: sql }), options);
    let schema = info.schema;
    const batches: RecordBatch[] = [];
    for (const endpoint of info.endpoints) {
      for await (const batch of this.readTicket(endpoint.ticket, options, (s) => (schema ??= s))) batches.push(batch);
    }
    if (batches.length > 0) return new Table(batches);
    return schema ? new Table(schema) : new Table();
  }

  /** Runs a query and yields its record batches as they arrive (stopping early cancels the stream). */
  async *queryBatches(sql: string, options: CallOptions = {}): AsyncGenerator<RecordBatch> {
    const info = await this.getFlightInfo(packAny('CommandStatementQuery', { query: sql }), options);
    for (const endpoint of info.endpoints) yield* this.readTicket(endpoint.ticket, options);
  }

  /** Runs a statement as a Flight SQL update and returns the affected row count. */
  async executeUpdate(sql: string, options: CallOptions = {}): Promise<number> {
    const [result] = await this.doPut(packAny('CommandStatementUpdate', { query: sql }), [], options);
    return result ? Number(decodeSql<{ recordCount?: number }>('DoPutUpdateResult', result).recordCount ?? 0) : 0;
  }

  /** GetFlightInfo for a command descriptor (the `cmd` bytes, usually a packed Flight SQL command). */
  async getFlightInfo(cmd: Uint8Array, options: CallOptions = {}): Promise<FlightInfo> {
    return flightInfoOf(await this.unary<RawFlightInfo>('GetFlightInfo', { type: 2, cmd }, options));
  }

  /**
   * PollFlightInfo for a command descriptor: the FlightInfo so far, the progress (0 to 1, when the
   * server says), and whether the query is complete (no descriptor to poll again).
   */
  async pollFlightInfo(
    cmd: Uint8Array,
    options: CallOptions = {},
  ): Promise<{ info: FlightInfo | undefined; progress: number | undefined; complete: boolean }> {
    const poll = await this.unary<{ info?: RawFlightInfo; progress?: number; flightDescriptor?: unknown }>(
      'PollFlightInfo',
      { type: 2, cmd },
      options,
    );
    return {
      info: poll.info ? flightInfoOf(poll.info) : undefined,
      progress: poll.progress,
      complete: poll.flightDescriptor === undefined,
    };
  }

  /** GetSchema for a command descriptor. */
  async getSchema(cmd: Uint8Array, options: CallOptions = {}): Promise<Schema | undefined> {
    const result = await this.unary<{ schema?: Uint8Array }>('GetSchema', { type: 2, cmd }, options);
    return result.schema?.byteLength ? decodeSchema(result.schema) : undefined;
  }

  /** DoGet: the raw FlightData messages of a ticket, as they arrive. */
  async *doGet(ticket: Uint8Array, options: CallOptions = {}): AsyncGenerator<FlightData> {
    const call = this.open<grpc.ClientReadableStream<unknown>>(
      'DoGet',
      { ticket },
      this.metadata(options),
      grpcOptions(options),
    );
    try {
      for await (const data of call as AsyncIterable<FlightData>) yield data;
    } catch (error) {
      throw toClientError(error, this.options.address);
    } finally {
      call.cancel();
    }
  }

  /** DoGet decoded: the record batches of a ticket, as they arrive. */
  readTicket(
    ticket: Uint8Array,
    options: CallOptions = {},
    onSchema: (schema: Schema) => void = () => {},
  ): AsyncGenerator<RecordBatch> {
    return decodeBatches(this.doGet(ticket, options), onSchema);
  }

  /** DoAction: the body of every Result. */
  async doAction(type: string, body: Uint8Array, options: CallOptions = {}): Promise<Uint8Array[]> {
    const call = this.open<grpc.ClientReadableStream<unknown>>(
      'DoAction',
      { type, body },
      this.metadata(options),
      grpcOptions(options),
    );
    const out: Uint8Array[] = [];
    const onHeaders = options.onHeaders;
    if (onHeaders)
      call.on('metadata', (metadata: grpc.Metadata) => {
        const headers = new Map<string, string>();
        for (const [name, value] of Object.entries(metadata.getMap()))
          if (typeof value === 'string') headers.set(name, value);
        onHeaders(headers);
      });
    try {
      for await (const result of call as AsyncIterable<{ body?: Uint8Array }>)
        out.push(result.body ?? new Uint8Array(0));
    } catch (error) {
      throw toClientError(error, this.options.address);
    }
    return out;
  }

  /**
   * DoPut: sends the descriptor with the first message (or alone), returns every PutResult's
   * app_metadata. An async iterable of messages is streamed as it yields, waiting while the call's
   * buffer is full; the upload ends when it does.
   */
  async doPut(
    cmd: Uint8Array,
    messages: readonly FlightData[] | AsyncIterable<FlightData> = [],
    options: CallOptions = {},
  ): Promise<Uint8Array[]> {
    const call = this.open<grpc.ClientDuplexStream<unknown, unknown>>(
      'DoPut',
      this.metadata(options),
      grpcOptions(options),
    );
    const results: Uint8Array[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (result: { appMetadata?: Uint8Array }) => results.push(result.appMetadata ?? new Uint8Array(0)));
      call.on('error', reject);
      call.on('end', resolve);
    });
    const descriptor = { flightDescriptor: { type: 2, cmd } };
    if (Array.isArray(messages)) {
      if (messages.length === 0) call.write(descriptor);
      messages.forEach((m, i) => call.write({ ...(i === 0 ? descriptor : {}), ...m }));
      call.end();
    } else {
      void this.stream(call, descriptor, messages as AsyncIterable<FlightData>);
    }
    await this.mapErrors(done);
    return results;
  }

  /** Writes the messages as they come, the descriptor on the first; ends the upload after the last. */
  private async stream(
    call: grpc.ClientDuplexStream<unknown, unknown>,
    descriptor: object,
    messages: AsyncIterable<FlightData>,
  ): Promise<void> {
    let first = true;
    try {
      for await (const message of messages) {
        const room = call.write({ ...(first ? descriptor : {}), ...message });
        first = false;
        if (!room) await new Promise((resolve) => call.once('drain', resolve));
      }
      if (first) call.write(descriptor);
      call.end();
    } catch (error) {
      call.destroy(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Closes the channel. Idempotent; any call after it fails with a FlightClientError. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  private metadata(options: CallOptions = {}): grpc.Metadata {
    const metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries({ ...this.headers, ...options.headers })) metadata.set(k, v);
    return metadata;
  }

  private open<T>(method: string, ...args: unknown[]): T {
    if (this.closed) throw clientClosed();
    return this.client[method](...args) as T;
  }

  private unary<T>(method: string, request: unknown, options: CallOptions): Promise<T> {
    if (this.closed) return Promise.reject(clientClosed());
    return this.mapErrors(
      new Promise<T>((resolve, reject) =>
        this.client[method](
          request,
          this.metadata(options),
          grpcOptions(options),
          (error: grpc.ServiceError | null, response: T) => (error ? reject(error) : resolve(response)),
        ),
      ),
    );
  }

  private async mapErrors<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise;
    } catch (error) {
      throw toClientError(error, this.options.address);
    }
  }
}

function grpcOptions(options: CallOptions): grpc.CallOptions {
  return options.deadline === undefined ? {} : { deadline: options.deadline };
}
