import * as grpc from '@grpc/grpc-js';
import { RecordBatchReader, Table, type Schema } from 'apache-arrow';
import { serviceDefinition } from '../../src/flight/flight-sql-server.js';
import { decodeSchema } from '../../src/flight/index.js';
import { FlightSql, packAny, unpackAny } from '../../src/flight/proto.js';

// A small Flight SQL client for tests, built from the same protos as the server but
// speaking only the wire protocol: every call goes over a real socket.

const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'FlightService');

export interface FlightInfo {
  schema: Schema;
  endpoints: Array<{ ticket: Uint8Array; locations: string[] }>;
  totalRecords: number;
  totalBytes: number;
}

export class TestFlightClient {
  private readonly client: grpc.Client & Record<string, Function>;
  headers: Record<string, string> = {};

  constructor(address: string) {
    this.client = new Client(address, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
    }) as unknown as grpc.Client & Record<string, Function>;
  }

  close(): void {
    this.client.close();
  }

  private metadata(extra: Record<string, string> = {}): grpc.Metadata {
    const metadata = new grpc.Metadata();
    for (const [k, v] of Object.entries({ ...this.headers, ...extra })) metadata.set(k, v);
    return metadata;
  }

  /** Basic handshake; returns the response headers' authorization value and keeps it. */
  async handshake(username: string, password: string, padded = true): Promise<string | undefined> {
    let basic = Buffer.from(`${username}:${password}`).toString('base64');
    if (!padded) basic = basic.replace(/=+$/, '');
    const call = this.client.Handshake(this.metadata({ authorization: `Basic ${basic}` })) as grpc.ClientDuplexStream<unknown, unknown>;
    const header = new Promise<string | undefined>((resolve) =>
      call.on('metadata', (md: grpc.Metadata) => resolve(md.get('authorization')[0] as string | undefined)),
    );
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', () => {});
      call.on('error', reject);
      call.on('end', resolve);
    });
    call.end();
    await done;
    const token = await header;
    if (token) this.headers.authorization = token;
    return token;
  }

  private unary<T>(method: string, request: unknown, headers?: Record<string, string>): Promise<T> {
    return new Promise((resolve, reject) =>
      this.client[method](request, this.metadata(headers), (error: grpc.ServiceError | null, response: T) =>
        error ? reject(error) : resolve(response),
      ),
    );
  }

  async getFlightInfo(cmd: Uint8Array, headers?: Record<string, string>): Promise<FlightInfo> {
    const info = await this.unary<{
      schema?: Uint8Array;
      endpoint?: Array<{ ticket?: { ticket?: Uint8Array }; location?: Array<{ uri: string }> }>;
      totalRecords?: number;
      totalBytes?: number;
    }>('GetFlightInfo', { type: 2, cmd }, headers);
    return {
      schema: decodeSchema(info.schema ?? new Uint8Array(0)),
      endpoints: (info.endpoint ?? []).map((e) => ({
        ticket: e.ticket?.ticket ?? new Uint8Array(0),
        locations: (e.location ?? []).map((l) => l.uri),
      })),
      totalRecords: info.totalRecords ?? 0,
      totalBytes: info.totalBytes ?? 0,
    };
  }

  async getSchema(cmd: Uint8Array): Promise<Schema> {
    const result = await this.unary<{ schema?: Uint8Array }>('GetSchema', { type: 2, cmd });
    return decodeSchema(result.schema ?? new Uint8Array(0));
  }

  /** DoGet, returning the raw FlightData messages and the decoded table. */
  async doGet(ticket: Uint8Array, headers?: Record<string, string>): Promise<{ table: Table; messages: number; sizes: number[] }> {
    const call = this.client.DoGet({ ticket }, this.metadata(headers)) as grpc.ClientReadableStream<Buffer>;
    const parts: Array<{ header: Uint8Array; body: Uint8Array }> = [];
    const sizes: number[] = [];
    for await (const data of call as AsyncIterable<{ dataHeader?: Uint8Array; dataBody?: Uint8Array }>) {
      sizes.push((data.dataHeader?.byteLength ?? 0) + (data.dataBody?.byteLength ?? 0));
      parts.push({ header: data.dataHeader ?? new Uint8Array(0), body: data.dataBody ?? new Uint8Array(0) });
    }
    return { table: readStream(parts), messages: parts.length, sizes };
  }

  /** GetFlightInfo then DoGet of its single endpoint. */
  async query(sql: string, headers?: Record<string, string>): Promise<Table> {
    const info = await this.getFlightInfo(packAny('CommandStatementQuery', { query: sql }), headers);
    return (await this.doGet(info.endpoints[0].ticket, headers)).table;
  }

  async command(name: string, value: Record<string, unknown> = {}): Promise<{ info: FlightInfo; table: Table }> {
    const info = await this.getFlightInfo(packAny(name, value));
    return { info, table: (await this.doGet(info.endpoints[0].ticket)).table };
  }

  async doAction(type: string, body: Uint8Array): Promise<Uint8Array[]> {
    const call = this.client.DoAction({ type, body }, this.metadata()) as grpc.ClientReadableStream<unknown>;
    const out: Uint8Array[] = [];
    for await (const result of call as AsyncIterable<{ body?: Uint8Array }>) {
      out.push(result.body ?? new Uint8Array(0));
    }
    return out;
  }

  async prepare(query: string): Promise<{ handle: Uint8Array; datasetSchema: Uint8Array; parameterSchema: Uint8Array; isUpdate?: boolean }> {
    const [body] = await this.doAction('CreatePreparedStatement', packAny('ActionCreatePreparedStatementRequest', { query }));
    const any = unpackAny(body)!;
    const result = FlightSql.ActionCreatePreparedStatementResult.toObject(
      FlightSql.ActionCreatePreparedStatementResult.decode(any.value),
    ) as { preparedStatementHandle: Uint8Array; datasetSchema?: Uint8Array; parameterSchema?: Uint8Array; isUpdate?: boolean };
    return {
      handle: result.preparedStatementHandle,
      datasetSchema: result.datasetSchema ?? new Uint8Array(0),
      parameterSchema: result.parameterSchema ?? new Uint8Array(0),
      isUpdate: result.isUpdate,
    };
  }

  /** DoPut with a descriptor command and optional Arrow data; returns the PutResult app_metadata values. */
  async doPut(cmd: Uint8Array, data?: Table): Promise<Uint8Array[]> {
    const call = this.client.DoPut(this.metadata()) as grpc.ClientDuplexStream<unknown, unknown>;
    const results: Uint8Array[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (result: { appMetadata?: Uint8Array }) => results.push(result.appMetadata ?? new Uint8Array(0)));
      call.on('error', reject);
      call.on('end', resolve);
    });
    const messages = data ? ipcMessages(data) : [];
    if (messages.length === 0) call.write({ flightDescriptor: { type: 2, cmd } } as never);
    messages.forEach((m, i) =>
      call.write({ ...(i === 0 ? { flightDescriptor: { type: 2, cmd } } : {}), dataHeader: m.header, dataBody: m.body } as never),
    );
    call.end();
    await done;
    return results;
  }

  async updateCount(query: string): Promise<number> {
    const [meta] = await this.doPut(packAny('CommandStatementUpdate', { query }));
    return Number((FlightSql.DoPutUpdateResult.toObject(FlightSql.DoPutUpdateResult.decode(meta), { longs: Number }) as { recordCount?: number }).recordCount ?? 0);
  }
}

function readStream(parts: Array<{ header: Uint8Array; body: Uint8Array }>): Table {
  const pad = (n: number) => (n + 7) & ~7;
  let size = 8;
  for (const p of parts) size += 8 + pad(p.header.byteLength) + pad(p.body.byteLength);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const p of parts) {
    view.setInt32(offset, -1, true);
    view.setInt32(offset + 4, pad(p.header.byteLength), true);
    out.set(p.header, offset + 8);
    offset += 8 + pad(p.header.byteLength);
    out.set(p.body, offset);
    offset += pad(p.body.byteLength);
  }
  view.setInt32(offset, -1, true);
  const reader = RecordBatchReader.from(out);
  reader.open();
  return new Table(reader.schema, [...reader]);
}

/** Splits an IPC stream into (header, body) messages, as a Flight client sends them. */
function ipcMessages(table: Table): Array<{ header: Uint8Array; body: Uint8Array }> {
  const bytes = new Uint8Array(tableToStream(table));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Array<{ header: Uint8Array; body: Uint8Array }> = [];
  let offset = 0;
  while (offset + 8 <= bytes.byteLength) {
    const length = view.getInt32(offset + 4, true);
    if (length === 0) break;
    const header = bytes.subarray(offset + 8, offset + 8 + length);
    const bodyLength = Number(messageBodyLength(header));
    out.push({ header, body: bytes.subarray(offset + 8 + length, offset + 8 + length + bodyLength) });
    offset += 8 + length + bodyLength;
  }
  return out;
}

import { tableToIPC } from 'apache-arrow';
import { Message } from 'apache-arrow/ipc/metadata/message';
const tableToStream = (table: Table): Uint8Array => tableToIPC(table, 'stream');
const messageBodyLength = (header: Uint8Array): number => Message.decode(header).bodyLength;

export { decodeSchema, packAny, unpackAny, FlightSql };
