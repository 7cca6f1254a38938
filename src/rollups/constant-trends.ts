// How long a kept rewrite's constants keep their values (issue 14): a dashboard's window bounds
// hang on now() through calls that never decrease as now() grows (date_trunc('day', now()) -
// INTERVAL 1 DAY). Such a bound that has the same value now and k seconds from now has it all the
// way between, so a kept rewrite needs no DuckDB query to check it until then. A bound that is the
// clock plus a fixed length (now() - INTERVAL 7 DAY) changes at every statement but moves with the
// clock nanosecond for nanosecond: its value now is its value then plus the time gone by, which a
// kept rewrite works out without DuckDB too (clockMoved).
import { clockInstantFunctions } from '../engine/index.js';
import { instantText, timestampNanos } from './calendar.js';
import { call, cast, integer, replaced, type Node } from './tree.js';

/** How a constant expression moves as now() grows: not at all, never down, or unknown (null). */
export type Trend = 'constant' | 'rising';

/** Cast targets that keep the order of instants (the engine's time zone is UTC). */
const orderedTypes = new Set([
  'TIMESTAMP',
  'TIMESTAMP_NS',
  'TIMESTAMP_MS',
  'TIMESTAMP_S',
  'TIMESTAMP WITH TIME ZONE',
  'DATE',
]);
/** Interval builders of a fixed length: weeks and shorter (a month's or a year's length hangs on the date). */
const fixedLengthCalls = new Set([
  ...['to_weeks', 'to_days', 'to_hours', 'to_minutes'],
  ...['to_seconds', 'to_milliseconds', 'to_microseconds'],
]);
/** Calls that give one value for the same constant arguments: interval builders and arithmetic. */
const pureCalls = new Set([
  ...['to_millennia', 'to_centuries', 'to_decades', 'to_years', 'to_quarters', 'to_months', ...fixedLengthCalls],
  ...['trunc', '+', '-', '*', '/', 'date_trunc', 'time_bucket', 'date_bin'],
]);
/** Calls that never decrease in the argument at these positions when the others are constant. */
const risingIn: Record<string, readonly number[]> = {
  date_trunc: [1],
  time_bucket: [1],
  date_bin: [1],
  '+': [0, 1],
  '-': [0],
};

/** A call of the statement's clock, Orrery's (or `current_timestamp`), however qualified by a schema. */
export const isClock = (node: Node): boolean =>
  node.class === 'FUNCTION'
    ? clockInstantFunctions.has(String(node.function_name).toLowerCase()) &&
      (node.children as unknown[]).length === 0 &&
      ['', 'main'].includes(String(node.schema))
    : node.class === 'COLUMN_REF' &&
      (node.column_names as string[]).length === 1 &&
      (node.column_names as string[])[0].toLowerCase() === 'current_timestamp';

/** How an expression moves as now() grows (see Trend); null for one that reads anything else (a column, random()). */
export function trend(node: Node): Trend | null {
  if (isClock(node)) return 'rising';
  if (node.class === 'CONSTANT') return 'constant';
  if (node.class === 'CAST') {
    const inner = trend(node.child as Node);
    if (inner === 'constant') return inner;
    return inner === 'rising' && orderedTypes.has(String((node.cast_type as Node).id)) ? inner : null;
  }
  if (node.class !== 'FUNCTION' || node.filter !== null || !['', 'main'].includes(String(node.schema))) return null;
  const name = String(node.function_name).toLowerCase();
  if (!pureCalls.has(name)) return null;
  const trends = (node.children as Node[]).map(trend);
  if (trends.some((t) => t === null)) return null;
  const rising = trends.flatMap((t, i) => (t === 'rising' ? [i] : []));
  if (rising.length === 0) return 'constant';
  const positions = risingIn[name] ?? [];
  return rising.length === 1 && positions.includes(rising[0]) && trends.length > 1 ? 'rising' : null;
}

/** Expressions with every clock call replaced by `clock`: the statement's now() fixed to a constant. */
export function withClock(expressions: readonly Node[], clock: Node): Node[] {
  return replaced([...expressions], (node) => (isClock(node) ? clock : undefined));
}

/** The offsets (ms from now) at which a kept rewrite's constants are evaluated besides now. */
export const stabilityOffsetsMs = [1_000, 2_000, 5_000, 10_000, 20_000, 30_000, 45_000, 60_000];

/** Whether constant expressions read no clock (nor anything else that may change). */
export const clockFree = (expressions: readonly Node[]): boolean => expressions.every((e) => trend(e) === 'constant');

/**
 * The constants as they would be `offsetMs` later (every clock call plus that time), or null when
 * some constant is not known to never decrease as now() grows.
 */
export function shifted(expressions: readonly Node[], offsetMs: number): Node[] | null {
  if (expressions.some((e) => trend(e) === null)) return null;
  const shift = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(shift);
    if (value === null || typeof value !== 'object') return value;
    const node = value as Node;
    if (isClock(node)) return call('+', [node, call('to_milliseconds', [integer(offsetMs)])], { operator: true });
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, shift(v)]));
  };
  return expressions.map((e) => shift(e) as Node);
}

/**
 * Until when (ms since the epoch) constants evaluated at `start` keep their values: `texts` are
 * their values then, `later[i]` their values stabilityOffsetsMs[i] later. A value that never
 * decreases and is the same at both ends of a range is the same all through it.
 */
export function stableUntil(
  start: number,
  texts: readonly unknown[],
  later: ReadonlyArray<readonly unknown[]>,
): number {
  let until = start;
  for (const [i, values] of later.entries()) {
    if (!values.every((v, j) => v === texts[j])) break;
    until = start + stabilityOffsetsMs[i];
  }
  return until;
}

/** Interval texts of fixed lengths only (`'7 days'`, `'1 hour 30 minutes'`). */
const fixedLengthText =
  /^\s*(?:[+-]?\d+(?:\.\d+)?\s*(?:weeks?|days?|hours?|minutes?|seconds?|milliseconds?|microseconds?)\s*)+$/i;
/** Cast targets that keep an instant to the microsecond (now()'s precision) or finer. */
const exactInstantTypes = new Set(['TIMESTAMP', 'TIMESTAMP_NS', 'TIMESTAMP WITH TIME ZONE']);

const builtin = (node: Node): boolean =>
  node.filter === null && node.distinct !== true && ['', 'main'].includes(String(node.schema));

function isFixedLength(node: Node): boolean {
  if (node.class === 'FUNCTION')
    return (
      builtin(node) &&
      fixedLengthCalls.has(String(node.function_name).toLowerCase()) &&
      (node.children as Node[]).every((c) => trend(c) === 'constant')
    );
  const child = node.child as Node | undefined;
  const value = child?.value as { type?: { id?: unknown }; is_null?: boolean; value?: unknown } | undefined;
  return (
    node.class === 'CAST' &&
    String((node.cast_type as Node).id) === 'INTERVAL' &&
    child?.class === 'CONSTANT' &&
    value?.type?.id === 'VARCHAR' &&
    value.is_null === false &&
    fixedLengthText.test(String(value.value))
  );
}

/**
 * Whether an expression is the statement's clock plus or minus fixed lengths (days are 24 hours: the
 * engine's time zone is UTC), so that its value moves with now() nanosecond for nanosecond.
 */
export function movesWithClock(node: Node): boolean {
  if (isClock(node)) return true;
  if (node.class === 'CAST')
    return (
      node.try_cast !== true &&
      exactInstantTypes.has(String((node.cast_type as Node).id)) &&
      movesWithClock(node.child as Node)
    );
  if (node.class !== 'FUNCTION' || node.is_operator !== true || !builtin(node)) return false;
  const children = node.children as Node[];
  if (children.length !== 2) return false;
  const [a, b] = children;
  const name = String(node.function_name);
  if (name === '-') return movesWithClock(a) && isFixedLength(b);
  return name === '+' && ((movesWithClock(a) && isFixedLength(b)) || (isFixedLength(a) && movesWithClock(b)));
}

/** The statement's clock as an instant of nanoseconds, to evaluate with constants that move with it. */
export const clockInstant = (): Node => cast(call('now', []), { id: 'TIMESTAMP_NS', type_info: null });

/** An instant as DuckDB writes a TIMESTAMP_NS (UTC), as constantTexts gives one. */
export const nanosText = (nanos: bigint): string => instantText(nanos).replace('T', ' ').replace(/Z$/, '');

/** A timestamp as text in UTC: a date, a time of day, digits of a second, `Z` or a zero offset. */
const plainTimestamp = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?(Z|\+00(?::?00)?)?$/;
/** Timestamp types a text is cast to: the digits of a second each keeps, and whether it reads an offset. */
const textCasts: Record<string, { readonly digits: number; readonly zoned: boolean }> = {
  TIMESTAMP: { digits: 6, zoned: false },
  TIMESTAMP_NS: { digits: 9, zoned: false },
  'TIMESTAMP WITH TIME ZONE': { digits: 6, zoned: true },
};

/**
 * The value DuckDB gives a literal instant cast to TIMESTAMP_NS (`CAST(CAST('2024-01-01 10:00' AS
 * TIMESTAMP) AS TIMESTAMP_NS)`, the form the rewrite evaluates window bounds in), worked out without
 * DuckDB when its text is a plain UTC timestamp that every such type keeps as written (years 1900 to
 * 2199, no rounding, no offset but zero); null for anything else, which DuckDB evaluates.
 */
export function literalInstantText(node: Node): string | null {
  if (node.class !== 'CAST' || node.try_cast === true || String((node.cast_type as Node).id) !== 'TIMESTAMP_NS')
    return null;
  let literal = node.child as Node;
  let type = 'TIMESTAMP_NS';
  if (literal.class === 'CAST') {
    if (literal.try_cast === true) return null;
    type = String((literal.cast_type as Node).id);
    literal = literal.child as Node;
  }
  const value = literal.value as { type?: { id?: unknown }; is_null?: boolean; value?: unknown } | undefined;
  const cast = textCasts[type];
  if (!cast || literal.class !== 'CONSTANT' || value?.type?.id !== 'VARCHAR' || value.is_null !== false) return null;
  const m = plainTimestamp.exec(String(value.value));
  if (!m || (m[8] && !cast.zoned) || (m[7] ?? '').length > cast.digits || m[1] < '1900' || m[1] > '2199') return null;
  const [hours, minutes, seconds] = [m[4] ?? '00', m[5] ?? '00', m[6] ?? '00'];
  const nanos = timestampNanos(`${m[1]}-${m[2]}-${m[3]} ${hours}:${minutes}:${seconds}${m[7] ? `.${m[7]}` : ''}`);
  // Fields out of range ('2024-02-30', '24:00:00') roll over in JavaScript; DuckDB refuses them.
  const written = `${m[1]}-${m[2]}-${m[3]} ${hours}:${minutes}:${seconds}`;
  return nanos !== null && nanosText(nanos).startsWith(written) ? nanosText(nanos) : null;
}

/** Constants evaluated together, with the clock they were evaluated at when some of them move with it. */
export interface EvaluatedConstants {
  readonly expressions: Node[];
  readonly texts: Array<string | null>;
  /** now() as the evaluation read it (TIMESTAMP_NS text), or null when not read. */
  readonly clock: string | null;
}

/**
 * The constants' values at `nowNs` (ns since the epoch), worked out from their values at the clock they
 * were evaluated at: those that read no clock as they were, those that move with it shifted by the
 * time gone by; null when some other one reads the clock.
 */
export function clockMoved(
  evaluated: readonly EvaluatedConstants[],
  nowNs: bigint,
): Array<Array<string | null>> | null {
  const out: Array<Array<string | null>> = [];
  for (const { expressions, texts, clock } of evaluated) {
    const then = clock === null ? null : timestampNanos(clock);
    const moved: Array<string | null> = [];
    for (const [i, expression] of expressions.entries()) {
      if (trend(expression) === 'constant') {
        moved.push(texts[i]);
        continue;
      }
      const value = texts[i] === null ? null : timestampNanos(texts[i]!);
      if (then === null || value === null || !movesWithClock(expression)) return null;
      moved.push(nanosText(value + nowNs - then));
    }
    out.push(moved);
  }
  return out;
}
