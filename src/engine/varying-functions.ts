// What a stored value may not read: a rollup's buckets and a view set's partitions keep what their query computed
// when it ran, while the same query run again (a raw read, a never-stale tail) computes it anew. A function whose
// value is not its arguments' alone (the clock, the engine's state) would be frozen wrong into stored rows.
import type { QueryShape } from './query-shape.js';

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
 * Why what is stored of a query (`stored`: a view set's partitions, a rollup's buckets) may not read what it reads,
 * or undefined when it reads neither the clock nor the engine's state: a stored value keeps what it was computed
 * at, while the same query run again reads the current time. age(x) of one argument is x's age on DuckDB's date
 * (`ts.age()` is age(ts)); age(a, b) reads no clock. A bare clock word is refused even where a column of its name is
 * in scope: quoted or not, it parses as the same column reference, which DuckDB binds to such a column or else to the
 * clock (a series table or a rollup has no such column: the lake's catalog reserves the words).
 */
export function clockProblem(shape: QueryShape, stored: string): string | undefined {
  const consequence = `its result would be frozen into ${stored}`;
  for (const call of shape.functionCalls) {
    const name = call.name.toLowerCase();
    const varying = varyingFunctions.get(name);
    if (varying === 'clock' || varying === 'state') return `calls ${call.name}(), ${reads[varying]}: ${consequence}`;
    if (name === 'age' && call.arguments === 1) {
      const method = call.receiver === '' ? '' : ` (${call.receiver}.${call.name}() is age(${call.receiver}))`;
      return `calls age() of one argument${method}, ${reads.clock}: ${consequence}`;
    }
  }
  for (const keyword of shape.columnNames)
    if (clockKeywords.has(keyword))
      return `uses ${keyword}, ${reads.clock} unless a column has that name (quoted or not, the parse is the same; rename such a column with AS): ${consequence}`;
  return undefined;
}
