// Random OTLP logs requests for the tests of the validating scan (issue 16): seeded, so a failure is
// reproducible; every AnyValue kind, strings with escapes and non-ASCII text, ids of every size, records
// with and without a time.
import { brotliCompressSync, constants } from 'node:zlib';
import { nativeZstdPayload } from '../../src/engine/native-export.js';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';

/** The records' base time (ns). */
export const t0 = 1_700_000_000_000_000_000n;

/** An ExportLogsServiceRequest in protobufjs form, encoded. */
export const protobufOf = (object: object): Uint8Array => {
  const type = exportRequestTypes.logs;
  return type.encode(type.fromObject(object)).finish();
};

/** A seeded generator (mulberry32), so a failure is reproducible. */
export function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random log records in protobufjs form: strings with escapes and non-ASCII text, every AnyValue kind. */
export function randomRequest(next: () => number): object {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)];
  const text = (): string =>
    Array.from({ length: Math.floor(next() * 8) }, () =>
      pick(['a', 'Z', ' ', '"', '\\', '\n', '\t', '\u0001', '\u001f', '\u007f', 'é', '€', '😀', '\u2028', '/', '<']),
    ).join('');
  const key = (): string => pick(['k', 'a.b', 'é', 'q"uote', '1', '07', '__proto__', 'otel.severity_text', text()]);
  const doubles = [0, -0, 0.1, -1.5, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, NaN, Infinity, -Infinity, 123456789];
  const ints = ['0', '-1', '42', '9007199254740991', '9007199254740993', '-9223372036854775808', '9223372036854775807'];
  const value = (depth: number): object => {
    switch (Math.floor(next() * (depth > 2 ? 6 : 8))) {
      case 0:
        return { stringValue: text() };
      case 1:
        return { boolValue: next() < 0.5 };
      case 2:
        return { intValue: pick(ints) };
      case 3:
        return { doubleValue: pick(doubles) };
      case 4:
        return { bytesValue: Buffer.from(text()) };
      case 5:
        return {};
      case 6:
        return { arrayValue: { values: Array.from({ length: Math.floor(next() * 3) }, () => value(depth + 1)) } };
      default:
        return { kvlistValue: { values: attributes(depth + 1) } };
    }
  };
  const attributes = (depth: number): object[] =>
    Array.from({ length: Math.floor(next() * 4) }, () =>
      next() < 0.1 ? { key: key() } : { key: key(), value: value(depth) },
    );
  const id = (size: number): Buffer =>
    next() < 0.3
      ? Buffer.alloc(0)
      : next() < 0.2
        ? Buffer.alloc(size)
        : Buffer.from(Array.from({ length: size }, () => Math.floor(next() * 256)));
  const record = (): object => ({
    ...(next() < 0.8 ? { timeUnixNano: String(t0 + BigInt(Math.floor(next() * 1e9))) } : {}),
    observedTimeUnixNano: String(t0 + 7n),
    ...(next() < 0.7 ? { severityNumber: Math.floor(next() * 25) } : {}),
    ...(next() < 0.4 ? { severityText: text() } : {}),
    ...(next() < 0.9 ? { body: next() < 0.6 ? { stringValue: text() } : value(0) } : {}),
    attributes: attributes(0),
    ...(next() < 0.5 ? { traceId: id(16), spanId: id(8) } : {}),
  });
  return {
    resourceLogs: Array.from({ length: 1 + Math.floor(next() * 2) }, () => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'fuzz' } }] },
      scopeLogs: Array.from({ length: 1 + Math.floor(next() * 2) }, () => ({
        ...(next() < 0.8 ? { scope: { name: text(), version: '1' } } : {}),
        logRecords: Array.from({ length: 1 + Math.floor(next() * 4) }, record),
      })),
    })),
  };
}

const traceHex = '0af7651916cd43dd8448eb211c80319c';
const spanHex = 'b7ad6b7169203331';

/** Attribute values of every AnyValue kind, nested, in OTLP/JSON form (bytes as base64, ints as strings). */
const attributesJson = [
  { key: 'str', value: { stringValue: 'héllo "quoted"\n' } },
  { key: 'int', value: { intValue: '9007199254740993' } },
  { key: 'small', value: { intValue: '-42' } },
  { key: 'dbl', value: { doubleValue: 0.1 } },
  { key: 'bool', value: { boolValue: true } },
  { key: 'bytes', value: { bytesValue: Buffer.from([0, 1, 254, 255]).toString('base64') } },
  {
    key: 'arr',
    value: { arrayValue: { values: [{ stringValue: 'a' }, { intValue: '1' }, { arrayValue: { values: [] } }] } },
  },
  {
    key: 'kv',
    value: { kvlistValue: { values: [{ key: 'inner', value: { kvlistValue: { values: [] } } }, { key: 'x' }] } },
  },
  { key: 'empty' },
];

/** `n` records of every kind of field (`json`: ids as hex, else bytes), tagged in their bodies. */
export function sampleRecords(n: number, tag: string, json: boolean): object[] {
  return Array.from({ length: n }, (_, i) => ({
    ...(i % 3 === 2
      ? { observedTimeUnixNano: String(t0 + BigInt(i)) } // no time: the observed time stands in
      : { timeUnixNano: String(t0 + BigInt(i)), observedTimeUnixNano: String(t0 + 5n) }),
    severityNumber: (i % 24) + 1,
    ...(i % 2 ? { severityText: 'LOUD' } : {}),
    body:
      i % 4 === 1
        ? { kvlistValue: { values: [{ key: 'b', value: { intValue: String(i) } }] } }
        : { stringValue: `${tag} ${i}` },
    attributes: i % 5 === 0 ? attributesJson : [{ key: 'i', value: { intValue: String(i) } }],
    ...(i % 2
      ? json
        ? { traceId: traceHex, spanId: spanHex }
        : { traceId: Buffer.from(traceHex, 'hex'), spanId: Buffer.from(spanHex, 'hex') }
      : {}),
    flags: 1,
  }));
}

/** A request of `resources` resources named `<service>-<i>`, two scopes each (7 and 5 records by default). */
export function sampleRequest(service: string, json: boolean, resources = 1, withRecords = sampleRecords): object {
  return {
    resourceLogs: Array.from({ length: resources }, (_, r) => ({
      resource: { attributes: [{ key: 'service.name', value: { stringValue: `${service}-${r}` } }] },
      scopeLogs: [
        { scope: { name: 'lib.a', version: '1' }, logRecords: withRecords(7, `r${r}a`, json) },
        { scope: { name: 'lib.b', attributes: attributesJson }, logRecords: withRecords(5, `r${r}b`, json) },
      ],
    })),
  };
}

/** A mark, then `length` as a varint: the head of a compressed protobuf payload. */
function markedLength(mark: number, length: number): Buffer {
  const head = [mark];
  for (let n = length; ; n = Math.floor(n / 128)) {
    head.push(n >= 128 ? (n % 128) | 0x80 : n);
    if (n < 128) break;
  }
  return Buffer.from(head);
}

/**
 * A protobuf body as ingestion stored it compressed with brotli (quality 0): `marked`, the 0xcf mark and its length
 * (a varint), as since #16's decompression on the decode thread; else the 0xce mark alone, as before it.
 */
export function brotliStored(body: Uint8Array, marked = true, length = body.length): Uint8Array {
  const stream = brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 0 } });
  return Buffer.concat([marked ? markedLength(0xcf, length) : Buffer.from([0xce]), stream]);
}

/**
 * A protobuf body as a server with the native addon stores it: the 0xd7 mark, `length` (a varint: the body's own,
 * unless a test damages it) and a zstd frame (src/engine/native/payload-zstd.cc).
 */
export function zstdStored(body: Uint8Array, length = body.length): Uint8Array {
  const stored = nativeZstdPayload()?.(body);
  if (!stored) throw new Error('the native addon is built (npm run build)');
  let start = 1;
  while (stored[start++] >= 0x80);
  return Buffer.concat([markedLength(0xd7, length), stored.subarray(start)]);
}
