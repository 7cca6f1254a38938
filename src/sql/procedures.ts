import { regardlessOfClient } from '../calls/index.js';
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
import type { DuckDBEngine, TableFunctionCall } from '../engine/index.js';
import { viewErrors } from '../views/index.js';
import { servedViewSets } from './lakehouse-functions.js';
import { sqlErrors } from './errors.js';
import { type Rollups } from '../rollups/index.js';
import { publishResources, pruneResources, type PublishContext, type PublishStep } from '../resources/index.js';

// Admin procedures: mutating lakehouse functions called as `SELECT * FROM f(...)`. They run
// in Orrery, not in DuckDB, and stream their progress as (time, msg) rows as they go.

export interface ProcedureContext {
  readonly lakehouse: Lakehouse;
  readonly materializer: Materializer;
  readonly retireDelaySeconds: number;
  /** MICROMEGAS_RETENTION_DAYS: a publication's backfill leaves out the partitions past it. */
  readonly retentionDays: number;
  readonly denyRules: DenyRules;
  /** Orrery's own DuckDB: it reaches the lake wherever it is. */
  readonly engine: DuckDBEngine;
}

/** Runs with the call's literal arguments and the caller's key name. */
type Run = (ctx: ProcedureContext, args: unknown[], caller: string) => AsyncGenerator<string>;

interface Procedure {
  readonly params: readonly string[];
  /** How many of the params must be given (the rest default to NULL); all of them when absent. */
  readonly required?: number;
  /** Arguments may be NULL (a typed null::interval, say). */
  readonly nullable?: boolean;
  /**
   * What the scalar form answers: its messages as text, one integer (32 bits), the name of the relation it made, or
   * nothing (void: one null, as Postgres answers one row for a void function; its messages stay in the table form).
   */
  readonly result?: 'integer' | 'regclass' | 'void';
  /**
   * Maintenance: long, each of its steps idempotent (a call sent again redoes nothing or the same), so what it did is
   * kept when its client gives up (regardlessOfClient). Every other procedure commits only while its client is there
   * (checkLive, at its transaction's COMMIT). docs/cancellation.md lists both.
   */
  readonly maintenance?: boolean;
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

function rollupsOf(ctx: ProcedureContext, fn: string): Rollups {
  if (!ctx.lakehouse.rollups)
    throw sqlErrors.error(
      'SERIES_TABLES_UNAVAILABLE',
      `${fn}: this server runs without series tables (see its start-up log)`,
    );
  return ctx.lakehouse.rollups;
}

const optionalText = (value: unknown): string | null =>
  value === null || value === undefined ? null : typeof value === 'string' ? value : JSON.stringify(value);

/** What a publication reaches through the lakehouse: its metadata, its store, the view sets it serves. */
export function publishContextOf({ lakehouse, engine, materializer, retentionDays }: ProcedureContext): PublishContext {
  return {
    retentionDays,
    lakeRows: (sql) => engine.values(sql),
    rewritePartition: (viewSet, filePath) => materializer.storeColumns(viewSet, filePath),
    db: lakehouse.db,
    store: lakehouse.store,
    viewSets: () => servedViewSets(lakehouse),
  };
}

const publishSteps: readonly PublishStep[] = ['plan', 'install', 'serve'];

const procedureList: Record<OrreryFunctionOf<'procedure'>, Procedure> = {
  retire_partitions: {
    params: ['view_set', 'instance', 'begin', 'end'],
    async *run(ctx, args) {
      const p = procedureList.retire_partitions.params;
      const view = text(args, 0, 'retire_partitions', p);
      const instance = text(args, 1, 'retire_partitions', p);
      const { begin, end } = range(args, 2, 'retire_partitions', p);
      const files = await ctx.materializer.retiring(async (tx) => {
        const retired = await retireInside(tx, view, instance, begin, end, ctx.retireDelaySeconds);
        return { result: retired, view, files: retired };
      });
      for (const file of files) yield `retired ${file}`;
      yield `retired ${files.length} partition file(s) of ${view}/${instance} in ${show(begin, end)}`;
    },
  },
  materialize_partitions: {
    params: ['view_name', 'begin', 'end', 'delta_seconds'],
    maintenance: true,
    async *run(ctx, args) {
      yield* materialize(ctx, args, 'materialize_partitions', false);
    },
  },
  regenerate_partitions: {
    params: ['view_name', 'begin', 'end', 'delta_seconds'],
    maintenance: true,
    async *run(ctx, args) {
      yield* materialize(ctx, args, 'regenerate_partitions', true);
    },
  },
  retire_partition_by_metadata: {
    // micromegas 0.32's helpers pass the partition's schema hash, which tells apart an old-schema
    // and a new-schema partition of the same range.
    params: ['view_set', 'instance', 'begin_insert_time', 'end_insert_time', 'file_schema_hash'],
    required: 4,
    async *run(ctx, args) {
      const p = procedureList.retire_partition_by_metadata.params;
      const view = text(args, 0, 'retire_partition_by_metadata', p);
      const instance = text(args, 1, 'retire_partition_by_metadata', p);
      const { begin, end } = range(args, 2, 'retire_partition_by_metadata', p);
      const hash = args.length > 4 ? blob(args, 4, 'retire_partition_by_metadata', p) : undefined;
      const retired = await ctx.materializer.retiring(async (tx) => {
        const files = await retireExactly(tx, view, instance, begin, end, ctx.retireDelaySeconds, hash);
        return { result: files !== null, view, files: files ?? [] };
      });
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
      const retired = await ctx.materializer.retiring(async (tx) => {
        const view = await retireFile(tx, path, ctx.retireDelaySeconds);
        return { result: view !== null, view, files: [path] };
      });
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
  create_rollup: {
    params: ['name', 'source', 'bucket', 'select_list', 'group_by', 'bucket_width'],
    required: 2,
    nullable: true,
    // The spec's RETURNS regclass: the view's name, typed so for clients that read a column's SQL type.
    result: 'regclass',
    async *run(ctx, args) {
      const p = procedureList.create_rollup.params;
      const rollups = rollupsOf(ctx, 'create_rollup');
      yield await rollups.create({
        name: text(args, 0, 'create_rollup', p),
        source: text(args, 1, 'create_rollup', p),
        bucket: optionalText(args[2]),
        selectList: optionalText(args[3]),
        groupBy: optionalText(args[4]),
        bucketWidth: optionalText(args[5]),
      });
    },
  },
  refresh_rollup: {
    params: ['rollup'],
    maintenance: true,
    result: 'integer',
    async *run(ctx, args) {
      const rollups = rollupsOf(ctx, 'refresh_rollup');
      const name = text(args, 0, 'refresh_rollup', procedureList.refresh_rollup.params);
      yield String((await rollups.refresh(name)).ranges);
    },
  },
  drop_rollup: {
    params: ['rollup'],
    async *run(ctx, args) {
      const rollups = rollupsOf(ctx, 'drop_rollup');
      const name = text(args, 0, 'drop_rollup', procedureList.drop_rollup.params);
      yield `dropped ${await rollups.drop(name)}`;
    },
  },
  set_rollup_retention: {
    params: ['rollup', 'keep'],
    nullable: true,
    // The spec's RETURNS void.
    result: 'void',
    async *run(ctx, args) {
      const rollups = rollupsOf(ctx, 'set_rollup_retention');
      const name = text(args, 0, 'set_rollup_retention', procedureList.set_rollup_retention.params);
      yield await rollups.setRetention(name, args[1] ?? null);
    },
  },
  publish_resources: {
    // lock_token: the CLI's, the same for a publication's install and serve steps (the lock is held between them).
    params: ['publication', 'step', 'lock_token'],
    required: 2,
    // Resumable: a publication sent again installs what is missing and re-points names.
    maintenance: true,
    run(ctx, args, caller) {
      const p = procedureList.publish_resources.params;
      const step = text(args, 1, 'publish_resources', p) as PublishStep;
      if (!publishSteps.includes(step))
        throw invalid(`publish_resources: argument step must be one of ${publishSteps.join(', ')}`);
      const token = args[2] === undefined || args[2] === null ? undefined : text(args, 2, 'publish_resources', p);
      return publishResources(publishContextOf(ctx), text(args, 0, 'publish_resources', p), step, caller, token);
    },
  },
  prune_resources: {
    params: ['dry_run'],
    maintenance: true,
    run(ctx, args, caller) {
      // Constant arguments arrive as DuckDB's text of them: a boolean is 't' or 'f'.
      const dryRun = String(args[0]).toLowerCase();
      if (!['t', 'f', 'true', 'false'].includes(dryRun))
        throw invalid('prune_resources: argument dry_run must be true or false');
      return pruneResources(publishContextOf(ctx), dryRun.startsWith('t'), caller);
    },
  },
  set_job_schedule: {
    params: ['rollup', 'schedule'],
    async *run(ctx, args) {
      const rollups = rollupsOf(ctx, 'set_job_schedule');
      const name = text(args, 0, 'set_job_schedule', procedureList.set_job_schedule.params);
      yield await rollups.setSchedule(name, args[1]);
    },
  },
  retry_quarantined_blocks: {
    params: [],
    maintenance: true,
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
    maintenance: true,
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
  // Forced, a step inside a wider partition rebuilds the whole span of the partitions around it: the steps after
  // it inside that span were rebuilt with it, so each wide partition is rebuilt once per call, not once per step.
  let rebuilt: { begin: bigint; end: bigint } | null = null;
  for (let b = begin; b < end; b += step) {
    const e = b + step < end ? b + step : end;
    if (rebuilt && e <= rebuilt.end) {
      yield `${view.name} ${show(b, e)}: created with ${show(rebuilt.begin, rebuilt.end)}`;
      continue;
    }
    const { outcome, span } = await ctx.materializer.materializeNow(view, { begin: b, end: e }, force);
    if (force && outcome === 'created') rebuilt = span;
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

/** What the scalar form of a procedure call answers: text, one integer, or a relation's name (as Postgres's regclass). */
export function procedureResult(call: TableFunctionCall): 'text' | NonNullable<Procedure['result']> {
  return procedureOf(call)?.result ?? 'text';
}

/**
 * A call's arguments in the procedure's order: positional ones first, then named ones
 * (`select_list => '...'`, DuckDB's parse tree keeps the name as the argument's alias).
 */
function bindArguments(call: TableFunctionCall, procedure: Procedure): unknown[] {
  const { params } = procedure;
  const required = procedure.required ?? params.length;
  const bound: unknown[] = new Array<unknown>(params.length).fill(undefined);
  const arity = (): string =>
    `${call.name} takes ${required === params.length ? '' : `${required} to `}${params.length} argument(s) (${params.join(', ')}), got ${call.args.length}`;
  let named = false;
  call.args.forEach((value, i) => {
    const written = (call.argTrees[i] as { alias?: unknown } | undefined)?.alias;
    const alias = typeof written === 'string' ? written : '';
    if (alias === '') {
      if (named) throw invalid(`${call.name}: positional arguments come before named ones`);
      if (i >= params.length) throw invalid(arity());
      bound[i] = value;
      return;
    }
    named = true;
    const index = params.indexOf(alias.toLowerCase());
    if (index < 0) throw invalid(`${call.name} has no argument named ${alias} (it takes ${params.join(', ')})`);
    if (bound[index] !== undefined) throw invalid(`${call.name}: argument ${params[index]} is given twice`);
    bound[index] = value;
  });
  const missing = params.slice(0, required).filter((_, i) => bound[i] === undefined);
  if (missing.length > 0 || (required === params.length && call.args.length !== params.length)) throw invalid(arity());
  if (!procedure.nullable && bound.some((a) => a === null))
    throw invalid(`${call.name}: arguments must be constant and not NULL`);
  // Up to the last argument given: a procedure can tell a left-out trailing argument by the count.
  const given = bound.length - [...bound].reverse().findIndex((v) => v !== undefined);
  return bound.slice(0, given > bound.length ? 0 : given).map((v) => (v === undefined ? null : v));
}

/** Runs a procedure with its literal arguments, checking their count. */
export function runProcedure(ctx: ProcedureContext, call: TableFunctionCall, caller: string): AsyncGenerator<string> {
  const procedure = procedureOf(call)!;
  const steps = procedure.run(ctx, bindArguments(call, procedure), caller);
  return procedure.maintenance ? regardlessOfClient(steps) : steps;
}
