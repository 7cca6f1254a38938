import { Schema } from 'apache-arrow';
import type { CallContext, CancelResult, FlightSqlBackend, PreparedStatementInfo } from './backend.js';
import type protobuf from 'protobufjs';
import { decodeTicket, toPlan } from './commands.js';
import { decodeRequest, invalidArgument, unimplemented } from './errors.js';
import { announcedParameterSchema, schemaForClient } from './client-timestamps.js';
import { Flight, FlightSql, encapsulateSchema, encode, packAny, unpackAny } from '../wire/index.js';
import { decodeHandle, encodeHandle, type HandleStatement } from './statement-handle.js';
import { optionError, sessionCookie, type FlightSessions, type SessionOptionValue } from './sessions.js';

const descriptions: Record<string, string> = {
  CreatePreparedStatement: 'Creates a prepared statement (ActionCreatePreparedStatementRequest)',
  ClosePreparedStatement: 'Closes a prepared statement (ActionClosePreparedStatementRequest)',
  CreatePreparedSubstraitPlan: 'Creates a prepared Substrait plan (ActionCreatePreparedSubstraitPlanRequest)',
  BeginTransaction: 'Begins a transaction (ActionBeginTransactionRequest)',
  EndTransaction: 'Commits or rolls back a transaction (ActionEndTransactionRequest)',
  BeginSavepoint: 'Creates a savepoint (ActionBeginSavepointRequest)',
  EndSavepoint: 'Releases or rolls back a savepoint (ActionEndSavepointRequest)',
  CancelFlightInfo: 'Cancels the statement of a FlightInfo (CancelFlightInfoRequest)',
  CancelQuery: 'Cancels a query (ActionCancelQueryRequest)',
  SetSessionOptions: 'Sets session options (SetSessionOptionsRequest)',
  GetSessionOptions: 'Lists session options (GetSessionOptionsRequest)',
  CloseSession: 'Closes the session (CloseSessionRequest)',
};

/** The actions this server answers, given what the backend supports. */
export function supportedActions<P>(backend: FlightSqlBackend<P>): Array<{ type: string; description: string }> {
  return Object.entries(descriptions)
    .filter(([type]) => {
      if (type === 'CreatePreparedSubstraitPlan') return backend.substrait !== undefined;
      if (type === 'BeginTransaction' || type === 'EndTransaction') return backend.transactions !== undefined;
      if (type === 'BeginSavepoint' || type === 'EndSavepoint')
        return backend.transactions?.beginSavepoint !== undefined;
      if (type === 'CancelQuery') return backend.cancelQuery !== undefined || backend.cancelStatement !== undefined;
      if (type === 'CancelFlightInfo') return backend.cancelStatement !== undefined;
      if (type === 'SetSessionOptions' || type === 'GetSessionOptions' || type === 'CloseSession')
        return backend.sessionOptions !== undefined;
      return true;
    })
    .map(([type, description]) => ({ type, description }));
}

/** Runs one DoAction; returns the Result bodies to stream back. */
export async function runAction<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  action: { type?: string; body?: Uint8Array },
  call: ActionCall,
): Promise<Uint8Array[]> {
  const type = action.type ?? '';
  const body = action.body ?? new Uint8Array(0);
  switch (type) {
    case 'CreatePreparedStatement': {
      const m = decodeRequest<{ query?: string; transactionId?: Uint8Array }>(
        'ActionCreatePreparedStatementRequest',
        anyBody(body, type),
      );
      const statement = { query: m.query ?? '', transactionId: m.transactionId };
      return [
        preparedResult({ kind: 'sql', statement }, await backend.prepare(ctx, statement), ctx.options.zonedTimestamps),
      ];
    }
    case 'CreatePreparedSubstraitPlan': {
      if (!backend.substrait) throw unimplemented('Substrait');
      const m = decodeRequest<{ plan?: { plan?: Uint8Array; version?: string }; transactionId?: Uint8Array }>(
        'ActionCreatePreparedSubstraitPlanRequest',
        anyBody(body, type),
      );
      const statement = { plan: toPlan(m.plan), transactionId: m.transactionId };
      return [
        preparedResult(
          { kind: 'plan', statement },
          await backend.substrait.preparePlan(ctx, statement),
          ctx.options.zonedTimestamps,
        ),
      ];
    }
    case 'ClosePreparedStatement': {
      // Handles carry their statement: the backend frees only what it kept for one, if anything.
      if (!backend.closePrepared) return [];
      const m = decodeRequest<{ preparedStatementHandle?: Uint8Array }>(
        'ActionClosePreparedStatementRequest',
        anyBody(body, type),
      );
      const handle = decodeHandle(m.preparedStatementHandle ?? new Uint8Array(0));
      if (handle.kind === 'sql') await backend.closePrepared(ctx, handle.statement);
      return [];
    }
    case 'BeginTransaction': {
      const transactions = needTransactions(backend);
      const transactionId = await transactions.begin(ctx);
      return [packAny('ActionBeginTransactionResult', { transactionId })];
    }
    case 'EndTransaction': {
      const m = decodeRequest<{ transactionId?: Uint8Array; action?: number }>(
        'ActionEndTransactionRequest',
        anyBody(body, type),
      );
      if (m.action !== 1 && m.action !== 2) throw invalidArgument('EndTransaction: action must be COMMIT or ROLLBACK');
      await needTransactions(backend).end(ctx, m.transactionId ?? new Uint8Array(0), m.action === 1);
      return [];
    }
    case 'BeginSavepoint': {
      const transactions = needTransactions(backend);
      if (!transactions.beginSavepoint) throw unimplemented('savepoints');
      const m = decodeRequest<{ transactionId?: Uint8Array; name?: string }>(
        'ActionBeginSavepointRequest',
        anyBody(body, type),
      );
      const savepointId = await transactions.beginSavepoint(ctx, m.transactionId ?? new Uint8Array(0), m.name ?? '');
      return [packAny('ActionBeginSavepointResult', { savepointId })];
    }
    case 'EndSavepoint': {
      const transactions = needTransactions(backend);
      if (!transactions.endSavepoint) throw unimplemented('savepoints');
      const m = decodeRequest<{ savepointId?: Uint8Array; action?: number }>(
        'ActionEndSavepointRequest',
        anyBody(body, type),
      );
      if (m.action !== 1 && m.action !== 2) throw invalidArgument('EndSavepoint: action must be RELEASE or ROLLBACK');
      await transactions.endSavepoint(ctx, m.savepointId ?? new Uint8Array(0), m.action === 1);
      return [];
    }
    case 'CancelFlightInfo': {
      const request = Flight.CancelFlightInfoRequest.toObject(decodeFlight(Flight.CancelFlightInfoRequest, body), {
        defaults: false,
      }) as { info?: FlightInfoMessage };
      return [encode(Flight.CancelFlightInfoResult, { status: await cancelInfo(backend, ctx, request.info) })];
    }
    case 'CancelQuery': {
      const m = decodeRequest<{ info?: Uint8Array }>('ActionCancelQueryRequest', anyBody(body, type));
      const info = m.info ?? new Uint8Array(0);
      if (backend.cancelQuery)
        return [packAny('ActionCancelQueryResult', { result: await backend.cancelQuery(ctx, info) })];
      const message = Flight.FlightInfo.toObject(decodeFlight(Flight.FlightInfo, info)) as FlightInfoMessage;
      return [packAny('ActionCancelQueryResult', { result: await cancelInfo(backend, ctx, message) })];
    }
    case 'SetSessionOptions': {
      const served = needSessionOptions(backend);
      const request = Flight.SetSessionOptionsRequest.toObject(decodeFlight(Flight.SetSessionOptionsRequest, body), {
        defaults: false,
      }) as { sessionOptions?: Record<string, SessionOptionValue> };
      const owner = ownerOf(ctx);
      let session = call.sessions.find(ctx.headers.get('cookie'), owner);
      if (!session) {
        session = call.sessions.open(owner);
        call.setHeader('set-cookie', `${sessionCookie}=${session.id}`);
      }
      const errors: Record<string, { value: number }> = {};
      for (const [name, value] of Object.entries(request.sessionOptions ?? {})) {
        if (!(name in served)) errors[name] = { value: optionError.invalidName };
        else if (Object.keys(value).length === 0) session.options.delete(name);
        else if (value.stringValue !== served[name as keyof typeof served])
          errors[name] = { value: optionError.invalidValue };
        else session.options.set(name, value.stringValue);
      }
      return [encode(Flight.SetSessionOptionsResult, { errors })];
    }
    case 'GetSessionOptions': {
      const served = needSessionOptions(backend);
      const session = call.sessions.find(ctx.headers.get('cookie'), ownerOf(ctx));
      const sessionOptions = Object.fromEntries(
        Object.entries(served).map(([name, value]) => [name, { stringValue: session?.options.get(name) ?? value }]),
      );
      return [encode(Flight.GetSessionOptionsResult, { sessionOptions })];
    }
    case 'CloseSession': {
      needSessionOptions(backend);
      const session = call.sessions.find(ctx.headers.get('cookie'), ownerOf(ctx));
      if (session) call.sessions.close(session.id);
      // Closing a session that is not open (or no longer) leaves it closed all the same.
      return [encode(Flight.CloseSessionResult, { status: 1 })];
    }
    default:
      throw unimplemented(`action '${type}'`);
  }
}

/** What an action may use of its call besides the request: the server's sessions, response headers. */
export interface ActionCall {
  readonly sessions: FlightSessions;
  /** Sets a response header (sent before the results). */
  readonly setHeader: (name: string, value: string) => void;
}

/** Who a session belongs to: the caller's identity as the backend gave it. */
function ownerOf<P>(ctx: CallContext<P>): string {
  return JSON.stringify(ctx.principal);
}

function needSessionOptions<P>(backend: FlightSqlBackend<P>): NonNullable<FlightSqlBackend<P>['sessionOptions']> {
  if (!backend.sessionOptions) throw unimplemented('Flight sessions');
  return backend.sessionOptions;
}

interface FlightInfoMessage {
  endpoint?: Array<{ ticket?: { ticket?: Uint8Array } }>;
}

/** Cancels the statements a FlightInfo's tickets name; what happened to the first that was running or waiting. */
async function cancelInfo<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  info: FlightInfoMessage | undefined,
): Promise<CancelResult> {
  if (!backend.cancelStatement) throw unimplemented('cancelling statements');
  const tickets = (info?.endpoint ?? []).map((e) => e.ticket?.ticket).filter((t) => t && t.byteLength > 0);
  if (tickets.length === 0) throw invalidArgument('cancel: the FlightInfo has no endpoint with a ticket');
  let result: CancelResult = 3;
  for (const ticket of tickets) {
    const command = decodeTicket(ticket!);
    if (command.kind !== 'statement' || command.handle.kind !== 'sql') continue;
    const status = await backend.cancelStatement(ctx, command.handle.statement);
    if (result === 3) result = status;
  }
  return result;
}

function decodeFlight(type: (typeof Flight)[keyof typeof Flight], bytes: Uint8Array): protobuf.Message {
  try {
    return type.decode(bytes);
  } catch {
    throw invalidArgument(`malformed ${type.name}`);
  }
}

function preparedResult(handle: HandleStatement, info: PreparedStatementInfo, zonedTimestamps: boolean): Uint8Array {
  return packAny('ActionCreatePreparedStatementResult', {
    preparedStatementHandle: encodeHandle(handle),
    datasetSchema: info.isUpdate
      ? new Uint8Array(0)
      : encapsulateSchema(schemaForClient(info.datasetSchema, zonedTimestamps)),
    parameterSchema: encapsulateSchema(announcedParameterSchema(info.parameterSchema ?? new Schema([]))),
    isUpdate: info.isUpdate,
  });
}

function anyBody(body: Uint8Array, action: string): Uint8Array {
  const any = unpackAny(body);
  if (!any) throw invalidArgument(`${action}: the action body is not a google.protobuf.Any`);
  if (!(any.name in FlightSql)) throw invalidArgument(`${action}: unexpected body ${any.name}`);
  return any.value;
}

function needTransactions<P>(backend: FlightSqlBackend<P>): NonNullable<FlightSqlBackend<P>['transactions']> {
  if (!backend.transactions) throw unimplemented('transactions');
  return backend.transactions;
}
