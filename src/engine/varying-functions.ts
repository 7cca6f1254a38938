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
 * Orrery's clock macros (views/sql-functions.ts makes them) by their value: the statement's instant (a UTC
 * TIMESTAMP_NS, `current_timestamp` too) or its UTC date (`current_date` too). Called unqualified, each reads the
 * statement's fixed clock when the server fixed it; one qualified by a catalog (DuckDB's own `system.main.now()`, a
 * TIMESTAMPTZ) is DuckDB's clock.
 */
export const clockInstantFunctions: ReadonlySet<string> = new Set([
  clockMacro,
  'now',
  'get_current_timestamp',
  'transaction_timestamp',
]);
export const clockDateFunctions: ReadonlySet<string> = new Set(['current_date', 'today']);

/** DuckDB's macros of `current_timestamp`, which DuckDB binds to Orrery's get_current_timestamp(): Orrery's clock. */
export const clockWordMacros: ReadonlySet<string> = new Set(['ago', 'pg_conf_load_time', 'pg_postmaster_start_time']);

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
    ...clockInstantFunctions,
    ...clockDateFunctions,
    ...clockWordMacros,
    'get_current_time',
    'current_localtime',
    'current_localtimestamp',
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
export const clockKeywords: ReadonlySet<string> = new Set([
  'current_timestamp',
  'current_date',
  'current_time',
  'localtime',
  'localtimestamp',
]);

/** The bare words of Orrery's clock: its get_current_timestamp() and current_date(). */
export const clockMacroKeywords: ReadonlySet<string> = new Set(['current_timestamp', 'current_date']);

const reads: Record<Varying, string> = {
  clock: 'which reads the clock',
  state: "which reads the engine's state (a variable, a setting, the running statement or transaction)",
  random: 'a random source or a sequence, another value at each call',
};

/** Orrery's clock macros: the functions of clockInstantFunctions and clockDateFunctions. */
export const clockMacroFunctions: ReadonlySet<string> = new Set([...clockInstantFunctions, ...clockDateFunctions]);

/** What firstRead counts besides the clock and the engine's state, and what it leaves out. */
interface ReadOptions {
  /** A random source or a sequence counts. */
  readonly random?: boolean;
  /** The engine's state counts (default true). */
  readonly state?: boolean;
  /**
   * Functions that, called by their names in the engine's default catalog, read the statement's clock as the caller
   * reads it (clockMacroFunctions, say), and do not count; with them the bare words of Orrery's clock
   * (clockMacroKeywords) do not count either.
   */
  readonly read?: ReadonlySet<string>;
}

/**
 * The first read of the clock or of the engine's state in a query, as options say (ReadOptions): what it is, and how
 * the query makes it (`calls now()`), or undefined. age(x) of one argument is x's age on DuckDB's date (`ts.age()` is
 * age(ts)); age(a, b) reads no clock. A bare clock word counts even where a column of its name is in scope: quoted or
 * not, it parses as the same column reference, which DuckDB binds to such a column or else to the clock (a series
 * table or a rollup has no such column: the lake's catalog reserves the words).
 */
function firstRead(
  shape: QueryShape,
  varying: ReadonlyMap<string, Varying>,
  { random = false, state = true, read }: ReadOptions = {},
): { readonly kind: Varying; readonly text: string } | undefined {
  const counts = { clock: true, state, random };
  for (const call of shape.functionCalls) {
    const name = call.name.toLowerCase();
    const kind = varying.get(name);
    const known = read?.has(name) && call.catalog === '' && ['', 'main'].includes(call.schema.toLowerCase());
    if (kind !== undefined && counts[kind] && !known)
      return {
        kind,
        text: `calls ${[call.catalog, call.schema, call.name].filter((q) => q !== '').join('.')}(), ${reads[kind]}`,
      };
    if (name === 'age' && call.arguments === 1) {
      const method = call.receiver === '' ? '' : ` (${call.receiver}.${call.name}() is age(${call.receiver}))`;
      return { kind: 'clock', text: `calls age() of one argument${method}, ${reads.clock}` };
    }
  }
  for (const keyword of shape.columnNames)
    if (clockKeywords.has(keyword) && !(read && clockMacroKeywords.has(keyword)))
      return {
        kind: 'clock',
        text: `uses ${keyword}, ${reads.clock} unless a column has that name (quoted or not, the parse is the same; rename such a column with AS)`,
      };
  return undefined;
}

/**
 * How a query reads the clock or the engine's state (`calls now(), which reads the clock`), or undefined; options
 * (ReadOptions) count a random source too, leave the state out, or leave out the clock functions the caller reads as
 * the statement's clock: a rollup rewrite works out Orrery's clock macros (clockMacroFunctions), event-time pruning
 * fixes DuckDB's macros of current_timestamp too (clockWordMacros).
 */
export function varyingRead(shape: QueryShape, options: ReadOptions = {}): string | undefined {
  return firstRead(shape, varyingFunctions, options)?.text;
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
