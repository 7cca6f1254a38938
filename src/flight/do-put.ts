import type * as grpc from '@grpc/grpc-js';
import type { Table } from 'apache-arrow';
import type { CallContext, FlightSqlBackend, IngestRequest } from './backend.js';
import { executeUpdate, toPlan } from './commands.js';
import { decodeRequest, flightErrors, invalidArgument, unimplemented } from './errors.js';
import {
  FlightSql,
  encode,
  readFlightDataStream,
  tableFromFlightData,
  unpackAny,
  type FlightData,
} from '../wire/index.js';
import { decodeHandle, encodeHandle } from './statement-handle.js';
import { resetByClient } from './upload-fate.js';

interface FlightDataMessage {
  flightDescriptor?: { type?: number; cmd?: Uint8Array };
  dataHeader?: Uint8Array;
  dataBody?: Uint8Array;
}

/** FlightData messages buffered ahead of the consumer before the call is paused (backpressure). */
const readAhead = 8;

/**
 * DoPut: statement updates, parameter binding for prepared statements, and ingest.
 * Results go in PutResult.app_metadata as raw (not Any-packed) messages. Ingest streams: its
 * batches reach the backend as they arrive, the call paused while the backend is behind.
 */
export async function handleDoPut<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  call: grpc.ServerDuplexStream<unknown, unknown>,
): Promise<void> {
  const incoming = messageQueue(call);
  const first = await incoming.next();
  const cmd = first.done ? undefined : first.value.flightDescriptor?.cmd;
  const any = cmd ? unpackAny(cmd) : null;
  if (!any) throw invalidArgument('DoPut: the first message must carry a Flight SQL command descriptor');
  // An ingest commits when its upload ends: it first makes sure the end was not a cut (upload-fate).
  if (any.name === 'CommandStatementIngest') incoming.confirmEnd();
  const data = (async function* (): AsyncGenerator<{ header: Uint8Array; body: Uint8Array }> {
    if (!first.done) yield* withData([first.value]);
    for await (const message of incoming) yield* withData([message]);
  })();
  let appMetadata: Uint8Array;
  if (any.name === 'CommandStatementIngest') {
    appMetadata = await ingestResult(backend, ctx, any.value, data);
  } else {
    const messages: Array<{ header: Uint8Array; body: Uint8Array }> = [];
    for await (const message of data) messages.push(message);
    appMetadata = await putResult(backend, ctx, any.name, any.value, messages);
  }
  call.write({ appMetadata });
  call.end();
}

function* withData(messages: FlightDataMessage[]): Generator<{ header: Uint8Array; body: Uint8Array }> {
  for (const m of messages)
    if (m.dataHeader && m.dataHeader.byteLength > 0)
      yield { header: m.dataHeader, body: m.dataBody ?? new Uint8Array(0) };
}

/**
 * The call's messages as an async iterator. Events rather than `for await`: grpc-js server
 * streams do not always end their async iterator. Pauses the call while `readAhead` messages wait.
 */
function messageQueue(
  call: grpc.ServerDuplexStream<unknown, unknown>,
): AsyncIterableIterator<FlightDataMessage> & { confirmEnd(): void } {
  const queue: FlightDataMessage[] = [];
  let ended = false;
  let confirming = false;
  /** Set once the upload ended, when its end is to be confirmed: whether the client reset the call instead. */
  let reset: Promise<boolean> | undefined;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    wake?.();
    wake = undefined;
  };
  call.on('data', (data: FlightDataMessage) => {
    queue.push(data);
    if (queue.length >= readAhead) call.pause();
    notify();
  });
  // A call the client cancelled (or whose deadline passed) may still end its readable side like a
  // finished upload: it fails instead, so that an ingest never commits the part that arrived (and an
  // ingest waits for the client's answer to a PING to be sure: upload-fate).
  const cancelled = (): void => {
    failure ??= flightErrors.error('UPLOAD_CANCELLED', 'the client cancelled the call before its upload ended');
    notify();
  };
  call.on('cancelled', cancelled);
  call.on('end', () => {
    if (call.cancelled) cancelled();
    if (confirming) reset = resetByClient(call);
    ended = true;
    notify();
  });
  call.on('error', (error) => {
    failure = error;
    notify();
  });
  const iterator: AsyncIterableIterator<FlightDataMessage> & { confirmEnd(): void } = {
    async next(): Promise<IteratorResult<FlightDataMessage>> {
      for (;;) {
        if (failure) throw failure;
        const message = queue.shift();
        if (message) {
          if (queue.length < readAhead / 2) call.resume();
          return { value: message, done: false };
        }
        if (ended) {
          if (!reset || !(await reset)) return { value: undefined, done: true };
          cancelled(); // thrown at the top
          continue;
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    confirmEnd(): void {
      confirming = true;
      if (ended) reset ??= resetByClient(call);
    },
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

/** Flight SQL's TableNotExistOption FAIL and TableExistsOption APPEND. */
const noTableCreate = 2;
const tableAppend = 2;

async function ingestResult<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  value: Uint8Array,
  data: AsyncIterable<{ header: Uint8Array; body: Uint8Array }>,
): Promise<Uint8Array> {
  if (!backend.ingest) throw unimplemented('bulk ingestion (CommandStatementIngest)');
  const m = decodeRequest<{
    tableDefinitionOptions?: { ifNotExist?: number; ifExists?: number };
    table?: string;
    schema?: string;
    catalog?: string;
    temporary?: boolean;
    transactionId?: Uint8Array;
    options?: Record<string, string>;
  }>('CommandStatementIngest', value);
  const request: IngestRequest = {
    table: m.table ?? '',
    schema: m.schema ?? null,
    catalog: m.catalog ?? null,
    temporary: m.temporary ?? false,
    // No table_definition_options at all (micromegas's bulk_ingest sends none): append to the
    // table, which must exist, as micromegas's server does. ADBC always sends them.
    ifNotExist: m.tableDefinitionOptions ? (m.tableDefinitionOptions.ifNotExist ?? 0) : noTableCreate,
    ifExists: m.tableDefinitionOptions ? (m.tableDefinitionOptions.ifExists ?? 0) : tableAppend,
    transactionId: m.transactionId,
    options: new Map(Object.entries(m.options ?? {})),
  };
  const stream = await readFlightDataStream(asFlightData(data), invalidArgument);
  if (!stream) throw invalidArgument('CommandStatementIngest: the stream holds no Arrow schema');
  return updateResult(await backend.ingest(ctx, request, stream));
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
      const m = decodeRequest<{ query?: string; transactionId?: Uint8Array }>(name, value);
      return updateResult(await backend.executeUpdate(ctx, { query: m.query ?? '', transactionId: m.transactionId }));
    }
    case 'CommandStatementSubstraitPlan': {
      const m = decodeRequest<{ plan?: { plan?: Uint8Array; version?: string }; transactionId?: Uint8Array }>(
        name,
        value,
      );
      return updateResult(
        await executeUpdate(backend, ctx, {
          kind: 'plan',
          statement: { plan: toPlan(m.plan), transactionId: m.transactionId },
        }),
      );
    }
    case 'CommandPreparedStatementQuery': {
      const m = decodeRequest<{ preparedStatementHandle?: Uint8Array }>(name, value);
      const handle = decodeHandle(m.preparedStatementHandle ?? new Uint8Array(0));
      const parameters = parameterTable(messages);
      const bound = { ...handle, statement: { ...handle.statement, parameters } } as typeof handle;
      return encode(FlightSql.DoPutPreparedStatementResult, { preparedStatementHandle: encodeHandle(bound) });
    }
    case 'CommandPreparedStatementUpdate': {
      const m = decodeRequest<{ preparedStatementHandle?: Uint8Array }>(name, value);
      const handle = decodeHandle(m.preparedStatementHandle ?? new Uint8Array(0));
      const parameters = parameterTable(messages) ?? handle.statement.parameters;
      const bound = { ...handle, statement: { ...handle.statement, parameters, prepared: true } } as typeof handle;
      return updateResult(await executeUpdate(backend, ctx, bound));
    }
    default:
      throw unimplemented(`DoPut with ${name}`);
  }
}

/** Bound parameters; a batch with no columns (ADBC's "execute once") binds nothing. */
function parameterTable(messages: Array<{ header: Uint8Array; body: Uint8Array }>): Table | undefined {
  const table = tableFromFlightData(messages.map((m) => ({ dataHeader: m.header, dataBody: m.body })));
  if (!table || table.numCols === 0) return undefined;
  return table;
}

function updateResult(recordCount: number): Uint8Array {
  return encode(FlightSql.DoPutUpdateResult, { recordCount });
}

async function* asFlightData(
  messages: AsyncIterable<{ header: Uint8Array; body: Uint8Array }>,
): AsyncGenerator<FlightData> {
  for await (const m of messages) yield { dataHeader: m.header, dataBody: m.body };
}
