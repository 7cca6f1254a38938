// Window bounds written with the clock, worked out without DuckDB (issue 14): `now() - INTERVAL '1 month'`,
// `date_trunc('day', now())`, `now()::DATE - 7`, `date_trunc('month', now()) - INTERVAL 1 MONTH`. The rewrite
// evaluates a bound as `CAST(bound AS TIMESTAMP_NS)`; for the forms below this gives DuckDB's value from the
// statement's clock by UTC calendar arithmetic, so a rewrite needs no DuckDB round trip for them. Orrery's
// now() is a TIMESTAMP_NS (views/sql-functions.ts), and DuckDB's semantics for it, which
// test/rollups/clock-bounds.test.ts checks over many instants, are: an instant plus an interval adds its
// months first (the day of the month clamped to the month's last: 2024-03-31 - 1 month is 2024-02-29), then
// its days, then its time; minus an interval adds its negation; date_trunc is the start of the UTC calendar
// unit (weeks start on Mondays); a cast to DATE, and current_date, is the UTC day; a decimal number of days
// or of a time unit in an interval's text is its whole days then the rest in microseconds. Anything else
// (another function, a fraction of a month or year, or one that is not whole microseconds, DuckDB's own
// TIMESTAMPTZ now(), a year outside 1900-2199) is null: DuckDB evaluates it.
import { clockDateFunctions } from '../engine/index.js';
import { floorBoundary, timestampNanos, truncLadder } from './calendar.js';
import { isClock as isAnyClock, literalInstantText, nanosText } from './constant-trends.js';
import { call, cast, replaced, some, type Node } from './tree.js';

type Value =
  | { readonly kind: 'instant' | 'date'; readonly ns: bigint }
  | { readonly kind: 'interval'; readonly months: number; readonly days: number; readonly micros: bigint }
  | { readonly kind: 'integer'; readonly n: number };

const dayNs = 86_400_000_000_000n;
/** Cast targets an instant of microseconds keeps as it is (now() is one). */
const instantCasts = new Set(['TIMESTAMP', 'TIMESTAMP_NS', 'TIMESTAMP WITH TIME ZONE']);
const integerCasts = new Set(['TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'DOUBLE']);
/** Interval units of DuckDB's interval text and `INTERVAL n unit` builders: months, days or microseconds each. */
const units: Record<string, { readonly months?: number; readonly days?: number; readonly micros?: bigint }> = {
  year: { months: 12 },
  quarter: { months: 3 },
  month: { months: 1 },
  mon: { months: 1 },
  week: { days: 7 },
  day: { days: 1 },
  hour: { micros: 3_600_000_000n },
  minute: { micros: 60_000_000n },
  second: { micros: 1_000_000n },
  millisecond: { micros: 1000n },
  microsecond: { micros: 1n },
};
const builders: Record<string, string> = {
  to_years: 'year',
  to_quarters: 'quarter',
  to_months: 'month',
  to_weeks: 'week',
  to_days: 'day',
  to_hours: 'hour',
  to_minutes: 'minute',
  to_seconds: 'second',
  to_milliseconds: 'millisecond',
  to_microseconds: 'microsecond',
};

const builtin = (node: Node): boolean =>
  node.filter === null && node.distinct !== true && ['', 'main'].includes(String(node.schema));

/**
 * A call of Orrery's clock: now() and its twins return TIMESTAMP_NS (views/sql-functions.ts); a catalog-qualified
 * one (DuckDB's own `system.main.now()`, a TIMESTAMPTZ) or one with FILTER or DISTINCT is left to DuckDB.
 */
const isClock = (node: Node): boolean =>
  isAnyClock(node) && (node.class !== 'FUNCTION' || (builtin(node) && !node.catalog));

const interval = (n: number, unit: (typeof units)[string]): Value => ({
  kind: 'interval',
  months: n * (unit.months ?? 0),
  days: n * (unit.days ?? 0),
  micros: BigInt(n) * (unit.micros ?? 0n),
});

/**
 * A decimal number of a unit of days or time (`1.5 days`, `-0.25 hours`) as DuckDB's interval text reads it: the
 * whole days, then the rest as microseconds; null when those are not whole, the fraction has more than six
 * digits (DuckDB drops the rest) or the unit counts months (DuckDB's fractions of months and years follow rules
 * of their own).
 */
function fraction(sign: string, whole: string, digits: string, unit: (typeof units)[string]): Value | null {
  // DuckDB reads six digits of a fraction at most.
  if (unit.months || sign === '+' || digits.length > 6) return null;
  const scale = 10n ** BigInt(digits.length);
  const scaled = (sign === '-' ? -1n : 1n) * (BigInt(whole) * scale + BigInt(digits));
  let days = 0n;
  let rest = scaled * (unit.micros ?? 0n);
  if (unit.days) {
    const inDays = scaled * BigInt(unit.days);
    days = inDays / scale; // toward zero: the rest keeps the sign
    rest = (inDays - days * scale) * 86_400_000_000n;
  }
  if (rest % scale !== 0n) return null;
  return { kind: 'interval', months: 0, days: Number(days), micros: rest / scale };
}

/** DuckDB's interval text of whole units (`1 month`, `2 years 3 days`, `-1 mon`) or decimal ones of days or time, or null. */
function intervalText(text: string): Value | null {
  const part = /^\s*([+-]?)(\d{1,6})(?:\.(\d{1,9}))?\s*([a-z]+?)s?(?=\s|$)/i;
  let rest = text;
  let sum: Value = interval(0, {});
  let seen = false;
  for (let m = part.exec(rest); m; m = part.exec(rest)) {
    const unit = units[m[4].toLowerCase()];
    if (!unit) return null;
    const value = m[3] === undefined ? interval(Number(m[1] + m[2]), unit) : fraction(m[1], m[2], m[3], unit);
    if (value === null) return null;
    sum = plus(sum, value)!;
    seen = true;
    rest = rest.slice(m[0].length);
  }
  return seen && rest.trim() === '' ? sum : null;
}

/** DuckDB's current date, `current_date` (a column name it binds to the function), `current_date()` or `today()`. */
export const isCurrentDate = (node: Node): boolean =>
  node.class === 'COLUMN_REF'
    ? (node.column_names as string[]).length === 1 &&
      (node.column_names as string[])[0].toLowerCase() === 'current_date'
    : node.class === 'FUNCTION' &&
      builtin(node) &&
      !node.catalog &&
      clockDateFunctions.has(String(node.function_name).toLowerCase()) &&
      (node.children as unknown[]).length === 0;

const constantText = (node: Node): string | null => {
  const value = node.value as { type?: { id?: unknown }; is_null?: boolean; value?: unknown } | undefined;
  return node.class === 'CONSTANT' && value?.type?.id === 'VARCHAR' && value.is_null === false
    ? String(value.value)
    : null;
};

/** UTC calendar fields of an instant: the month's index from year 0, its day, and the time of day (ns). */
function fields(ns: bigint): { month: number; day: number; time: bigint } {
  const time = ((ns % dayNs) + dayNs) % dayNs;
  const date = new Date(Number((ns - time) / 1_000_000n));
  return { month: date.getUTCFullYear() * 12 + date.getUTCMonth(), day: date.getUTCDate(), time };
}

const midnight = (month: number, day: number): bigint =>
  BigInt(Date.UTC(Math.floor(month / 12), month % 12, day)) * 1_000_000n;

/** An instant plus an interval as DuckDB adds them: months (the day clamped to the month's last), days, then time. */
function shifted(ns: bigint, by: Extract<Value, { kind: 'interval' }>): bigint {
  const { month, day, time } = fields(ns);
  const target = month + by.months;
  const last = new Date(Date.UTC(Math.floor(target / 12), (target % 12) + 1, 0)).getUTCDate();
  return midnight(target, Math.min(day, last)) + time + BigInt(by.days) * dayNs + by.micros * 1000n;
}

function plus(a: Value, b: Value): Value | null {
  if (a.kind === 'interval' && b.kind === 'interval')
    return { kind: 'interval', months: a.months + b.months, days: a.days + b.days, micros: a.micros + b.micros };
  if (a.kind === 'interval') return plus(b, a);
  if (b.kind === 'interval' && (a.kind === 'instant' || a.kind === 'date'))
    return { kind: 'instant', ns: shifted(a.ns, b) };
  if (a.kind === 'date' && b.kind === 'integer') return { kind: 'date', ns: a.ns + BigInt(b.n) * dayNs };
  return null;
}

const negated = (v: Value): Value | null =>
  v.kind === 'interval'
    ? { kind: 'interval', months: -v.months, days: -v.days, micros: -v.micros }
    : v.kind === 'integer'
      ? { kind: 'integer', n: -v.n }
      : null;

function valueOf(node: Node, nowNs: bigint): Value | null {
  if (isClock(node)) return { kind: 'instant', ns: nowNs - (((nowNs % 1000n) + 1000n) % 1000n) };
  // The UTC day of the clock (the engine's TimeZone is UTC), as now()::DATE.
  if (isCurrentDate(node)) return { kind: 'date', ns: nowNs - (((nowNs % dayNs) + dayNs) % dayNs) };
  if (node.class === 'CONSTANT') {
    const value = node.value as { type?: { id?: unknown }; is_null?: boolean; value?: unknown };
    const n = value.value;
    return integerCasts.has(String(value.type?.id)) && value.is_null === false && Number.isSafeInteger(n)
      ? { kind: 'integer', n: n as number }
      : null;
  }
  if (node.class === 'CAST') {
    if (node.try_cast === true) return null;
    const type = String((node.cast_type as Node).id);
    const child = node.child as Node;
    const text = constantText(child);
    if (type === 'INTERVAL') {
      if (text !== null) return intervalText(text);
      // An interval cast to INTERVAL (ago(INTERVAL 1 DAY)'s, see agoAsClock) is itself.
      const inner = valueOf(child, nowNs);
      return inner?.kind === 'interval' ? inner : null;
    }
    if (text !== null) {
      const literal = literalInstantText({
        class: 'CAST',
        child: { ...node, cast_type: { id: type === 'DATE' ? 'TIMESTAMP' : type, type_info: null } },
        cast_type: { id: 'TIMESTAMP_NS', type_info: null },
        try_cast: false,
      });
      const ns = literal === null ? null : timestampNanos(literal);
      if (ns === null || (type === 'DATE' && ns % dayNs !== 0n)) return null;
      return { kind: type === 'DATE' ? 'date' : 'instant', ns };
    }
    const inner = valueOf(child, nowNs);
    if (inner === null) return null;
    if (integerCasts.has(type)) return inner.kind === 'integer' ? inner : null;
    if (inner.kind !== 'instant' && inner.kind !== 'date') return null;
    if (type === 'DATE') return { kind: 'date', ns: inner.ns - (((inner.ns % dayNs) + dayNs) % dayNs) };
    if (!instantCasts.has(type) || (type !== 'TIMESTAMP_NS' && inner.ns % 1000n !== 0n)) return null;
    return { kind: 'instant', ns: inner.ns };
  }
  if (node.class !== 'FUNCTION' || !builtin(node)) return null;
  const name = String(node.function_name).toLowerCase();
  const children = node.children as Node[];
  if (name === 'date_trunc' && children.length === 2) {
    const unit = constantText(children[0]);
    const ladder = unit === null ? null : truncLadder(unit);
    const inner = valueOf(children[1], nowNs);
    // A date's is a TIMESTAMP too.
    if (!ladder || (inner?.kind !== 'instant' && inner?.kind !== 'date')) return null;
    return { kind: 'instant', ns: floorBoundary(ladder, inner.ns) };
  }
  const values = children.map((c) => valueOf(c, nowNs));
  if (values.some((v) => v === null)) return null;
  const [a, b] = values as Value[];
  if (name === 'trunc' && values.length === 1) return a.kind === 'integer' ? a : null;
  if (builders[name] && values.length === 1) return a.kind === 'integer' ? interval(a.n, units[builders[name]]) : null;
  if (node.is_operator !== true) return null;
  if (name === '-' && values.length === 1) return negated(a);
  if (values.length !== 2) return null;
  if (name === '+') return plus(a, b);
  if (name !== '-') return null;
  const minus = negated(b);
  return minus === null ? null : plus(a, minus);
}

/** The earliest and latest instants worked out here (DuckDB's and JavaScript's calendars agree on them). */
const [earliest, latest] = [midnight(1900 * 12, 1), midnight(2200 * 12, 1)];

/**
 * DuckDB's text of `CAST(bound AS TIMESTAMP_NS)` (a window bound as the rewrite evaluates it) with now() at
 * `nowNs` (ns since the epoch), worked out without DuckDB; null when not worked out here.
 */
export function clockBoundText(node: Node, nowNs: bigint): string | null {
  if (node.class !== 'CAST' || node.try_cast === true || String((node.cast_type as Node).id) !== 'TIMESTAMP_NS')
    return null;
  const value = valueOf(node, nowNs);
  if (value?.kind !== 'instant' || value.ns < earliest || value.ns >= latest) return null;
  return nanosText(value.ns);
}

/** A call of DuckDB's ago() by its name alone: its macro, as Orrery's admins cannot make one of the name (sql/engine-objects.ts). */
const isAgo = (node: Node): boolean =>
  node.class === 'FUNCTION' &&
  String(node.function_name).toLowerCase() === 'ago' &&
  builtin(node) &&
  !node.catalog &&
  (node.children as unknown[]).length === 1;

/**
 * `node` with each ago(x) in it as what it is, DuckDB's macro `current_timestamp - CAST(x AS INTERVAL)`, with now()
 * for current_timestamp: DuckDB binds that name in the macro to Orrery's get_current_timestamp(), the statement's fixed
 * clock as now() reads it (views/sql-functions.ts), unless the query has a column or a select alias of that name
 * (`named`), which it binds first; then `node` is left as it is. A bound written with ago() is then worked out as one written
 * with now(): from the clock's instant, without DuckDB. `node` itself when it calls no ago().
 */
export function agoAsClock(node: Node, named: ReadonlySet<string>): Node {
  if (named.has('current_timestamp') || !some(node, isAgo)) return node;
  const interval = { id: 'INTERVAL', type_info: null };
  return replaced(node, (n) =>
    isAgo(n)
      ? call('-', [call('now', []), cast(agoAsClock((n.children as Node[])[0], named), interval)], { operator: true })
      : undefined,
  );
}

/**
 * Whether a bound changes with every statement (now() - INTERVAL 1 MONTH), rather than stepwise, its
 * clock read only through date_trunc or a cast to DATE (date_trunc('day', now())), or not at all.
 */
export function followsClock(node: Node): boolean {
  if (isClock(node)) return true;
  if (isCurrentDate(node)) return false;
  if (node.class === 'CAST' && String((node.cast_type as Node).id) === 'DATE') return false;
  if (node.class === 'FUNCTION' && String(node.function_name).toLowerCase() === 'date_trunc') return false;
  return Object.values(node).some((v) =>
    Array.isArray(v)
      ? v.some((c) => c !== null && typeof c === 'object' && followsClock(c as Node))
      : v !== null && typeof v === 'object' && followsClock(v as Node),
  );
}
