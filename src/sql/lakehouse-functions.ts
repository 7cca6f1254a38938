import { FlightSqlError } from '../flight/index.js';
import { allPartitions } from '../lakehouse/index.js';
import { quarantinedBlocks } from '../maintenance/index.js';
import { quoteIdentifier, quoteLiteral, schemaHash, storedDefinitions, type ViewSet } from '../views/index.js';
import type { DenyRules } from './deny-rules.js';
import type { Lakehouse } from './lakehouse-session.js';
import type { TableFunctionCall } from '../engine/index.js';

// Lakehouse table functions any key may call. Each becomes a temporary table macro on the
// statement's connection, so they compose with the rest of the query (WHERE, JOIN, ...).
// Rows of view_instance and process_spans come from the caller's audience-scoped view sets:
// a process of another audience looks exactly like one that does not exist.

export const readableFunctionNames: ReadonlySet<string> = new Set([
  'list_partitions',
  'list_view_sets',
  'list_view_set_definitions',
  'view_instance',
  'process_spans',
]);

/** Table functions only admins may call. */
export const adminFunctionNames: ReadonlySet<string> = new Set(['list_query_denials', 'list_quarantined_blocks']);

const invalid = (message: string): FlightSqlError => new FlightSqlError('INVALID_ARGUMENT', message);

/**
 * The view set names the calls read, as DuckDB parsed their constant arguments (so E'log\x5fentries'
 * is log_entries); null for a view_instance whose view set argument is not a constant.
 */
export function viewSetsNamedBy(calls: readonly TableFunctionCall[]): Array<string | null> {
  const out: Array<string | null> = [];
  for (const call of calls) {
    const name = call.name.toLowerCase();
    if (name === 'view_instance') out.push(typeof call.args[0] === 'string' ? call.args[0] : null);
    else if (name === 'process_spans') out.push('spans');
  }
  return out;
}

/** The view sets the calls read (they must be set up on the connection too). */
export function viewsReadBy(calls: readonly TableFunctionCall[], lakehouse: Lakehouse): ViewSet[] {
  return viewSetsNamedBy(calls).flatMap((name) => {
    if (name === null) throw invalid('view_instance: view_set must be a string literal');
    const view = lakehouse.views.get(name);
    if (view) return [view];
    if (name === 'spans') return [];
    throw invalid(`view_instance: view set '${name}' does not exist`);
  });
}

/** Setup statements defining the called functions as temporary table macros. */
export async function functionSetup(calls: readonly TableFunctionCall[], lakehouse: Lakehouse, denyRules?: DenyRules): Promise<string[]> {
  const statements: string[] = [];
  const seen = new Map<string, string>();
  for (const call of calls) {
    const name = call.name.toLowerCase();
    if (!readableFunctionNames.has(name) && !adminFunctionNames.has(name)) continue;
    const signature = JSON.stringify(call.args);
    if (seen.has(name)) {
      if (seen.get(name) !== signature) throw invalid(`${name} may be called with one set of arguments per statement`);
      continue;
    }
    seen.set(name, signature);
    statements.push(...(await define(name, call.args, lakehouse, denyRules)));
  }
  return statements;
}

async function define(name: string, args: unknown[], lakehouse: Lakehouse, denyRules?: DenyRules): Promise<string[]> {
  switch (name) {
    case 'list_query_denials': {
      arity(name, args, 0);
      const rows = (await denyRules?.list() ?? []).map((r) =>
        [String(r.ruleId), quoteLiteral(r.matchExpr), quoteLiteral(r.reason), `${quoteLiteral(r.createdAt)}::TIMESTAMPTZ`, r.createdBy === null ? 'NULL' : quoteLiteral(r.createdBy)].join(', '),
      );
      return table(name, 'rule_id BIGINT, match_expr VARCHAR, reason VARCHAR, created_at TIMESTAMPTZ, created_by VARCHAR', rows);
    }
    case 'list_quarantined_blocks': {
      arity(name, args, 0);
      const text = (value: string | null): string => (value === null ? 'NULL' : quoteLiteral(value));
      const rows = (await quarantinedBlocks(lakehouse.db)).map((q) =>
        [
          quoteLiteral(q.blockId),
          quoteLiteral(q.viewSetName),
          text(q.processId),
          text(q.streamId),
          text(q.audience),
          `make_timestamp_ns(${q.insertTime})`,
          quoteLiteral(q.error),
          quoteLiteral(q.orreryVersion),
          `${quoteLiteral(q.quarantinedAt.toISOString())}::TIMESTAMPTZ`,
        ].join(', '),
      );
      return table(
        name,
        'block_id VARCHAR, view_set_name VARCHAR, process_id VARCHAR, stream_id VARCHAR, audience VARCHAR, insert_time TIMESTAMP_NS, ' +
          'error VARCHAR, orrery_version VARCHAR, quarantined_at TIMESTAMPTZ',
        rows,
      );
    }
    case 'list_partitions': {
      arity(name, args, 0);
      const rows = (await allPartitions(lakehouse.db)).map((p) =>
        [
          quoteLiteral(p.viewSetName),
          quoteLiteral(p.viewInstanceId),
          `make_timestamp_ns(${p.beginInsertTime})`,
          `make_timestamp_ns(${p.endInsertTime})`,
          p.minEventTime === null ? 'NULL' : `make_timestamp_ns(${p.minEventTime})`,
          p.maxEventTime === null ? 'NULL' : `make_timestamp_ns(${p.maxEventTime})`,
          p.filePath === null ? 'NULL' : quoteLiteral(p.filePath),
          String(p.fileSize),
          `from_hex('${p.schemaHash.toString('hex')}')`,
          String(p.sourceCount),
          String(p.numRows),
        ].join(', '),
      );
      const columns =
        'view_set_name VARCHAR, view_instance_id VARCHAR, begin_insert_time TIMESTAMP_NS, end_insert_time TIMESTAMP_NS, ' +
        'min_event_time TIMESTAMP_NS, max_event_time TIMESTAMP_NS, file_path VARCHAR, file_size BIGINT, file_schema_hash BLOB, ' +
        'source_count BIGINT, num_rows BIGINT';
      return table(name, columns, rows);
    }
    case 'list_view_set_definitions': {
      arity(name, args, 0);
      const failures = lakehouse.loader?.failures ?? new Map<string, string>();
      const rows = (await storedDefinitions(lakehouse.db)).map((d) =>
        [
          quoteLiteral(d.name),
          quoteLiteral(d.definitionSql),
          quoteLiteral(d.extractQuery),
          quoteLiteral(d.countQuery),
          quoteLiteral(d.mergeQuery),
          String(d.updateGroup),
          `${quoteLiteral(d.createdAt.toISOString())}::TIMESTAMPTZ`,
          `${quoteLiteral(d.updatedAt.toISOString())}::TIMESTAMPTZ`,
          d.updatedBy === null ? 'NULL' : quoteLiteral(d.updatedBy),
          failures.has(d.name) ? quoteLiteral(failures.get(d.name)!) : 'NULL',
        ].join(', '),
      );
      return table(
        name,
        'view_set_name VARCHAR, definition_sql VARCHAR, extract_query VARCHAR, count_src_query VARCHAR, merge_partitions_query VARCHAR, ' +
          'update_group INTEGER, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, updated_by VARCHAR, load_error VARCHAR',
        rows,
      );
    }
    case 'list_view_sets': {
      arity(name, args, 0);
      const rows = lakehouse.views.all().map((v) =>
        [
          quoteLiteral(v.name),
          `from_hex('${schemaHash(v.columns).toString('hex')}')`,
          quoteLiteral(v.columns.map((c) => `${c.name} ${c.type}`).join(', ')),
          'false',
          'true',
          String(v.updateGroup),
        ].join(', '),
      );
      return table(
        name,
        'view_set_name VARCHAR, current_schema_hash BLOB, schema VARCHAR, has_view_maker BOOLEAN, global_instance_available BOOLEAN, update_group INTEGER',
        rows,
      );
    }
    case 'view_instance': {
      arity(name, args, 2);
      const [view, instance] = args as [string, unknown];
      if (typeof instance !== 'string') throw invalid('view_instance: instance_id must be a string literal');
      const filter = instance === 'global' ? '' : ` WHERE process_id = ${quoteLiteral(instance)}`;
      return [`CREATE OR REPLACE TEMP MACRO view_instance(__view_set, __instance_id) AS TABLE SELECT * FROM ${quoteIdentifier(view)}${filter}`];
    }
    case 'process_spans': {
      arity(name, args, 2);
      const [process, kind] = args;
      if (typeof process !== 'string') throw invalid('process_spans: process_id must be a string literal');
      if (kind !== 'thread' && kind !== 'async' && kind !== 'both') throw invalid(`process_spans: kind must be 'thread', 'async' or 'both'`);
      return [
        `CREATE OR REPLACE TEMP MACRO process_spans(__process_id, __kind) AS TABLE SELECT * FROM spans WHERE process_id = ${quoteLiteral(process)}`,
      ];
    }
    default:
      return [];
  }
}

function arity(name: string, args: unknown[], count: number): void {
  if (args.length !== count) throw invalid(`${name} takes ${count} argument(s), got ${args.length}`);
  if (args.some((a) => a === null)) throw invalid(`${name}: arguments must be literals`);
}

function table(name: string, columns: string, rows: string[]): string[] {
  const relation = `__${name}`;
  const statements = [`CREATE OR REPLACE TEMP TABLE ${relation} (${columns})`];
  for (let i = 0; i < rows.length; i += 500) {
    statements.push(`INSERT INTO ${relation} VALUES ${rows.slice(i, i + 500).map((r) => `(${r})`).join(', ')}`);
  }
  statements.push(`CREATE OR REPLACE TEMP MACRO ${name}() AS TABLE SELECT * FROM ${relation}`);
  return statements;
}
