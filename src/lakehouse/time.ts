// Nanosecond timestamps (bigint since the epoch) to and from the text forms Postgres and
// DuckDB read. Postgres keeps microseconds: conversions say which way they round.

/** RFC 3339 with nanoseconds, UTC (`2024-01-02T03:04:05.123456789Z`). */
export function nanosToIso(ns: bigint): string {
  const millis = ns / 1_000_000n - (ns % 1_000_000n < 0n ? 1n : 0n);
  const nanosOfMilli = ns - millis * 1_000_000n;
  const iso = new Date(Number(millis)).toISOString();
  return `${iso.slice(0, 23)}${nanosOfMilli.toString().padStart(6, '0')}Z`;
}

/** For Postgres timestamptz: microsecond precision, rounded down or up. */
export function nanosToPg(ns: bigint, round: 'floor' | 'ceil' = 'floor'): string {
  let micros = ns / 1000n;
  if (round === 'floor' && ns % 1000n < 0n) micros -= 1n;
  if (round === 'ceil' && ns % 1000n > 0n) micros += 1n;
  return nanosToIso(micros * 1000n).replace(/000Z$/, 'Z');
}

/** Nanoseconds of a UTC time Postgres wrote as `YYYY-MM-DD"T"HH24:MI:SS.US"Z"` (microseconds, six digits). */
export function pgIsoToNanos(text: string): bigint {
  return BigInt(Date.parse(`${text.slice(0, 19)}Z`)) * 1_000_000n + BigInt(text.slice(20, 26)) * 1000n;
}

/** SQL expression turning a timestamptz column into bigint nanoseconds (Postgres). */
export const pgNanos = (column: string): string => `(extract(epoch from ${column}) * 1000000)::bigint * 1000`;

export const nowNanos = (): bigint => BigInt(Date.now()) * 1_000_000n;
export const secondsToNanos = (s: number): bigint => BigInt(s) * 1_000_000_000n;
