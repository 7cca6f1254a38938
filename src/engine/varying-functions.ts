// What a stored value may not read: a rollup's buckets and a view set's partitions keep what their query computed
// when it ran, while the same query run again (a raw read, a never-stale tail) computes it anew. A function whose
// value is not its arguments' alone (the clock, the engine's state) would be frozen wrong into stored rows.
import type { FunctionDescription } from './duckdb-engine.js';
import { queryShape, type QueryShape } from './query-shape.js';

/**
 * What a function's value depends on besides its arguments: the clock, the engine's or the connection's state (a
 * variable, which may be the fixed clock; a setting; the running statement, transaction or connection), or a random
 * source or sequence.
 */
export type Varying = 'clock' | 'state' | 'random';

/**
 * Orrery's clock: the statement's fixed clock (fixedClockVariable) or DuckDB's. now() and its twins call it, and a
 * key that is not an admin may call it by its name (views/sql-functions.ts defines it).
 */
export const clockMacro = '__orrery_now';

/**
 * DuckDB 1.5.5's functions (ICU's and its macros of them included) and Orrery's macros whose value is not their
 * arguments' alone. test/engine/varying-functions.test.ts fails when the engine lists one that is not here (marked
 * other than CONSISTENT, a macro calling one, or a function of no argument that is no constant), so a DuckDB upgrade
 * cannot add a clock read that stored rows would freeze unnoticed. age(x) of one argument reads the clock as well,
 * although DuckDB marks age CONSISTENT (clockProblem); `current_timestamp` and the other bare clock words are
 * clockKeywords.
 */
export const varyingFunctions: ReadonlyMap<string, Varying> = new Map<string, Varying>([
  ...[
    'now',
    'get_current_time',
    'get_current_timestamp',
    'current_date',
    'current_localtime',
    'current_localtimestamp',
    'transaction_timestamp',
    'today',
    'ago',
    'pg_conf_load_time',
    'pg_postmaster_start_time',
    clockMacro,
  ].map((name) => [name, 'clock'] as const),
  ...[
    'getvariable',
    'current_setting',
    'current_database',
    'current_catalog',
    'current_schema',
    'current_schemas',
    'in_search_path',
    'current_query',
    'current_query_id',
    'current_connection_id',
    'current_transaction_id',
    'txid_current',
    'stats',
  ].map((name) => [name, 'state'] as const),
  ...['random', 'setseed', 'uuid', 'uuidv4', 'uuidv7', 'gen_random_uuid', 'nextval', 'currval'].map(
    (name) => [name, 'random'] as const,
  ),
]);

/** Not CONSISTENT by DuckDB's account, yet no value of theirs varies: they raise an error, wait, or log. */
export const effectOnlyFunctions: ReadonlySet<string> = new Set(['error', 'sleep_ms', 'write_log']);

/**
 * Bare words DuckDB reads as the clock when no column in scope has the name; quoted or not, the parse tree is the
 * same column reference.
 */
const clockKeywords = new Set(['current_timestamp', 'current_date', 'current_time', 'localtime', 'localtimestamp']);

const reads: Record<Exclude<Varying, 'random'>, string> = {
  clock: 'which reads the clock',
  state: "which reads the engine's state (a variable, a setting, the running statement or transaction)",
};

/**
 * The first read of the clock or of the engine's state in a query: what it is, and how the query makes it (`calls
 * now()`), or undefined. age(x) of one argument is x's age on DuckDB's date (`ts.age()` is age(ts)); age(a, b) reads
 * no clock. A bare clock word counts even where a column of its name is in scope: quoted or not, it parses as the
 * same column reference, which DuckDB binds to such a column or else to the clock (a series table or a rollup has no
 * such column: the lake's catalog reserves the words).
 */
function firstRead(
  shape: QueryShape,
  varying: ReadonlyMap<string, Varying>,
): { readonly kind: 'clock' | 'state'; readonly text: string } | undefined {
  for (const call of shape.functionCalls) {
    const name = call.name.toLowerCase();
    const kind = varying.get(name);
    if (kind === 'clock' || kind === 'state') return { kind, text: `calls ${call.name}(), ${reads[kind]}` };
    if (name === 'age' && call.arguments === 1) {
      const method = call.receiver === '' ? '' : ` (${call.receiver}.${call.name}() is age(${call.receiver}))`;
      return { kind: 'clock', text: `calls age() of one argument${method}, ${reads.clock}` };
    }
  }
  for (const keyword of shape.columnNames)
    if (clockKeywords.has(keyword))
      return {
        kind: 'clock',
        text: `uses ${keyword}, ${reads.clock} unless a column has that name (quoted or not, the parse is the same; rename such a column with AS)`,
      };
  return undefined;
}

/**
 * Why what is stored of a query (`stored`: a view set's partitions, a rollup's buckets) may not read what it reads,
 * or undefined when it reads neither the clock nor the engine's state (`varying`: varyingFunctions, or withMacros'):
 * a stored value keeps what it was computed at, while the same query run again reads the current time.
 */
export function clockProblem(
  shape: QueryShape,
  stored: string,
  varying: ReadonlyMap<string, Varying> = varyingFunctions,
): string | undefined {
  const read = firstRead(shape, varying);
  return read && `${read.text}: its result would be frozen into ${stored}`;
}

/**
 * varyingFunctions with the engine's macros that call one (or call such a macro), by lower-case name: an admin's
 * `CREATE MACRO cutoff() AS now() - INTERVAL 1 DAY` reads the clock as now() does, whatever its name. A macro of a
 * name DuckDB also has elsewhere is judged by the name alone.
 */
export function withMacros(functions: readonly FunctionDescription[]): ReadonlyMap<string, Varying> {
  const varying = new Map(varyingFunctions);
  const bodies = functions
    .filter((f) => f.type === 'macro' && f.macroTree !== null && !varyingFunctions.has(f.name.toLowerCase()))
    .map((f) => ({ name: f.name.toLowerCase(), shape: queryShape(f.macroTree!) }));
  for (let changed = true; changed;) {
    changed = false;
    for (const { name, shape } of bodies) {
      if (varying.has(name) && varying.get(name) !== 'random') continue;
      const random = [...shape.functions].some((f) => varying.get(f.toLowerCase()) === 'random');
      const kind = firstRead(shape, varying)?.kind ?? (random ? 'random' : undefined);
      if (kind === undefined || varying.get(name) === kind) continue;
      varying.set(name, kind);
      changed = true;
    }
  }
  return varying;
}
