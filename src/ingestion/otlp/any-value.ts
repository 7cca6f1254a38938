// AnyValue and KeyValue lists (attributes) to JSON-compatible values; the canonical resource key.
import { malformed } from './errors.js';
import {
  badField,
  element,
  field,
  int64,
  list,
  message,
  optDouble,
  str,
  type Field,
  type OtlpNode,
} from './otlp-fields.js';
import { isProtoMessage } from './otlp-proto.js';
import type { Attributes, AttrValue, OtlpScope } from './otlp-types.js';

/** AnyValues nested deeper than this (arrays in arrays, lists in lists) are refused. */
export const MAX_ANY_VALUE_DEPTH = 32;

const STRING = field('stringValue');
const BOOL = field('boolValue');
const INT = field('intValue');
const DOUBLE = field('doubleValue');
const ARRAY = field('arrayValue');
const KVLIST = field('kvlistValue');
const BYTES = field('bytesValue');
const VALUES = field('values');
const KEY = field('key');
const VALUE = field('value');
const ATTRIBUTES = field('attributes');
const NAME = field('name');
const VERSION = field('version');
const SCOPE = field('scope');
const KINDS: readonly Field[] = [STRING, BOOL, INT, DOUBLE, ARRAY, KVLIST, BYTES];
const BY_NAME = new Map(KINDS.map((k) => [k.camel, k]));
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** Which AnyValue field is set: protobufjs names it in the `value` oneof; JSON must have at most one. */
function setKind(v: OtlpNode, path: string): Field | undefined {
  if (isProtoMessage(v)) return BY_NAME.get((v as { value?: string }).value ?? '');
  let found: Field | undefined;
  for (const kind of KINDS) {
    const value = v[kind.camel] ?? v[kind.snake];
    if (value === undefined || value === null) continue;
    if (found) throw malformed(`${path}: an AnyValue sets both ${found.camel} and ${kind.camel}`);
    found = kind;
  }
  return found;
}

/** Converts one AnyValue message (or null) to a JSON-compatible value. */
export function anyValue(v: OtlpNode | null, path: string, depth = 0): AttrValue {
  if (v === null) return null;
  if (depth >= MAX_ANY_VALUE_DEPTH)
    throw malformed(`${path}: AnyValue nested deeper than ${MAX_ANY_VALUE_DEPTH} levels`);
  const kind = setKind(v, path);
  switch (kind) {
    case undefined:
      return null;
    case STRING:
      return str(v, STRING, path);
    case BOOL: {
      const value = v[BOOL.camel] ?? v[BOOL.snake];
      if (typeof value !== 'boolean') throw badField(path, BOOL, 'a boolean', value);
      return value;
    }
    case INT: {
      const n = int64(v, INT, path);
      return n >= MIN_SAFE && n <= MAX_SAFE ? Number(n) : n.toString();
    }
    case DOUBLE:
      return optDouble(v, DOUBLE, path) ?? 0;
    case ARRAY: {
      const array = message(v, ARRAY, path) as OtlpNode;
      const itemsPath = `${path}.arrayValue`;
      const items = list(array, VALUES, itemsPath);
      const out: AttrValue[] = new Array(items.length);
      for (let i = 0; i < items.length; i++)
        out[i] = anyValue(element(items, i, itemsPath, VALUES), `${itemsPath}.values[${i}]`, depth + 1);
      return out;
    }
    case KVLIST:
      return keyValues(message(v, KVLIST, path) as OtlpNode, VALUES, `${path}.kvlistValue`, depth + 1);
    default: {
      const value = v[BYTES.camel] ?? v[BYTES.snake];
      if (value instanceof Uint8Array)
        return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
      if (typeof value === 'string' && BASE64.test(value)) return Buffer.from(value, 'base64').toString('base64');
      throw badField(path, BYTES, 'base64 bytes', value);
    }
  }
}

/**
 * An AnyValue as text: a string value as is, numbers and booleans as their literal, '' when empty,
 * anything else (bytes as base64, arrays, lists) as JSON.
 */
export function anyValueText(v: OtlpNode | null, path: string): string {
  const value = anyValue(v, path);
  if (value === null) return '';
  if (typeof value === 'string') return setKind(v as OtlpNode, path) === STRING ? value : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function keyValues(o: OtlpNode, f: Field, path: string, depth: number): Attributes {
  const items = list(o, f, path);
  const out: Attributes = {};
  for (let i = 0; i < items.length; i++) {
    const kvPath = `${path}.${f.camel}[${i}]`;
    const kv = element(items, i, path, f);
    const key = str(kv, KEY, kvPath);
    const value = anyValue(message(kv, VALUE, kvPath), `${kvPath}.value`, depth);
    if (key === '__proto__')
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    else out[key] = value;
  }
  return out;
}

/** The `attributes` field (repeated KeyValue) of a message as an object; the last of duplicate keys wins. */
export const attributes = (o: OtlpNode, path: string): Attributes => keyValues(o, ATTRIBUTES, path, 0);

/** The `scope` field (InstrumentationScope) of a ScopeLogs / ScopeMetrics / ScopeSpans. */
export function scopeOf(o: OtlpNode, path: string): OtlpScope {
  const scope = message(o, SCOPE, path);
  if (scope === null) return { name: '', version: '' };
  return { name: str(scope, NAME, `${path}.scope`), version: str(scope, VERSION, `${path}.scope`) };
}

function canonical(value: AttrValue): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A stable canonical string for a set of resource attributes: JSON with keys sorted at every level, so
 * the same attributes in any order give the same key.
 *
 * @example
 * resourceKey({ 'service.name': 'api', 'host.name': 'h1' }) // '{"host.name":"h1","service.name":"api"}'
 */
export const resourceKey = (attributes: Attributes): string => canonical(attributes);
