import { Schema, type Table } from 'apache-arrow';
import { FlightSqlClient } from '../../src/client/index.js';
import {
  FlightSql,
  decodeSchema,
  packAny,
  tableFromFlightData,
  tableToFlightData,
  unpackAny,
  type FlightData,
} from '../../src/wire/index.js';

// The tests' Flight SQL client: src/client's FlightSqlClient (every call goes over a real socket),
// plus the raw views tests need (message counts and sizes, prepared statements, Arrow DoPut).

export interface FlightInfo {
  schema: Schema;
  endpoints: Array<{ ticket: Uint8Array; locations: string[] }>;
  totalRecords: number;
  totalBytes: number;
}

export class TestFlightClient {
  readonly client: FlightSqlClient;

  constructor(address: string) {
    this.client = new FlightSqlClient({ address });
  }

  /** Headers sent on every call; tests set `authorization` here. */
  get headers(): Record<string, string> {
    return this.client.headers;
  }

  close(): void {
    this.client.close();
  }

  /** Basic handshake; returns the response headers' authorization value and keeps it. */
  handshake(username: string, password: string, padded = true): Promise<string | undefined> {
    return this.client.handshake(username, password, { padded });
  }

  async getFlightInfo(cmd: Uint8Array, headers?: Record<string, string>): Promise<FlightInfo> {
    const info = await this.client.getFlightInfo(cmd, { headers });
    return {
      schema: info.schema ?? new Schema([]),
      endpoints: info.endpoints.map((e) => ({ ticket: e.ticket, locations: [...e.locations] })),
      totalRecords: info.totalRecords,
      totalBytes: info.totalBytes,
    };
  }

  async getSchema(cmd: Uint8Array): Promise<Schema> {
    return (await this.client.getSchema(cmd)) ?? new Schema([]);
  }

  /** DoGet, returning the raw FlightData messages and the decoded table. */
  async doGet(
    ticket: Uint8Array,
    headers?: Record<string, string>,
  ): Promise<{ table: Table; messages: number; sizes: number[] }> {
    const parts: FlightData[] = [];
    for await (const data of this.client.doGet(ticket, { headers })) parts.push(data);
    return {
      table: tableFromFlightData(parts)!,
      messages: parts.length,
      sizes: parts.map((p) => p.dataHeader.byteLength + p.dataBody.byteLength),
    };
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

  doAction(type: string, body: Uint8Array): Promise<Uint8Array[]> {
    return this.client.doAction(type, body);
  }

  async prepare(
    query: string,
  ): Promise<{ handle: Uint8Array; datasetSchema: Uint8Array; parameterSchema: Uint8Array; isUpdate?: boolean }> {
    const [body] = await this.doAction(
      'CreatePreparedStatement',
      packAny('ActionCreatePreparedStatementRequest', { query }),
    );
    const any = unpackAny(body)!;
    const result = FlightSql.ActionCreatePreparedStatementResult.toObject(
      FlightSql.ActionCreatePreparedStatementResult.decode(any.value),
    ) as {
      preparedStatementHandle: Uint8Array;
      datasetSchema?: Uint8Array;
      parameterSchema?: Uint8Array;
      isUpdate?: boolean;
    };
    return {
      handle: result.preparedStatementHandle,
      datasetSchema: result.datasetSchema ?? new Uint8Array(0),
      parameterSchema: result.parameterSchema ?? new Uint8Array(0),
      isUpdate: result.isUpdate,
    };
  }

  /** A query prepared, its parameters bound by DoPut (one row per run), executed and closed: its result. */
  async queryPrepared(query: string, parameters: Table): Promise<Table> {
    const { handle } = await this.prepare(query);
    const [meta] = await this.doPut(
      packAny('CommandPreparedStatementQuery', { preparedStatementHandle: handle }),
      parameters,
    );
    const { preparedStatementHandle } = FlightSql.DoPutPreparedStatementResult.decode(meta) as unknown as {
      preparedStatementHandle: Uint8Array;
    };
    try {
      const info = await this.getFlightInfo(packAny('CommandPreparedStatementQuery', { preparedStatementHandle }));
      return (await this.doGet(info.endpoints[0].ticket)).table;
    } finally {
      await this.doAction(
        'ClosePreparedStatement',
        packAny('ActionClosePreparedStatementRequest', { preparedStatementHandle }),
      );
    }
  }

  /** DoPut with a descriptor command and optional Arrow data; returns the PutResult app_metadata values. */
  doPut(cmd: Uint8Array, data?: Table): Promise<Uint8Array[]> {
    return this.client.doPut(cmd, data ? tableToFlightData(data) : []);
  }

  updateCount(query: string): Promise<number> {
    return this.client.executeUpdate(query);
  }
}

export { decodeSchema, packAny, tableToFlightData, unpackAny, FlightSql };
