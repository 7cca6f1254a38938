// Bucket boundaries in UTC, to decide whether a query's buckets are unions of a rollup's. A
// ladder is the set of instants where buckets start: fixed widths from an origin (seconds to
// weeks; days are 24 hours, DuckDB running in UTC), or a number of calendar months from a month
// (months, quarters, years). Months are not fixed widths, so a 1-day rollup answers a monthly
// grouping because every month starts at a midnight, not because a month is some number of days.

export type Ladder =
  | { readonly kind: 'fixed'; readonly width: bigint; readonly origin: bigint }
  | { readonly kind: 'months'; readonly months: number; readonly origin: number };

const ns = 1000n;
const second = 1_000_000_000n;
export const day = 86_400n * second;

/** An interval as DuckDB writes it (`1 day`, `01:00:00`, `1 month`, `2 years 3 months 00:00:01.5`): months and nanoseconds, or null. */
export function intervalParts(text: string): { months: number; nanos: bigint } | null {
  let rest = text.trim();
  let months = 0;
  let nanos = 0n;
  const unit = /^(-?\d+) (years|year|months|month|days|day)\s*/;
  for (let m = unit.exec(rest); m; m = unit.exec(rest)) {
    const n = Number(m[1]);
    if (m[2].startsWith('year')) months += 12 * n;
    else if (m[2].startsWith('month')) months += n;
    else nanos += BigInt(n) * day;
    rest = rest.slice(m[0].length);
  }
  if (rest !== '') {
    const clock = /^(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/.exec(rest);
    if (!clock) return null;
    const fraction = BigInt((clock[5] ?? '').padEnd(9, '0'));
    const value = (BigInt(clock[2]) * 3600n + BigInt(clock[3]) * 60n + BigInt(clock[4])) * second + fraction;
    nanos += clock[1] ? -value : value;
  }
  return { months, nanos };
}

/** DuckDB's text of a TIMESTAMP_NS (`2024-01-01 00:00:00.5`) as nanoseconds since the epoch, or null. */
export function timestampNanos(text: string): bigint | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$/.exec(text.trim());
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
  return BigInt(ms) * 1_000_000n + BigInt((m[7] ?? '').padEnd(9, '0'));
}

/** An instant as RFC 3339 text, for provenance. */
export function instantText(nanos: bigint): string {
  const ms = nanos / 1_000_000n - (nanos % 1_000_000n < 0n ? 1n : 0n);
  const rest = nanos - ms * 1_000_000n;
  const base = new Date(Number(ms)).toISOString().replace(/\.\d{3}Z$/, '');
  const fraction = ((ms % 1000n) + 1000n) % 1000n;
  const digits = `${String(fraction).padStart(3, '0')}${String(rest).padStart(6, '0')}`.replace(/0+$/, '');
  return `${base}${digits ? `.${digits}` : ''}Z`;
}

const mod = (a: bigint, b: bigint): bigint => ((a % b) + b) % b;
const at = (year: number, month: number, dayOfMonth: number): bigint =>
  BigInt(Date.UTC(year, month, dayOfMonth)) * 1_000_000n;

/** The buckets of DuckDB's `time_bucket(width, t)` with its default origins (2000-01-03 for widths in days and less, 2000-01-01 for months). */
export function timeBucketLadder(width: { months: number; nanos: bigint }, origin?: bigint): Ladder | null {
  if (width.months > 0 && width.nanos === 0n) {
    if (origin === undefined) return { kind: 'months', months: width.months, origin: 2000 * 12 };
    const date = new Date(Number(origin / 1_000_000n));
    if (origin % day !== 0n || date.getUTCDate() !== 1) return null;
    return { kind: 'months', months: width.months, origin: date.getUTCFullYear() * 12 + date.getUTCMonth() };
  }
  if (width.months !== 0 || width.nanos <= 0n) return null;
  return { kind: 'fixed', width: width.nanos, origin: origin ?? at(2000, 0, 3) };
}

/** The buckets of `date_trunc(unit, t)` in UTC. */
export function truncLadder(unit: string): Ladder | null {
  const fixed: Record<string, bigint> = {
    microsecond: ns,
    microseconds: ns,
    millisecond: 1000n * ns,
    milliseconds: 1000n * ns,
    second,
    seconds: second,
    minute: 60n * second,
    minutes: 60n * second,
    hour: 3600n * second,
    hours: 3600n * second,
    day,
    days: day,
  };
  const u = unit.toLowerCase();
  if (fixed[u] !== undefined) return { kind: 'fixed', width: fixed[u], origin: 0n };
  if (u === 'week' || u === 'weeks') return { kind: 'fixed', width: 7n * day, origin: at(1970, 0, 5) };
  const months: Record<string, number> = { month: 1, months: 1, quarter: 3, quarters: 3, year: 12, years: 12 };
  if (months[u] !== undefined) return { kind: 'months', months: months[u], origin: 0 };
  return null;
}

/** Whether every bucket boundary of `query` is one of `rollup`'s: each query bucket is then a union of rollup buckets. */
export function divides(rollup: Ladder, query: Ladder): boolean {
  if (rollup.kind === 'fixed') {
    if (query.kind === 'fixed')
      return query.width % rollup.width === 0n && mod(query.origin - rollup.origin, rollup.width) === 0n;
    // Months start at midnights: every midnight must be a rollup boundary.
    return day % rollup.width === 0n && mod(rollup.origin, rollup.width) === 0n;
  }
  if (query.kind === 'fixed') return false;
  return (
    query.months % rollup.months === 0 &&
    (((query.origin - rollup.origin) % rollup.months) + rollup.months) % rollup.months === 0
  );
}

/** Whether an instant starts a bucket of the ladder. */
export function onBoundary(ladder: Ladder, nanos: bigint): boolean {
  if (ladder.kind === 'fixed') return mod(nanos - ladder.origin, ladder.width) === 0n;
  if (mod(nanos, day) !== 0n) return false;
  const date = new Date(Number(nanos / 1_000_000n));
  if (date.getUTCDate() !== 1) return false;
  const index = date.getUTCFullYear() * 12 + date.getUTCMonth();
  return (((index - ladder.origin) % ladder.months) + ladder.months) % ladder.months === 0;
}

/** A ladder's width in nanoseconds, months counted as 30 days: to pick the coarsest rollup. */
export function approximateWidth(ladder: Ladder): bigint {
  return ladder.kind === 'fixed' ? ladder.width : BigInt(ladder.months) * 30n * day;
}

/** The start of the bucket holding an instant. */
export function floorBoundary(ladder: Ladder, nanos: bigint): bigint {
  if (ladder.kind === 'fixed') return nanos - mod(nanos - ladder.origin, ladder.width);
  const date = new Date(Number((nanos - mod(nanos, 1_000_000n)) / 1_000_000n));
  const index = date.getUTCFullYear() * 12 + date.getUTCMonth();
  const start = index - ((((index - ladder.origin) % ladder.months) + ladder.months) % ladder.months);
  return at(Math.floor(start / 12), start % 12, 1);
}

/** The first bucket boundary at or after an instant. */
export function ceilBoundary(ladder: Ladder, nanos: bigint): bigint {
  const floor = floorBoundary(ladder, nanos);
  if (floor === nanos) return floor;
  if (ladder.kind === 'fixed') return floor + ladder.width;
  const date = new Date(Number(floor / 1_000_000n));
  return at(date.getUTCFullYear(), date.getUTCMonth() + ladder.months, 1);
}
