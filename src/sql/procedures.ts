import type { OrreryError } from '../errors/index.js';
import { notRfc3339, parseRfc3339Nanos } from '../flight/index.js';
import {
  allPartitions,
  nanosToIso,
  retireExactly,
  retireFile,
  retireInside,
  retirePartition,
  secondsToNanos,
} from '../lakehouse/index.js';
import type { Materializer } from '../maintenance/index.js';
import { orreryFunctionKind, schemaHash, type OrreryFunctionOf } from '../views/index.js';
import type { DenyRules } from './deny-rules.js';
import type { Lakehouse } from './lakehouse-session.js';
import type { TableFunctionCall } from '../engine/index.js';
import { viewErrors } from '../views/index.js';
import { sqlErrors } from './errors.js';

// Admin procedures: mutating lakehouse functions called as `SELECT * FROM f(...)`. They run
// in Orrery, not in DuckDB, and stream their progress as (time, msg) rows as they go.

export interface ProcedureContext {
  readonly lakehouse: Lakehouse;
  readonly materializer: Materializer;
  readonly retireDelaySeconds: number;
  readonly denyRules: DenyRules;
}

/** Runs with the call's literal arguments and the caller's key name. */
type Run = (ctx: ProcedureContext, args: unknown[], caller: string) => AsyncGenerator<string>;

interface Procedure {
  readonly params: readonly string[];
  /** How many of the last params may be left out. */
  readonly optional?: number;
  readonly run: Run;
}

const invalid = (message: string): OrreryError => sqlErrors.error('FUNCTION_ARGUMENT_INVALID', message);

function text(args: unknown[], index: number, fn: string, params: readonly string[]): string {
  const value = args[index];
  if (typeof value !== 'string' || value === '')
    throw invalid(`${fn}: argument ${params[index]} must be a non-empty string literal`);
  return value;
}

function time(args: unknown[], index: number, fn: string, params: readonly string[]): bigint {
  const value = text(args, index, fn, params);
  const withTime = /^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value;
  const nanos = parseRfc3339Nanos(withTime);
  if (nanos === null) throw invalid(notRfc3339(`${fn} argument ${params[index]}`, withTime));
  return nanos;
}

/** A BLOB argument, from DuckDB's text form of it (bytes outside printable ASCII, `\` and `'` as `\xHH`). */
function blob(args: unknown[], index: number, fn: string, params: readonly string[]): Buffer {
  const value = args[index];
  if (typeof value !== 'string') throw invalid(`${fn}: argument ${params[index]} must be a BLOB`);
  const bytes: number[] = [];
  for (const [, hex, char] of value.matchAll(/\\x([0-9A-Fa-f]{2})|([\s\S])/g)) {
    if (hex !== undefined) bytes.push(parseInt(hex, 16));
    else if (char.charCodeAt(0) <= 0x7e) bytes.push(char.charCodeAt(0));
    else throw invalid(`${fn}: argument ${params[index]} must be a BLOB`);
  }
  return Buffer.from(bytes);
}

function seconds(args: unknown[], index: number, fn: string, params: readonly string[]): number {
  const value = Number(args[index]);
  if (!Number.isInteger(value) || value <= 0)
    throw invalid(`${fn}: argument ${params[index]} must be a positive number of seconds`);
  return value;
}

function range(args: unknown[], first: number, fn: string, params: readonly string[]): { begin: bigint; end: bigint } {
  const begin = time(args, first, fn, params);
  const end = time(args, first + 1, fn, params);
  if (end <= begin) throw invalid(`${fn}: ${params[first + 1]} must be after ${params[first]}`);
  return { begin, end };
}

function viewSetOf(ctx: ProcedureContext, name: string, fn: string) {
  const view = ctx.lakehouse.views.get(name);
  if (!view) throw viewErrors.error('VIEW_SET_NOT_FOUND', `${fn}: view set '${name}' does not exist`);
  return view;
}

const show = (b: bigint, e: bigint): string => `[${nanosToIso(b)}, ${nanosToIso(e)})`;

const procedureList: Record<OrreryFunctionOf<'procedure'>, Procedure> = {
  retire_partitions: {
    params: ['view_set', 'instance', 'begin', 'end'],
    async *run(ctx, args) {
      const p = procedureList.retire_partitions.params;
      const view = text(args, 0, 'retire_partitions', p);
      const instance = text(args, 1, 'retire_partitions', p);
      const { begin, end } = range(args, 2, 'retire_partitions', p);
      const files = await retireInside(ctx.lakehouse.db, view, instance, begin, end, ctx.retireDelaySeconds);
      for (const file of files) yield `retired ${file}`;
      yield `retired ${files.length} partition file(s) of ${view}/${instance} in ${show(begin, end)}`;
    },
  },
  materialize_partitions: {
    params: ['view_name', 'begin', 'end', 'delta_seconds'],
    async *run(ctx, args) {
      yield* materialize(ctx, args, 'materialize_partitions', false);
    },
  },
  regenerate_partitions: {
    params: ['view_name', 'begin', 'end', 'delta_seconds'],
    async *run(ctx, args) {
      yield* materialize(ctx, args, 'regenerate_partitions', true);
    },
  },
  retire_partition_by_metadata: {
    // micromegas 0.32's helpers pass the partition's schema hash, which tells apart an old-schema
    // and a new-schema partition of the same range.
    params: ['view_set', 'instance', 'begin_insert_time', 'end_insert_time', 'file_schema_hash'],
    optional: 1,
    async *run(ctx, args) {
      const p = procedureList.retire_partition_by_metadata.params;
      const view = text(args, 0, 'retire_partition_by_metadata', p);
      const instance = text(args, 1, 'retire_partition_by_metadata', p);
      const { begin, end } = range(args, 2, 'retire_partition_by_metadata', p);
      const hash = args.length > 4 ? blob(args, 4, 'retire_partition_by_metadata', p) : undefined;
      const retired = await retireExactly(ctx.lakehouse.db, view, instance, begin, end, ctx.retireDelaySeconds, hash);
      if (!retired) {
        throw sqlErrors.error(
          'PARTITION_NOT_FOUND',
          `no partition of ${view}/${instance} covers exactly ${show(begin, end)}`,
        );
      }
      yield `SUCCESS: retired the partition of ${view}/${instance} ${show(begin, end)}`;
    },
  },
  retire_partition_by_file: {
    params: ['file_path'],
    async *run(ctx, args) {
      const path = text(args, 0, 'retire_partition_by_file', procedureList.retire_partition_by_file.params);
      const retired = await retireFile(ctx.lakehouse.db, path, ctx.retireDelaySeconds);
      if (!retired) throw sqlErrors.error('PARTITION_NOT_FOUND', `no partition has the file ${path}`);
      yield `SUCCESS: retired ${path}`;
    },
  },
  deny_queries: {
    params: ['match_expr', 'reason'],
    async *run(ctx, args, caller) {
      const p = procedureList.deny_queries.params;
      const ruleId = await ctx.denyRules.add(
        text(args, 0, 'deny_queries', p),
        text(args, 1, 'deny_queries', p),
        caller,
      );
      yield `added rule ${ruleId}`;
    },
  },
  remove_query_denial: {
    params: ['rule_id'],
    async *run(ctx, args) {
      const ruleId = Number(args[0]);
      if (!Number.isInteger(ruleId)) throw invalid('remove_query_denial: rule_id must be an integer');
      if (!(await ctx.denyRules.remove(ruleId))) {
        throw sqlErrors.error('DENY_RULE_NOT_FOUND', `remove_query_denial: no rule ${ruleId}`);
      }
      yield `removed rule ${ruleId}`;
    },
  },
  set_retention: {
    params: ['table', 'keep'],
    async *run(ctx, args) {
      const p = procedureList.set_retention.params;
      const tables = ctx.lakehouse.tables;
      if (!tables)
        throw sqlErrors.error(
          'SERIES_TABLES_UNAVAILABLE',
          'set_retention: this server runs without series tables (see its start-up log)',
        );
      const keep = args[1];
      if (typeof keep !== 'string' && typeof keep !== 'number' && typeof keep !== 'bigint') {
        throw invalid(
          `set_retention: argument ${p[1]} must be an interval text ('30 days'), a count for integer time, or 'forever'`,
        );
      }
      yield await tables.setRetention(text(args, 0, 'set_retention', p), keep === 'forever' ? null : keep);
    },
  },
  retry_quarantined_blocks: {
    params: [],
    async *run(ctx) {
      let any = false;
      for await (const line of ctx.materializer.retryQuarantined(ctx.lakehouse.views.all())) {
        any = true;
        yield line;
      }
      if (!any) yield 'no quarantined blocks';
    },
  },
  retire_incompatible_partitions: {
    params: [],
    async *run(ctx) {
      let retired = 0;
      for (const partition of await allPartitions(ctx.lakehouse.db)) {
        const view = ctx.lakehouse.views.get(partition.viewSetName);
        if (!view || schemaHash(view.columns).equals(partition.schemaHash)) continue;
        if (!(await retirePartition(ctx.lakehouse.db, partition, ctx.retireDelaySeconds))) continue;
        retired++;
        yield `retired ${partition.viewSetName}/${partition.viewInstanceId} ${show(partition.beginInsertTime, partition.endInsertTime)} (schema hash ${partition.schemaHash.toString('hex')})`;
      }
      yield `retired ${retired} incompatible partition(s)`;
    },
  },
};

async function* materialize(
  ctx: ProcedureContext,
  args: unknown[],
  fn: 'materialize_partitions' | 'regenerate_partitions',
  force: boolean,
): AsyncGenerator<string> {
  const params = procedureList[fn].params;
  const view = viewSetOf(ctx, text(args, 0, fn, params), fn);
  const { begin, end } = range(args, 1, fn, params);
  const delta = seconds(args, 3, fn, params);
  const step = secondsToNanos(delta);
  if (force && (end - begin) % step !== 0n)
    throw invalid(`${fn}: delta_seconds (${delta}) must divide the range exactly`);
  for (let b = begin; b < end; b += step) {
    const e = b + step < end ? b + step : end;
    const outcome = await ctx.materializer.materialize(view, { begin: b, end: e }, force);
    yield `${view.name} ${show(b, e)}: ${outcome}`;
  }
}

/** Whether a table function call names an admin procedure (also as micromegas.admin.<name>). */
export function procedureOf(call: TableFunctionCall): Procedure | undefined {
  const qualified =
    call.catalog === '' && call.schema === '' ? true : call.catalog === 'micromegas' && call.schema === 'admin';
  return qualified && orreryFunctionKind(call.name) === 'procedure'
    ? procedureList[call.name.toLowerCase() as OrreryFunctionOf<'procedure'>]
    : undefined;
}

/** Runs a procedure with its literal arguments, checking their count. */
export function runProcedure(ctx: ProcedureContext, call: TableFunctionCall, caller: string): AsyncGenerator<string> {
  const procedure = procedureOf(call)!;
  const { params, optional = 0 } = procedure;
  if (call.args.length > params.length || call.args.length < params.length - optional) {
    const count = optional ? `${params.length - optional} to ${params.length}` : String(params.length);
    throw invalid(`${call.name} takes ${count} argument(s) (${params.join(', ')}), got ${call.args.length}`);
  }
  if (call.args.some((a) => a === null)) throw invalid(`${call.name}: arguments must be constant and not NULL`);
  return procedure.run(ctx, call.args, caller);
}
