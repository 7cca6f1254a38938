import type { OrreryError } from '../errors/index.js';
import { sqlErrors } from './errors.js';
import { allPartitions, lostPartitions, quarantinedPartitions, type Partition } from '../lakehouse/index.js';
import { blockRecords, failedAudiences, quarantinedBlocks } from '../maintenance/index.js';
import {
  instanceView,
  instanceViews,
  orreryFunctionKind,
  perfettoTraceRelation,
  processSpansRelation,
  quoteIdentifier,
  quoteLiteral,
  schemaHash,
  scopedFileSummary,
  storedDefinitions,
  type ReadScope,
  type ViewSet,
} from '../views/index.js';
import type { DenyRules } from './deny-rules.js';
import { processAudiencesFor, type Lakehouse } from './lakehouse-session.js';
import type { TableFunctionCall } from '../engine/index.js';
import type { RollupReadPoint } from '../rollups/index.js';
import type { ExplainedReads } from './resource-reads.js';
import { ledgerRows, planOmissions, resourceDrift, type ServerViewSet } from '../resources/index.js';

// Lakehouse table functions any key may call. Each becomes a temporary table macro on the
// statement's connection, so they compose with the rest of the query (WHERE, JOIN, ...).
// Rows of view_instance and process_spans come from the caller's audience-scoped view sets:
// a process of another audience looks exactly like one that does not exist.

/** The view sets and series tables a server serves, as resources files name their tables. */
export async function servedViewSets(lakehouse: Lakehouse): Promise<ServerViewSet[]> {
  return [
    ...lakehouse.views.all().map((v) => ({ name: v.name, columns: v.columns, loadError: null })),
    ...[...((await lakehouse.tables?.list())?.values() ?? [])].map((t) => ({
      name: t.name,
      columns: t.columns,
      loadError: null,
    })),
  ];
}

/** Whether a call names a lakehouse table function (any key's or an admin's), defined per statement below. */
export const isLakehouseFunction = (call: TableFunctionCall): boolean => {
  const kind = orreryFunctionKind(call.name);
  return kind === 'table' || kind === 'admin table';
};

const invalid = (message: string): OrreryError => sqlErrors.error('FUNCTION_ARGUMENT_INVALID', message);

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
    else if (name === 'perfetto_trace_chunks') out.push('spans');
  }
  return out;
}

/** The view sets the calls read (they must be set up on the connection too). */
export function viewsReadBy(calls: readonly TableFunctionCall[], lakehouse: Lakehouse): ViewSet[] {
  return viewSetsNamedBy(calls).flatMap((name) => {
    if (name === null) throw invalid('view_instance: view_set must be a string literal');
    // The instance-only sets (thread_spans, ...) read the caller's spans.
    const view = lakehouse.views.get(instanceView(name) ? 'spans' : name);
    if (view) return [view];
    if (name === 'spans' || name === 'processes') return [];
    throw invalid(`view_instance: view set '${name}' does not exist`);
  });
}

/** Of these relations (lower case), those the caller may not read; null when it may read them all. */
export type RefusedReads = (names: readonly string[]) => Promise<ReadonlySet<string> | null>;

/** Setup statements defining the called functions as temporary table macros. */
export async function functionSetup(
  calls: readonly TableFunctionCall[],
  lakehouse: Lakehouse,
  scope: ReadScope,
  denyRules?: DenyRules,
  /** explain_resources: what a statement would read, planned for the caller without running it. */
  explain?: (sql: string) => Promise<ExplainedReads>,
  /**
   * Of these relations (lower case), those the caller may not read (a deny rule refuses it a statement reading
   * one alone): the listings leave them out. Null when none are.
   */
  refusedReads?: RefusedReads,
  /** Where list_rollups reads the rollups (a client's transaction's point, see Rollups.readPoint); the latest when none. */
  rollupPoint?: () => Promise<RollupReadPoint>,
): Promise<string[]> {
  const statements: string[] = [];
  const seen = new Map<string, string>();
  for (const call of calls) {
    if (!isLakehouseFunction(call)) continue;
    const name = call.name.toLowerCase();
    const signature = JSON.stringify(call.args);
    if (seen.has(name)) {
      if (seen.get(name) !== signature) throw invalid(`${name} may be called with one set of arguments per statement`);
      continue;
    }
    seen.set(name, signature);
    statements.push(
      ...(await define(name, call.args, lakehouse, scope, denyRules, explain, refusedReads, rollupPoint)),
    );
  }
  return statements;
}

async function define(
  name: string,
  args: unknown[],
  lakehouse: Lakehouse,
  scope: ReadScope,
  denyRules?: DenyRules,
  explain?: (sql: string) => Promise<ExplainedReads>,
  refusedReads: RefusedReads = async () => null,
  rollupPoint?: () => Promise<RollupReadPoint>,
): Promise<string[]> {
  // The rows of a listing naming a relation the caller may not read are left out (see functionSetup).
  const readable = async <T>(rows: readonly T[], nameOf: (row: T) => string): Promise<T[]> => {
    const refused = await refusedReads([...new Set(rows.map((r) => nameOf(r).toLowerCase()))]);
    return refused ? rows.filter((r) => !refused.has(nameOf(r).toLowerCase())) : [...rows];
  };
  switch (name) {
    case 'validate_rollups': {
      if (args.length > 2 || args.some((a) => a === null))
        throw invalid(
          "validate_rollups takes at most two arguments: the longest window as text, such as '1 hour', and the time whose bucket ends it",
        );
      const checks =
        (await lakehouse.rollups?.validate(
          args.length === 0 ? '1 hour' : String(args[0]),
          args.length === 2 ? String(args[1]) : undefined,
        )) ?? [];
      return table(
        name,
        'rollup VARCHAR, status VARCHAR, window_from TIMESTAMP, window_to TIMESTAMP, buckets BIGINT, detail VARCHAR',
        checks.map((c) =>
          [
            quoteLiteral(c.rollup),
            quoteLiteral(c.status),
            text(c.from),
            text(c.to),
            String(c.buckets),
            text(c.detail),
          ].join(', '),
        ),
        args.length,
      );
    }
    case 'explain_resources': {
      arity(name, args, 1);
      if (typeof args[0] !== 'string' || !explain) throw invalid('explain_resources: give the statement as a string');
      const explained = await explain(args[0]);
      // Resources other than rollups belong to no level; `rollup` holds their entry key.
      const rows = [
        ...explained.resources.flatMap((level) => [
          ...(level.rollup ? [[level.level, level.table, level.rollup.name, level.rollup.grain, 'read', null]] : []),
          ...level.skipped_rollup.map((s) => [level.level, level.table, s.name, s.grain, 'skipped', s.reason]),
        ]),
        ...explained.stored_columns.map((c) => [null, c.table, c.entry, null, c.use, c.reason ?? `reads ${c.column}`]),
        ...explained.pruned.map((p) => [null, p.table, p.index, null, 'pruned', `partition ${p.partition}`]),
        // A latest-n top-N's first run leaves them out: it runs again over them only when the newest give fewer than n.
        ...explained.bounded.map((p) => [null, p.table, null, null, 'bounded', `partition ${p.partition}`]),
        ...explained.projections.map((p) => [
          null,
          p.table,
          p.projection,
          null,
          'projection',
          'reads its sorted copies',
        ]),
      ];
      return table(
        name,
        'level VARCHAR, "table" VARCHAR, rollup VARCHAR, grain VARCHAR, decision VARCHAR, reason VARCHAR',
        rows.map((r) => r.map(text).join(', ')),
        1,
      );
    }
    case 'list_query_denials': {
      arity(name, args, 0);
      const rows = ((await denyRules?.list()) ?? []).map((r) =>
        [
          String(r.ruleId),
          quoteLiteral(r.matchExpr),
          quoteLiteral(r.reason),
          `${quoteLiteral(r.createdAt)}::TIMESTAMPTZ`,
          text(r.createdBy),
        ].join(', '),
      );
      return table(
        name,
        'rule_id BIGINT, match_expr VARCHAR, reason VARCHAR, created_at TIMESTAMPTZ, created_by VARCHAR',
        rows,
      );
    }
    case 'list_quarantined_blocks': {
      arity(name, args, 0);
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
    case 'parse_block': {
      arity(name, args, 1);
      const blockId = String(args[0]).toLowerCase();
      // A block of an audience the key cannot read looks exactly like one that does not exist.
      const audiences = scope.kind === 'audiences' ? scope.audiences : null;
      const block = uuidPattern.test(blockId)
        ? await blockRecords(lakehouse.db, lakehouse.store, blockId, audiences)
        : null;
      if (!block) throw sqlErrors.error('BLOCK_NOT_FOUND', `parse_block: block '${String(args[0])}' not found`);
      if (block.lines === null)
        throw sqlErrors.error(
          'BLOCK_PAYLOAD_MISSING',
          `parse_block: the payload of block '${blockId}' is gone from the object store`,
        );
      const rows = block.lines.map((line, index) => {
        const typeName = recordTypeName(block.format, line);
        const value = `{"__type":${JSON.stringify(typeName)},"__resource":${block.resource},${line.slice(1)}`;
        return `${index}, ${quoteLiteral(typeName)}, ${quoteLiteral(value)}::JSON`;
      });
      return table(name, 'object_index BIGINT, type_name VARCHAR, value JSON', rows, 1);
    }
    case 'list_quarantined_partitions': {
      arity(name, args, 0);
      const rows = (await quarantinedPartitions(lakehouse.db)).map((q) =>
        [
          quoteLiteral(q.filePath),
          quoteLiteral(q.viewSetName),
          quoteLiteral(q.viewInstanceId),
          `make_timestamp_ns(${q.beginInsertTime})`,
          `make_timestamp_ns(${q.endInsertTime})`,
          String(q.numRows),
          quoteLiteral(q.error),
          quoteLiteral(q.orreryVersion),
          `${quoteLiteral(q.quarantinedAt.toISOString())}::TIMESTAMPTZ`,
        ].join(', '),
      );
      return table(
        name,
        'file_path VARCHAR, view_set_name VARCHAR, view_instance_id VARCHAR, begin_insert_time TIMESTAMP_NS, ' +
          'end_insert_time TIMESTAMP_NS, num_rows BIGINT, error VARCHAR, orrery_version VARCHAR, quarantined_at TIMESTAMPTZ',
        rows,
      );
    }
    case 'list_failed_audiences': {
      arity(name, args, 0);
      // Each error quotes the rows of its own audience alone (its sources were limited to it): a key reads its own.
      const audiences = scope.kind === 'audiences' ? scope.audiences : null;
      const rows = (await readable(await failedAudiences(lakehouse.db, audiences), (f) => f.viewSetName)).map((f) =>
        [
          quoteLiteral(f.viewSetName),
          `make_timestamp_ns(${f.range.begin})`,
          `make_timestamp_ns(${f.range.end})`,
          text(f.audience),
          quoteLiteral(f.error),
          quoteLiteral(f.orreryVersion),
          `${quoteLiteral(f.failedAt.toISOString())}::TIMESTAMPTZ`,
        ].join(', '),
      );
      return table(
        name,
        'view_set_name VARCHAR, begin_insert_time TIMESTAMP_NS, end_insert_time TIMESTAMP_NS, audience VARCHAR, ' +
          'error VARCHAR, orrery_version VARCHAR, failed_at TIMESTAMPTZ',
        rows,
      );
    }
    case 'list_lost_partitions': {
      arity(name, args, 0);
      const rows = (await lostPartitions(lakehouse.db)).map(({ partition: p, error, lostAt }) =>
        [
          quoteLiteral(p.filePath ?? ''),
          quoteLiteral(p.viewSetName),
          quoteLiteral(p.viewInstanceId),
          `make_timestamp_ns(${p.beginInsertTime})`,
          `make_timestamp_ns(${p.endInsertTime})`,
          String(p.numRows),
          quoteLiteral(error),
          `${quoteLiteral(lostAt.toISOString())}::TIMESTAMPTZ`,
        ].join(', '),
      );
      return table(
        name,
        'file_path VARCHAR, view_set_name VARCHAR, view_instance_id VARCHAR, begin_insert_time TIMESTAMP_NS, ' +
          'end_insert_time TIMESTAMP_NS, num_rows BIGINT, error VARCHAR, lost_at TIMESTAMPTZ',
        rows,
      );
    }
    case 'resource_ledger': {
      arity(name, args, 0);
      const time = (value: Date | null): string =>
        value === null ? 'NULL' : `${quoteLiteral(value.toISOString())}::TIMESTAMPTZ`;
      const rows = (await ledgerRows(lakehouse.db)).map((r) =>
        [
          quoteLiteral(r.physicalTable),
          quoteLiteral(r.entryKey),
          quoteLiteral(r.kind),
          quoteLiteral(r.hash),
          quoteLiteral(r.prunedAt ? 'pruned' : r.retiredAt ? 'retired' : r.state),
          r.publicationId === null ? 'NULL' : String(r.publicationId),
          time(r.cutover),
          time(r.backfilledBegin),
          time(r.backfilledEnd),
          time(r.retiredAt),
          time(r.pruneAfter),
          time(r.prunedAt),
          text(r.detail),
          quoteLiteral(JSON.stringify(r.declaration)),
        ].join(', '),
      );
      return table(
        name,
        'physical_table VARCHAR, entry_key VARCHAR, kind VARCHAR, hash VARCHAR, state VARCHAR, publication_id BIGINT, ' +
          'cutover TIMESTAMPTZ, backfilled_begin TIMESTAMPTZ, backfilled_end TIMESTAMPTZ, retired_at TIMESTAMPTZ, ' +
          'prune_after TIMESTAMPTZ, pruned_at TIMESTAMPTZ, detail VARCHAR, declaration VARCHAR',
        rows,
      );
    }
    case 'resource_omissions': {
      arity(name, args, 1);
      if (typeof args[0] !== 'string')
        throw invalid('resource_omissions: give the publication as a string: {"files": {"<path>": "<text>", …}}');
      const omissions = await planOmissions({ viewSets: () => servedViewSets(lakehouse) }, args[0], lakehouse.db);
      return table(
        name,
        'file VARCHAR, entry_key VARCHAR, kind VARCHAR, physical_table VARCHAR, reason VARCHAR',
        omissions.map((o) => [o.file, o.entryKey, o.kind, o.physicalTable, o.reason].map(quoteLiteral).join(', ')),
        1,
      );
    }
    case 'resource_drift': {
      arity(name, args, 0);
      const rows = (await resourceDrift(lakehouse.db)).map((d) =>
        [d.physicalTable, d.entryKey, d.kind, d.hash, d.problem].map(quoteLiteral).join(', '),
      );
      return table(
        name,
        'physical_table VARCHAR, entry_key VARCHAR, kind VARCHAR, hash VARCHAR, problem VARCHAR',
        rows,
      );
    }
    case 'list_partitions': {
      arity(name, args, 0);
      const partitions = await readable(await allPartitions(lakehouse.db), (p) => p.viewSetName);
      if (scope.kind === 'all') return table(name, partitionColumns, partitions.map(partitionRow));
      return readerPartitions(partitions, lakehouse, scope);
    }
    case 'list_view_set_definitions': {
      arity(name, args, 0);
      const failures = lakehouse.loader?.failures ?? new Map<string, string>();
      const rows = (await readable(await storedDefinitions(lakehouse.db), (d) => d.name)).map((d) =>
        [
          quoteLiteral(d.name),
          quoteLiteral(d.definitionSql),
          quoteLiteral(d.extractQuery),
          quoteLiteral(d.countQuery),
          quoteLiteral(d.mergeQuery),
          String(d.updateGroup),
          `${quoteLiteral(d.createdAt.toISOString())}::TIMESTAMPTZ`,
          `${quoteLiteral(d.updatedAt.toISOString())}::TIMESTAMPTZ`,
          text(d.updatedBy),
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
      // Series tables are view sets too: no view maker, one global instance, no update group.
      const series = lakehouse.tables ? [...(await lakehouse.tables.list()).values()] : [];
      // has_view_maker: view_instance(set, id) serves instances of the set: the instance-only sets
      // (which have no global instance) and the view sets with a process_id column to narrow by.
      const sets = [
        ...lakehouse.views.all().map((v) => ({ ...v, viewMaker: hasProcessInstances(v), global: true })),
        ...series.map((t) => ({ name: t.name, columns: t.columns, updateGroup: null, viewMaker: false, global: true })),
        ...instanceViews.map((v) => ({
          name: v.name,
          columns: v.columns,
          updateGroup: null,
          viewMaker: true,
          global: false,
        })),
      ];
      const rows = (await readable(sets, (v) => v.name)).map((v) =>
        [
          quoteLiteral(v.name),
          `from_hex('${schemaHash(v.columns).toString('hex')}')`,
          quoteLiteral(v.columns.map((c) => `${c.name} ${c.type}`).join(', ')),
          String(v.viewMaker),
          String(v.global),
          v.updateGroup === null ? 'NULL' : String(v.updateGroup),
        ].join(', '),
      );
      return table(
        name,
        'view_set_name VARCHAR, current_schema_hash BLOB, schema VARCHAR, has_view_maker BOOLEAN, global_instance_available BOOLEAN, update_group INTEGER',
        rows,
      );
    }
    case 'list_rollups': {
      arity(name, args, 0);
      const listed = (await lakehouse.rollups?.list(await rollupPoint?.())) ?? [];
      const rows = (await readable(listed, (r) => r.name)).map((r) =>
        [
          quoteLiteral(r.name),
          quoteLiteral(r.source),
          quoteLiteral(r.grain),
          // An integer rollup's watermark is the bucket of its table's largest value, of every audience's rows.
          scope.kind === 'all' || !r.integer ? text(r.watermark) : 'NULL',
          scope.kind === 'all' ? String(r.pendingBuckets) : 'NULL',
          r.lastRefresh === null ? 'NULL' : `${quoteLiteral(r.lastRefresh)}::TIMESTAMPTZ`,
          text(r.retention),
          // Both count rows of every audience: only admins see them.
          scope.kind === 'all' ? String(r.materializedRows) : 'NULL',
        ].join(', '),
      );
      return table(
        name,
        'name VARCHAR, source VARCHAR, grain VARCHAR, watermark VARCHAR, pending_buckets BIGINT, last_refresh TIMESTAMPTZ, ' +
          'retention VARCHAR, materialized_rows BIGINT',
        rows,
      );
    }
    case 'view_instance': {
      arity(name, args, 2);
      const [view, instance] = args as [string, unknown];
      if (typeof instance !== 'string') throw invalid('view_instance: instance_id must be a string literal');
      const perInstance = instanceView(view);
      if (perInstance && instance === 'global')
        throw invalid(`view_instance: ${view} has no global instance; name a ${perInstance.instance}`);
      const set = lakehouse.views.get(view);
      if (set && instance !== 'global' && !hasProcessInstances(set)) {
        throw invalid(
          `view_instance: view set '${view}' has no per-process instances (no process_id column); use 'global'`,
        );
      }
      const filter = instance === 'global' ? '' : ` WHERE process_id = ${quoteLiteral(instance)}`;
      const body = perInstance ? perInstance.relation(instance) : `SELECT * FROM ${quoteIdentifier(view)}${filter}`;
      return [`CREATE OR REPLACE TEMP MACRO view_instance(__view_set, __instance_id) AS TABLE ${body}`];
    }
    case 'perfetto_trace_chunks': {
      // The time bounds stay expressions (TIMESTAMP '…' literals, now() - INTERVAL …): macro parameters.
      if (args.length !== 4) throw invalid(`${name} takes 4 argument(s), got ${args.length}`);
      const [process, kind] = spanArguments(name, args);
      return [
        `CREATE OR REPLACE TEMP MACRO perfetto_trace_chunks(__process_id, __span_types, __begin, __end) AS TABLE ${perfettoTraceRelation(process, kind)}`,
      ];
    }
    case 'process_spans': {
      arity(name, args, 2);
      const [process, kind] = spanArguments(name, args);
      return [
        `CREATE OR REPLACE TEMP MACRO process_spans(__process_id, __kind) AS TABLE ${processSpansRelation(process, kind)}`,
      ];
    }
    default:
      return [];
  }
}

const partitionColumns =
  'view_set_name VARCHAR, view_instance_id VARCHAR, begin_insert_time TIMESTAMP_NS, end_insert_time TIMESTAMP_NS, ' +
  'min_event_time TIMESTAMP_NS, max_event_time TIMESTAMP_NS, file_path VARCHAR, file_size BIGINT, file_schema_hash BLOB, ' +
  'source_count BIGINT, num_rows BIGINT';

/** A text value as an SQL literal, NULL included. */
const text = (value: string | null): string => (value === null ? 'NULL' : quoteLiteral(value));
const timestamp = (nanos: bigint | null): string => (nanos === null ? 'NULL' : `make_timestamp_ns(${nanos})`);

function partitionRow(p: Partition): string {
  return [
    quoteLiteral(p.viewSetName),
    quoteLiteral(p.viewInstanceId),
    timestamp(p.beginInsertTime),
    timestamp(p.endInsertTime),
    timestamp(p.minEventTime),
    timestamp(p.maxEventTime),
    text(p.filePath),
    String(p.fileSize),
    `from_hex('${p.schemaHash.toString('hex')}')`,
    String(p.sourceCount),
    String(p.numRows),
  ].join(', ');
}

/**
 * list_partitions for a key that is not an admin. A partition file holds the rows of every
 * audience of its time range, so its own figures (rows, event times, size, source blocks)
 * describe other audiences too: here the rows and event times are counted over the caller's
 * rows, read from the files when the function is called; size and source count are NULL; a
 * partition holding none of the caller's rows, or of a schema no longer current, is not listed.
 */
async function readerPartitions(
  partitions: readonly Partition[],
  lakehouse: Lakehouse,
  scope: ReadScope,
): Promise<string[]> {
  const files = new Map<ViewSet, Array<{ partition: Partition; file: string }>>();
  for (const p of partitions) {
    const view = lakehouse.views.get(p.viewSetName);
    if (!view || p.filePath === null || !p.schemaHash.equals(schemaHash(view.columns))) continue;
    files.set(view, [...(files.get(view) ?? []), { partition: p, file: lakehouse.store.location(p.filePath) }]);
  }
  const processAudiences = await processAudiencesFor(lakehouse, [...files.keys()], scope);
  const summaries = [...files].map(([view, list]) =>
    scopedFileSummary(
      view,
      list.map((f) => f.file),
      scope,
      processAudiences,
    ),
  );
  const rows = [...files.values()]
    .flat()
    .map(({ partition, file }) => `${partitionRow(partition)}, ${quoteLiteral(file)}`);
  const statements = tempTable('__list_partitions_files', `${partitionColumns}, file VARCHAR`, rows);
  const body =
    summaries.length === 0
      ? 'SELECT * EXCLUDE (file) FROM __list_partitions_files WHERE false'
      : `SELECT p.view_set_name, p.view_instance_id, p.begin_insert_time, p.end_insert_time, s.min_event_time, s.max_event_time,
                p.file_path, NULL::BIGINT AS file_size, p.file_schema_hash, NULL::BIGINT AS source_count, s.num_rows
           FROM __list_partitions_files p JOIN (${summaries.join(' UNION ALL ')}) s USING (file)
          ORDER BY p.view_set_name, p.view_instance_id, p.begin_insert_time`;
  return [...statements, `CREATE OR REPLACE TEMP MACRO list_partitions() AS TABLE ${body}`];
}

/** Whether view_instance(set, process_id) can narrow the set to one process. */
function hasProcessInstances(view: ViewSet): boolean {
  return view.columns.some((c) => c.name === 'process_id');
}

/** The process id and span kind a span function names, as literals. */
function spanArguments(name: string, args: unknown[]): [string, 'thread' | 'async' | 'both'] {
  const [process, kind] = args;
  if (typeof process !== 'string') throw invalid(`${name}: process_id must be a string literal`);
  if (kind !== 'thread' && kind !== 'async' && kind !== 'both')
    throw invalid(`${name}: kind must be 'thread', 'async' or 'both'`);
  return [process, kind];
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** micromegas's type names for OTLP records: a log record, a span, or a data point of its metric's kind. */
function recordTypeName(format: string, line: string): string {
  if (format === 'otlp/v1/logs') return 'otlp.LogRecord';
  if (format === 'otlp/v1/traces') return 'otlp.Span';
  const kind = /"otel\.kind":"([a-z_]+)"/.exec(line)?.[1];
  if (kind === 'histogram') return 'otlp.HistogramDataPoint';
  if (kind === 'exponential_histogram') return 'otlp.ExponentialHistogramDataPoint';
  if (kind === 'summary') return 'otlp.SummaryDataPoint';
  return 'otlp.NumberDataPoint';
}

function arity(name: string, args: unknown[], count: number): void {
  if (args.length !== count) throw invalid(`${name} takes ${count} argument(s), got ${args.length}`);
  if (args.some((a) => a === null)) throw invalid(`${name}: arguments must be literals`);
}

function table(name: string, columns: string, rows: string[], parameters = 0): string[] {
  const relation = `__${name}`;
  const names = Array.from({ length: parameters }, (_, i) => `__argument${i}`).join(', ');
  return [
    ...tempTable(relation, columns, rows),
    `CREATE OR REPLACE TEMP MACRO ${name}(${names}) AS TABLE SELECT * FROM ${relation}`,
  ];
}

function tempTable(relation: string, columns: string, rows: string[]): string[] {
  const statements = [`CREATE OR REPLACE TEMP TABLE ${relation} (${columns})`];
  for (let i = 0; i < rows.length; i += 500) {
    statements.push(
      `INSERT INTO ${relation} VALUES ${rows
        .slice(i, i + 500)
        .map((r) => `(${r})`)
        .join(', ')}`,
    );
  }
  return statements;
}
