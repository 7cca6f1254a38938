import type { RecordBatch, Schema } from 'apache-arrow';
import type { CallContext, FlightSqlBackend, PlanStatement, QueryResult, Statement, SubstraitPlan } from './backend.js';
import { decodeRequest, invalidArgument, unimplemented } from './errors.js';
import { metadataCommands, metadataSchema, runMetadataCommand, type MetadataCommand } from './metadata-commands.js';
import { packAny, unpackAny } from '../wire/index.js';
import { decodeHandle, encodeHandle, type HandleStatement } from './statement-handle.js';

// Dispatch of the commands carried by FlightDescriptor.cmd and Ticket.ticket.

/** What a descriptor asks for, once decoded. */
export type Command =
  | { kind: 'statement'; handle: HandleStatement }
  | { kind: 'prepared'; handle: HandleStatement; handleBytes: Uint8Array }
  | { kind: 'metadata'; name: string; command: MetadataCommand };

/** Decodes FlightDescriptor.cmd for GetFlightInfo, GetSchema and PollFlightInfo. */
export function decodeDescriptorCommand(cmd: Uint8Array): Command {
  const any = unpackAny(cmd);
  if (!any)
    throw invalidArgument('the descriptor command is not a Flight SQL command (expected a google.protobuf.Any)');
  switch (any.name) {
    case 'CommandStatementQuery': {
      const m = decodeRequest<{ query?: string; transactionId?: Uint8Array }>(any.name, any.value);
      return {
        kind: 'statement',
        handle: { kind: 'sql', statement: { query: m.query ?? '', transactionId: m.transactionId } },
      };
    }
    case 'CommandStatementSubstraitPlan': {
      const m = decodeRequest<{ plan?: { plan?: Uint8Array; version?: string }; transactionId?: Uint8Array }>(
        any.name,
        any.value,
      );
      return {
        kind: 'statement',
        handle: { kind: 'plan', statement: { plan: toPlan(m.plan), transactionId: m.transactionId } },
      };
    }
    case 'CommandPreparedStatementQuery':
      return prepared(any.value);
    default:
      if (metadataCommands.has(any.name))
        return { kind: 'metadata', name: any.name, command: decodeRequest(any.name, any.value) };
      throw unimplemented(`command ${any.name}`);
  }
}

/** Decodes a DoGet ticket: ours (Any), a micromegas-style TicketStatementQuery, or plain SQL text. */
export function decodeTicket(ticket: Uint8Array): Command {
  const any = unpackAny(ticket);
  if (!any) return { kind: 'statement', handle: decodeHandle(ticket) };
  if (any.name === 'TicketStatementQuery') {
    const m = decodeRequest<{ statementHandle?: Uint8Array }>(any.name, any.value);
    return { kind: 'statement', handle: decodeHandle(m.statementHandle ?? new Uint8Array(0)) };
  }
  if (
    any.name === 'CommandStatementQuery' ||
    any.name === 'CommandPreparedStatementQuery' ||
    metadataCommands.has(any.name)
  ) {
    return decodeDescriptorCommand(ticket);
  }
  throw invalidArgument(`ticket carries ${any.name}, which cannot be redeemed with DoGet`);
}

function prepared(value: Uint8Array): Command {
  const m = decodeRequest<{ preparedStatementHandle?: Uint8Array }>('CommandPreparedStatementQuery', value);
  const handleBytes = m.preparedStatementHandle ?? new Uint8Array(0);
  return { kind: 'prepared', handle: asPrepared(decodeHandle(handleBytes)), handleBytes };
}

/** Marks a handle's statement as run through a prepared statement. */
export function asPrepared(handle: HandleStatement): HandleStatement {
  return { ...handle, statement: { ...handle.statement, prepared: true } } as HandleStatement;
}

export function toPlan(plan: { plan?: Uint8Array; version?: string } | undefined): SubstraitPlan {
  return { plan: plan?.plan ?? new Uint8Array(0), version: plan?.version ?? '' };
}

/**
 * GetFlightInfo of a command: its schema and the ticket DoGet will redeem, self-contained (any
 * server can serve it), with the id of the plan the backend kept for it when it keeps one.
 */
export async function commandInfo<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  command: Command,
  cmd: Uint8Array,
): Promise<{ schema: Schema; ticket: Uint8Array }> {
  // Prepared statements too: the JDBC driver sends every statement as one.
  if (command.kind !== 'metadata' && command.handle.kind === 'sql' && backend.planQuery) {
    const { statement } = command.handle;
    const { schema, planId } = await backend.planQuery(ctx, statement);
    if (!planId) return { schema, ticket: commandTicket(command, cmd) };
    const handle: HandleStatement = { kind: 'sql', statement: { ...statement, planId } };
    return { schema, ticket: commandTicket({ kind: 'statement', handle }, cmd) };
  }
  return { schema: await commandSchema(backend, ctx, command), ticket: commandTicket(command, cmd) };
}

/** The schema a command's result will have. */
export async function commandSchema<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  command: Command,
): Promise<Schema> {
  if (command.kind === 'metadata') return metadataSchema(command.name, command.command);
  const { handle } = command;
  if (handle.kind === 'plan') return substrait(backend).describePlan(ctx, handle.statement);
  return backend.describeQuery(ctx, handle.statement);
}

/** The ticket DoGet will redeem for a command: self-contained, so any server can serve it. */
function commandTicket(command: Command, cmd: Uint8Array): Uint8Array {
  if (command.kind === 'statement')
    return packAny('TicketStatementQuery', { statementHandle: encodeHandle(command.handle) });
  return cmd;
}

/** Runs a command for DoGet. */
export async function executeCommand<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  command: Command,
): Promise<QueryResult> {
  if (command.kind === 'metadata') {
    const batch = await runMetadataCommand(backend, ctx, command.name, command.command);
    return { schema: batch.schema, batches: single(batch) };
  }
  const { handle } = command;
  if (handle.kind === 'plan') return substrait(backend).executePlan(ctx, handle.statement);
  return backend.executeQuery(ctx, handle.statement);
}

/** Runs a statement for its effect (DoPut updates). */
export async function executeUpdate<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  handle: HandleStatement,
): Promise<number> {
  if (handle.kind === 'plan') return substrait(backend).executePlanUpdate(ctx, handle.statement);
  return backend.executeUpdate(ctx, handle.statement);
}

export function substrait<P>(backend: FlightSqlBackend<P>): NonNullable<FlightSqlBackend<P>['substrait']> {
  if (!backend.substrait) throw unimplemented('Substrait');
  return backend.substrait;
}

async function* single(batch: RecordBatch): AsyncGenerator<RecordBatch> {
  yield batch;
}

export type { PlanStatement, Statement };
