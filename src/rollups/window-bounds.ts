// The rows a window's bound keeps, on the grid a time column's values lie on (issue 14): a DATE
// holds midnights, a TIMESTAMP_S whole seconds. DuckDB compares a column with a string by casting
// the string to the column's type, and with an instant of another type exactly, so `d >= TIMESTAMP
// '2024-01-01 05:00'` keeps the days from 2024-01-02 and `ts_s < TIMESTAMP '01:00:00.4'` the second
// 01:00:00. A bound is read as the first value kept (a lower bound) or the first left out (an
// upper one): rollup buckets either all hold rows it keeps or none does when that value starts one.
import { clockMacroFunctions, clockMacroKeywords } from '../engine/index.js';
import { day, divides, type Ladder } from './calendar.js';
import type { Node } from './tree.js';

const second = 1_000_000_000n;

/** The step (ns) between the values of a time type: a column of it holds multiples of it. */
export function gridOf(type: string): bigint {
  const id = type.toUpperCase();
  if (id === 'DATE') return day;
  if (id === 'TIMESTAMP_S') return second;
  if (id === 'TIMESTAMP_MS') return 1_000_000n;
  if (id === 'TIMESTAMP_NS') return 1n;
  return 1000n;
}

/** Instant types: a comparison of a time column with one of them is exact. */
export const instantTypes: ReadonlySet<string> = new Set([
  'DATE',
  'TIMESTAMP',
  'TIMESTAMP_S',
  'TIMESTAMP_MS',
  'TIMESTAMP_NS',
  'TIMESTAMP WITH TIME ZONE',
]);
const shifts = new Set(['+', '-', 'date_trunc', 'time_bucket', 'date_bin']);

/** `current_date` or `current_timestamp`, which DuckDB parses as a name: the clock, where no column has the name. */
export const isClockWord = (n: Node, columns: ReadonlySet<string>): boolean => {
  const names = n.class === 'COLUMN_REF' ? (n.column_names as string[]) : [];
  return names.length === 1 && clockMacroKeywords.has(names[0].toLowerCase()) && !columns.has(names[0].toLowerCase());
};

/** How DuckDB compares a time column with a constant: as a string cast to the column's type, or as an instant. */
export function comparedAs(value: Node): 'string' | 'instant' | null {
  if (isClockWord(value, new Set())) return 'instant';
  if (value.class === 'CONSTANT') {
    const id = String(((value.value as Node).type as Node).id);
    return id === 'VARCHAR' ? 'string' : instantTypes.has(id) ? 'instant' : null;
  }
  if (value.class === 'CAST') return instantTypes.has(String((value.cast_type as Node).id)) ? 'instant' : null;
  if (value.class !== 'FUNCTION' || !['', 'main'].includes(String(value.schema))) return null;
  const name = String(value.function_name).toLowerCase();
  const children = value.children as Node[];
  if (clockMacroFunctions.has(name)) return children.length === 0 ? 'instant' : null;
  if (!shifts.has(name)) return null;
  // An instant plus or minus an interval, or bucketed: an instant.
  const over = name === '+' || name === '-' ? children : children.slice(1, 2);
  return over.some((c) => comparedAs(c) === 'instant') ? 'instant' : null;
}

const mod = (a: bigint, b: bigint): bigint => ((a % b) + b) % b;

/**
 * The first value on the grid a comparison keeps (ge, gt) or leaves out (lt, le), from the value
 * it compares with; an `eq` keeps [value, value + grid), or nothing when the value is off the grid.
 */
export function threshold(op: 'ge' | 'gt' | 'lt' | 'le', value: bigint, grid: bigint): bigint {
  const floor = value - mod(value, grid);
  if (op === 'gt' || op === 'le') return floor + grid;
  return floor === value ? value : floor + grid;
}

/**
 * Whether a rollup's buckets that hold rows start on the column's grid: its boundaries are all on
 * it, or every value of it is a boundary. Then the bucket, read as the column's type, is a value a
 * bound compares as it would each row of the bucket.
 */
export function bucketsOnGrid(ladder: Ladder, grid: bigint): boolean {
  const every =
    ladder.kind === 'fixed' ? mod(ladder.width, grid) === 0n && mod(ladder.origin, grid) === 0n : mod(day, grid) === 0n;
  return every || divides(ladder, { kind: 'fixed', width: grid, origin: 0n });
}

/**
 * Whether a rollup answers a bucket call of the query over a time expression with values on
 * `grid`: each rollup bucket lies within one value of the grid (the call reads the same value for
 * its rows), or within one query bucket whose boundaries are on the grid.
 */
export function answersBucket(rollup: Ladder, query: Ladder, grid: bigint): boolean {
  const values: Ladder = { kind: 'fixed', width: grid, origin: 0n };
  return divides(rollup, values) || (divides(rollup, query) && divides(values, query));
}

/** The time column, or a cast of it that keeps the order of its values: the type it is compared as, and the step between its values. */
export interface TimeExpression {
  readonly type: Node;
  readonly grid: bigint;
}

/** `n` as a time expression, or null: a cast to DATE floors to midnights (UTC), one to an instant type as fine as the column's keeps each value. */
export function timeExpression(
  n: Node,
  isTime: (n: Node) => boolean,
  timeType: Node,
  grid: bigint,
): TimeExpression | null {
  if (isTime(n)) return { type: timeType, grid };
  if (n.class !== 'CAST' || n.try_cast === true || !isTime(n.child as Node)) return null;
  const type = n.cast_type as Node;
  const id = String(type.id);
  if (id === 'DATE') return { type, grid: day };
  return instantTypes.has(id) && grid % gridOf(id) === 0n ? { type, grid } : null;
}
