import type * as grpc from '@grpc/grpc-js';
import type { Table } from 'apache-arrow';
import type { CallContext, FlightSqlBackend, IngestRequest } from './backend.js';
import { executeUpdate, toPlan } from './commands.js';
import { invalidArgument, unimplemented } from './errors.js';
import { readIpcMessages } from './ipc.js';
import { FlightSql, decodeSql, encode, unpackAny } from './proto.js';
import { decodeHandle, encodeHandle } from './statement-handle.js';

interface FlightDataMessage {
  flightDescriptor?: { type?: number; cmd?: Uint8Array };
  dataHeader?: Uint8Array;
  dataBody?: Uint8Array;
}

/**
 * DoPut: statement updates, parameter binding for prepared statements, and ingest.
 * Results go in PutResult.app_metadata as raw (not Any-packed) messages.
 */
export async function handleDoPut<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  call: grpc.ServerDuplexStream<unknown, unknown>,
): Promise<void> {
  let cmd: Uint8Array | undefined;
  const messages: Array<{ header: Uint8Array; body: Uint8Array }> = [];
  // Events rather than `for await`: grpc-js server streams do not always end their async iterator.
  await new Promise<void>((resolve, reject) => {
    call.on('data', (data: FlightDataMessage) => {
      cmd ??= data.flightDescriptor?.cmd;
      if (data.dataHeader && data.dataHeader.byteLength > 0) {
        messages.push({ header: data.dataHeader, body: data.dataBody ?? new Uint8Array(0) });
      }
    });
    call.on('end', resolve);
    call.on('error', reject);
  });
  const any = cmd ? unpackAny(cmd) : null;
  if (!any) throw invalidArgument('DoPut: the first message must carry a Flight SQL command descriptor');
  const appMetadata = await putResult(backend, ctx, any.name, any.value, messages);
  call.write({ appMetadata });
  call.end();
}

async function putResult<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  name: string,
  value: Uint8Array,
  messages: Array<{ header: Uint8Array; body: Uint8Array }>,
): Promise<Uint8Array> {
  switch (name) {
    case 'CommandStatementUpdate': {
      const m = decodeSql<{ query?: string; transactionId?: Uint8Array }>(name, value);
      return updateResult(await backend.executeUpdate(ctx, { query: m.query ?? '', transactionId: m.transactionId }));
    }
    case 'CommandStatementSubstraitPlan': {
      const m = decodeSql<{ plan?: { plan?: Uint8Array; version?: string }; transactionId?: Uint8Array }>(name, value);
      return updateResult(await executeUpdate(backend, ctx, { kind: 'plan', statement: { plan: toPlan(m.plan), transactionId: m.transactionId } }));
    }
    case 'CommandPreparedStatementQuery': {
      const m = decodeSql<{ preparedStatementHandle?: Uint8Array }>(name, value);
      const handle = decodeHandle(m.preparedStatementHandle ?? new Uint8Array(0));
      const parameters = parameterTable(messages);
      const bound = { ...handle, statement: { ...handle.statement, parameters } } as typeof handle;
      return encode(FlightSql.DoPutPreparedStatementResult, { preparedStatementHandle: encodeHandle(bound) });
    }
    case 'CommandPreparedStatementUpdate': {
      const m = decodeSql<{ preparedStatementHandle?: Uint8Array }>(name, value);
      const handle = decodeHandle(m.preparedStatementHandle ?? new Uint8Array(0));
      const parameters = parameterTable(messages) ?? handle.statement.parameters;
      const bound = { ...handle, statement: { ...handle.statement, parameters, prepared: true } } as typeof handle;
      return updateResult(await executeUpdate(backend, ctx, bound));
    }
    case 'CommandStatementIngest': {
      if (!backend.ingest) throw unimplemented('bulk ingestion (CommandStatementIngest)');
      const m = decodeSql<{
        tableDefinitionOptions?: { ifNotExist?: number; ifExists?: number };
        table?: string;
        schema?: string;
        catalog?: string;
        temporary?: boolean;
        transactionId?: Uint8Array;
        options?: Record<string, string>;
      }>(name, value);
      const request: IngestRequest = {
        table: m.table ?? '',
        schema: m.schema ?? null,
        catalog: m.catalog ?? null,
        temporary: m.temporary ?? false,
        ifNotExist: m.tableDefinitionOptions?.ifNotExist ?? 0,
        ifExists: m.tableDefinitionOptions?.ifExists ?? 0,
        transactionId: m.transactionId,
        options: new Map(Object.entries(m.options ?? {})),
      };
      const table = readIpcMessages(messages);
      async function* batches() {
        if (table) yield* table.batches;
      }
      return updateResult(await backend.ingest(ctx, request, batches()));
    }
    default:
      throw unimplemented(`DoPut with ${name}`);
  }
}

/** Bound parameters; a batch with no columns (ADBC's "execute once") binds nothing. */
function parameterTable(messages: Array<{ header: Uint8Array; body: Uint8Array }>): Table | undefined {
  const table = readIpcMessages(messages);
  if (!table || table.numCols === 0) return undefined;
  return table;
}

function updateResult(recordCount: number): Uint8Array {
  return encode(FlightSql.DoPutUpdateResult, { recordCount });
}
