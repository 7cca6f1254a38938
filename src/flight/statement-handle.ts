import protobuf from 'protobufjs';
import { RecordBatchReader, Table, tableToIPC } from 'apache-arrow';
import { invalidArgument } from './errors.js';
import type { PlanStatement, Statement } from './backend.js';

// Statement and prepared-statement handles carry the whole statement: query text (or
// Substrait plan), transaction id and bound parameters; a bare query is its own text. The server needs no per-statement
// state, so a handle works on any server of a deployment and nothing leaks when a client
// never closes its statement. A handle is no more powerful than the text it carries,
// which the client could have sent as a query anyway. A statement's ticket may also carry the
// id of the plan GetFlightInfo made, which only saves planning it again where that plan is.

// A handle opens with the length-delimited field "orq\x01" (bytes 04 6f 72 71 01).
const magic = new Uint8Array([0x6f, 0x72, 0x71, 0x01]);

export type HandleStatement = { kind: 'sql'; statement: Statement } | { kind: 'plan'; statement: PlanStatement };

export function encodeHandle(handle: HandleStatement): Uint8Array {
  // A statement that is nothing but its text is sent as the text, as micromegas's server does:
  // its Python client runs a prepared statement by sending the handle back as the query.
  const { transactionId, parameters, planId } = handle.statement as Statement;
  if (handle.kind === 'sql' && !transactionId && !parameters && !planId) {
    const text = new TextEncoder().encode(handle.statement.query);
    if (!startsWithMagic(text)) return text;
  }
  const writer = protobuf.Writer.create();
  writer.bytes(magic);
  if (handle.kind === 'sql') writer.uint32(10).string(handle.statement.query);
  else writer.uint32(34).bytes(handle.statement.plan.plan).uint32(42).string(handle.statement.plan.version);
  if (handle.statement.transactionId) writer.uint32(18).bytes(handle.statement.transactionId);
  if (handle.statement.parameters) writer.uint32(26).bytes(tableToIPC(handle.statement.parameters, 'stream'));
  if (handle.kind === 'sql' && handle.statement.planId) writer.uint32(50).bytes(handle.statement.planId);
  return writer.finish();
}

/**
 * Reads a handle. Bytes that are not one of ours are taken as SQL text: micromegas clients
 * build TicketStatementQuery tickets whose handle is the query itself.
 */
export function decodeHandle(bytes: Uint8Array): HandleStatement {
  if (!startsWithMagic(bytes)) return { kind: 'sql', statement: { query: new TextDecoder().decode(bytes) } };
  try {
    const reader = protobuf.Reader.create(bytes);
    reader.bytes();
    let query: string | undefined;
    let plan: Uint8Array | undefined;
    let version = '';
    let transactionId: Uint8Array | undefined;
    let parameters: Table | undefined;
    let planId: Uint8Array | undefined;
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag === 10) query = reader.string();
      else if (tag === 18) transactionId = reader.bytes();
      else if (tag === 26) parameters = readParameters(reader.bytes());
      else if (tag === 34) plan = reader.bytes();
      else if (tag === 42) version = reader.string();
      else if (tag === 50) planId = reader.bytes();
      else reader.skipType(tag & 7);
    }
    if (plan) return { kind: 'plan', statement: { plan: { plan, version }, transactionId, parameters } };
    return { kind: 'sql', statement: { query: query ?? '', transactionId, parameters, planId } };
  } catch {
    throw invalidArgument('malformed statement handle');
  }
}

function startsWithMagic(bytes: Uint8Array): boolean {
  return (
    bytes.byteLength > magic.byteLength && magic.every((b, i) => bytes[i + 1] === b) && bytes[0] === magic.byteLength
  );
}

function readParameters(ipc: Uint8Array): Table {
  const copy = new Uint8Array(ipc.byteLength);
  copy.set(ipc);
  const reader = RecordBatchReader.from(copy);
  reader.open();
  return new Table(reader.schema, [...reader]);
}
