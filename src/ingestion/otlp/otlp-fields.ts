// Typed reads of OTLP fields from either a protobufjs-decoded message or a value parsed from OTLP/JSON.
// Protobuf messages carry camelCase properties (defaults on the prototype, 64-bit ints as Long, bytes as
// Uint8Array); JSON objects may use lowerCamelCase or snake_case keys, 64-bit ints as strings or numbers,
// ids as hex strings and enums as ints (or their names). Each read checks the type and names the path.
import { malformed, type OtlpDecodeError } from './errors.js';
import { isLong } from './otlp-proto.js';

/** A decoded message or a JSON object. */
export type OtlpNode = Record<string, unknown>;

/** A field name in both of its JSON spellings. */
export interface Field {
  readonly camel: string;
  readonly snake: string;
}

/** Names a field once, deriving its snake_case spelling. */
export const field = (camel: string): Field => ({
  camel,
  snake: camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
});

const read = (o: OtlpNode, f: Field): unknown => {
  const value = o[f.camel];
  return value === undefined ? o[f.snake] : value;
};

const describe = (value: unknown): string => {
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (typeof value === 'object' && value !== null) return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
};

/** The 400 error for a field whose value has the wrong type or form. */
export const badField = (path: string, f: Field | string, expected: string, got: unknown): OtlpDecodeError =>
  malformed(`${path}.${typeof f === 'string' ? f : f.camel}: expected ${expected}, got ${describe(got)}`);

const isNode = (value: unknown): value is OtlpNode =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);

// With the u flag a surrogate pair is one code point, so this matches only lone surrogates.
const LONE_SURROGATE = /\p{Cs}/u;
// Node 20's String.prototype.isWellFormed (ES2024, not in the ES2022 lib types): native, and immediate
// for one-byte strings, unlike the regular expression, which only names the culprit.
const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed;

/**
 * A string field; '' when unset. Strings must be valid Unicode, as protobuf strings must be valid UTF-8
 * (protobufjs refuses those that are not): OTLP/JSON can still spell a lone surrogate as a `"\ud800"`
 * escape, which DuckDB and Postgres cannot read, so it is refused here.
 */
export function str(o: OtlpNode, f: Field, path: string): string {
  const value = read(o, f);
  if (typeof value === 'string') {
    if (isWellFormed.call(value)) return value;
    const lone = LONE_SURROGATE.exec(value)!;
    throw malformed(
      `${path}.${f.camel}: not valid Unicode (a lone surrogate U+${lone[0].charCodeAt(0).toString(16).toUpperCase()} at index ${lone.index})`,
    );
  }
  if (value === undefined || value === null) return '';
  throw badField(path, f, 'a string', value);
}

/** A bool field; false when unset. */
export function bool(o: OtlpNode, f: Field, path: string): boolean {
  const value = read(o, f);
  if (typeof value === 'boolean') return value;
  if (value === undefined || value === null) return false;
  throw badField(path, f, 'a boolean', value);
}

const INT = /^-?\d+$/;

function integer(value: unknown, min: number, max: number): number | undefined {
  const n = typeof value === 'string' && INT.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max ? n : undefined;
}

/** A uint32 (or fixed32) field; 0 when unset. */
export function uint32(o: OtlpNode, f: Field, path: string): number {
  const value = read(o, f);
  if (value === undefined || value === null) return 0;
  const n = integer(value, 0, 0xffffffff);
  if (n === undefined) throw badField(path, f, 'an unsigned 32-bit integer', value);
  return n;
}

/** An enum field as its number (JSON may also give the value's name); 0 when unset. */
export function enumValue(o: OtlpNode, f: Field, path: string, names: Readonly<Record<string, number>>): number {
  const value = read(o, f);
  if (value === undefined || value === null) return 0;
  const n =
    typeof value === 'string' && Object.hasOwn(names, value) ? names[value] : integer(value, -0x80000000, 0x7fffffff);
  if (n === undefined) throw badField(path, f, 'an enum number', value);
  return n;
}

const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

/** A 64-bit integer value (Long, safe number or decimal string) as a bigint, or undefined when out of range. */
export function toBigInt(value: unknown, signed: boolean): bigint | undefined {
  let n: bigint;
  if (isLong(value)) {
    const bits = (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
    return value.unsigned ? bits : BigInt.asIntN(64, bits);
  } else if (typeof value === 'number' && Number.isInteger(value)) n = BigInt(value);
  else if (typeof value === 'string' && INT.test(value)) n = BigInt(value);
  else return undefined;
  return (signed ? n >= I64_MIN && n <= I64_MAX : n >= 0n && n <= U64_MAX) ? n : undefined;
}

/** A uint64 / fixed64 field (timestamps, counts); 0n when unset. */
export function uint64(o: OtlpNode, f: Field, path: string): bigint {
  const value = read(o, f);
  if (value === undefined || value === null) return 0n;
  const n = toBigInt(value, false);
  if (n === undefined) throw badField(path, f, 'an unsigned 64-bit integer', value);
  return n;
}

/**
 * Timestamps Orrery stores: nanoseconds since the Unix epoch, below 2262-04-11T23:47:16Z. DuckDB's
 * TIMESTAMP_NS ends at 2^63 - 1 ns (that value itself meaning infinity), and Postgres keeps microseconds,
 * so a bound on whole seconds below it survives rounding either way.
 */
export const MAX_TIME_UNIX_NANO = 9_223_372_036_000_000_000n;

/** A uint64 timestamp field (`*TimeUnixNano`); 0n when unset; refused at or past {@link MAX_TIME_UNIX_NANO}. */
export function timestamp(o: OtlpNode, f: Field, path: string): bigint {
  const n = uint64(o, f, path);
  if (n >= MAX_TIME_UNIX_NANO) {
    throw malformed(
      `${path}.${f.camel}: ${n} is out of range: timestamps must be nanoseconds since 1970 before 2262-04-11T23:47:16Z (below ${MAX_TIME_UNIX_NANO})`,
    );
  }
  return n;
}

/** An int64 / sfixed64 field; 0n when unset. */
export function int64(o: OtlpNode, f: Field, path: string): bigint {
  const value = read(o, f);
  if (value === undefined || value === null) return 0n;
  const n = toBigInt(value, true);
  if (n === undefined) throw badField(path, f, 'a signed 64-bit integer', value);
  return n;
}

const FLOAT = /^-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const SPECIAL: Readonly<Record<string, number>> = { NaN: Number.NaN, Infinity: Infinity, '-Infinity': -Infinity };

/** A double field, or null when unset (JSON may give "NaN", "Infinity", "-Infinity" or a numeric string). */
export function optDouble(o: OtlpNode, f: Field, path: string): number | null {
  const value = read(o, f);
  if (typeof value === 'number') return value;
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') {
    if (Object.hasOwn(SPECIAL, value)) return SPECIAL[value];
    if (FLOAT.test(value)) return Number(value);
  }
  throw badField(path, f, 'a number', value);
}

/** A double field; 0 when unset. */
export const double = (o: OtlpNode, f: Field, path: string): number => optDouble(o, f, path) ?? 0;

/** True when the field is set (to anything but null), in either spelling. */
export const has = (o: OtlpNode, f: Field): boolean => {
  const value = read(o, f);
  return value !== undefined && value !== null;
};

/** A repeated field; [] when unset. */
export function list(o: OtlpNode, f: Field, path: string): unknown[] {
  const value = read(o, f);
  if (Array.isArray(value)) return value;
  if (value === undefined || value === null) return [];
  throw badField(path, f, 'an array', value);
}

/** A message field, or null when unset. */
export function message(o: OtlpNode, f: Field, path: string): OtlpNode | null {
  const value = read(o, f);
  if (isNode(value)) return value;
  if (value === undefined || value === null) return null;
  throw badField(path, f, 'an object', value);
}

/** The i-th element of a repeated message field, which must be an object. */
export function element(items: unknown[], i: number, path: string, f: Field): OtlpNode {
  const value = items[i];
  if (isNode(value)) return value;
  throw badField(path, `${f.camel}[${i}]`, 'an object', value);
}

const HEX = /^[0-9a-fA-F]*$/;

/**
 * A trace or span id of `size` bytes as lowercase hex, or null when unset or empty. Protobuf gives bytes;
 * OTLP/JSON gives hex (not base64). Any other length is an error.
 */
export function id(o: OtlpNode, f: Field, size: number, path: string): string | null {
  const value = read(o, f);
  if (value === undefined || value === null) return null;
  let hex: string;
  if (value instanceof Uint8Array) hex = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  else if (Array.isArray(value) && value.length === 0)
    hex = ''; // protobufjs's default for bytes
  else if (typeof value === 'string' && HEX.test(value)) hex = value.toLowerCase();
  else throw badField(path, f, `${size * 2} hex digits`, value);
  if (hex.length === 0) return null;
  if (hex.length !== size * 2) {
    const got = value instanceof Uint8Array ? `${value.length} bytes` : `${hex.length} hex digits`;
    throw malformed(`${path}.${f.camel}: expected ${size} bytes (${size * 2} hex digits), got ${got}`);
  }
  return hex;
}
