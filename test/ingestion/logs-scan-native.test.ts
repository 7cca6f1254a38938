// Issue 16: the native validating scan of OTLP logs bodies (src/engine/native/logs-scan.cc) gives the
// JavaScript scan's verdict (src/ingestion/otlp/logs-scan.ts) on every body: the same null, or the same
// resources, record counts and time spans. The corpus: random bodies, each also mutated (a byte changed,
// cut short, a byte inserted), and hand-made bodies for every rule of the scan and the poison kinds of
// issue 9 (invalid UTF-8 where a string sits, times out of range, NUL in resource attributes, ids of a
// wrong size, nesting, repeated fields, varints the JavaScript arithmetic reads in its own way).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { nativeLogsScan } from '../../src/engine/native-export.js';
import { scanLogs, scanLogsWith, type ScannedResourceLogs } from '../../src/ingestion/otlp/index.js';
import { MAX_TIME_UNIX_NANO } from '../../src/ingestion/otlp/otlp-fields.js';
import { protobufOf, random, randomRequest, t0 } from '../support/otlp-logs-corpus.js';

const flat = nativeLogsScan();
const nativeScan = flat ? scanLogsWith(flat) : null;

/** Asserts both scans agree on the body; returns the verdict. */
function same(body: Uint8Array, what: string): ScannedResourceLogs[] | null {
  assert.ok(nativeScan, 'the native addon is built (npm run build)');
  const js = scanLogs(body);
  assert.deepEqual(nativeScan(body), js, what);
  return js;
}

// Wire-format pieces, to build bodies the SDK encoder would not.
const varint = (n: bigint): number[] => {
  const out: number[] = [];
  do {
    const low = Number(n & 0x7fn);
    n >>= 7n;
    out.push(n > 0n ? low | 0x80 : low);
  } while (n > 0n);
  return out;
};
const len = (field: number, bytes: number[]): number[] => [(field << 3) | 2, ...varint(BigInt(bytes.length)), ...bytes];
const fixed64 = (field: number, value: bigint): number[] => [
  (field << 3) | 1,
  ...Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(8 * i)) & 0xffn)),
];
const text = (s: string): number[] => [...Buffer.from(s)];
const anyString = (bytes: number[]): number[] => len(1, bytes);
const keyValue = (key: number[], value: number[]): number[] => [...len(1, key), ...len(2, value)];
/** A body of one ResourceLogs of one ScopeLogs holding the records (each a LogRecord's fields). */
const body = (records: number[][], scope: number[] = len(1, text('s')), resource: number[] = []): Uint8Array =>
  Uint8Array.from(len(1, [...resource, ...len(2, [...len(1, scope), ...records.flatMap((r) => len(2, r))])]));
const timed = (...fields: number[][]): number[] => [...fixed64(1, t0), ...fields.flat()];

describe('issue 16: the native logs scan gives the JavaScript scan its verdict', () => {
  it('on random bodies and their mutations (a byte changed, cut short, a byte inserted)', () => {
    const next = random(1609);
    let vouched = 0;
    let refused = 0;
    for (let n = 0; n < 1500; n++) {
      const good = protobufOf(randomRequest(next));
      const at = Math.floor(next() * good.length);
      const changed = Uint8Array.from(good);
      changed[at] = Math.floor(next() * 256);
      const inserted = Uint8Array.from([...good.subarray(0, at), Math.floor(next() * 256), ...good.subarray(at)]);
      for (const [what, b] of [
        ['good', good],
        ['changed', changed],
        ['cut', good.subarray(0, at)],
        ['inserted', inserted],
      ] as const) {
        if (same(b, `${what} body ${n} (byte ${at})`) === null) refused++;
        else vouched++;
      }
    }
    assert.ok(vouched > 2000 && refused > 1000, `${vouched} vouched for, ${refused} refused`);
  });

  it('on invalid UTF-8 (issue 9) at every position of every string a record, scope or attribute holds', () => {
    const bad = [
      [0xff],
      [0xc0, 0x80],
      [0xc3],
      [0xe0, 0x80, 0x80],
      [0xed, 0xa0, 0x80],
      [0xed, 0xbf, 0xbf],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf5, 0x80, 0x80, 0x80],
      [0xe2, 0x82],
      [0xf0, 0x9f, 0x98],
    ];
    const good = [
      [0xc3, 0xa9],
      [0xe2, 0x82, 0xac],
      [0xf0, 0x9f, 0x98, 0x80],
      [0xef, 0xbf, 0xbf],
      [0xf4, 0x8f, 0xbf, 0xbf],
      [0xed, 0x9f, 0xbf],
      [0],
    ];
    const places: Array<[string, (s: number[]) => Uint8Array]> = [
      ['a body string', (s) => body([timed(len(5, anyString(s)))])],
      ['a severity text', (s) => body([timed(len(3, s))])],
      ['an event name', (s) => body([timed(len(12, s))])],
      ['an attribute key', (s) => body([timed(len(6, keyValue(s, anyString(text('v')))))])],
      ['an attribute value', (s) => body([timed(len(6, keyValue(text('k'), anyString(s))))])],
      ['a kvlist key in a body', (s) => body([timed(len(5, len(6, len(1, keyValue(s, [])))))])],
      ['an array item', (s) => body([timed(len(5, len(5, len(1, anyString(s)))))])],
      ['a scope name', (s) => body([timed()], len(1, s))],
      ['a scope version', (s) => body([timed()], len(2, s))],
      ['a scope attribute', (s) => body([timed()], len(3, keyValue(text('k'), anyString(s))))],
      ['a scope logs schema URL', (s) => Uint8Array.from(len(1, len(2, [...len(2, timed()), ...len(3, s)])))],
    ];
    let refused = 0;
    for (const [where, make] of places)
      for (const sequence of [...bad, ...good])
        for (let k = 0; k < 20; k++) {
          const s = [...text('a'.repeat(k)), ...sequence, ...text('b'.repeat(19 - k))];
          if (same(make(s), `${where}: [${sequence.join(',')}] at ${k}`) === null) refused++;
        }
    assert.equal(refused, places.length * bad.length * 20);
  });

  it('on times (issue 9): at and past the last TIMESTAMP_NS, none at all, only the observed one', () => {
    for (const field of [1, 11])
      for (const time of [
        MAX_TIME_UNIX_NANO,
        MAX_TIME_UNIX_NANO - 1n,
        (1n << 63n) - 1n,
        (1n << 64n) - 1n,
        1n << 32n,
        1n,
      ])
        same(body([[...fixed64(field, time)]]), `field ${field} = ${time}`);
    assert.equal(same(body([[...len(5, anyString(text('no time')))]]), 'no time'), null);
    const spans = same(
      body([[...fixed64(11, t0 + 5n)], timed(), [...fixed64(1, 0n), ...fixed64(11, t0 - 3n)]]),
      'spans',
    );
    assert.deepEqual(
      spans?.map((r) => [r.records, r.begin, r.end]),
      [[3, t0 - 3n, t0 + 5n]],
    );
  });

  it('on NUL in resource attributes (issue 9; refused by decoding the resource, not by the scan), ids and nesting', () => {
    const resource = len(1, len(1, keyValue(text('host.name'), anyString([0x61, 0, 0x62]))));
    assert.ok(same(body([timed()], undefined, resource), 'NUL in a resource attribute'));
    for (const size of [0, 1, 8, 15, 16, 17])
      for (const field of [9, 10]) same(body([timed(len(field, Array(size).fill(7)))]), `id ${field} of ${size}`);
    for (let depth = 12; depth <= 18; depth++) {
      let value = anyString(text('deep'));
      for (let d = 0; d < depth; d++) value = len(5, len(1, value));
      same(body([timed(len(5, value))]), `arrays ${depth} deep`);
      let kv = anyString(text('deep'));
      for (let d = 0; d < depth; d++) kv = len(6, len(1, keyValue(text('k'), kv)));
      same(body([timed(len(6, keyValue(text('k'), kv)))]), `kvlists ${depth} deep`);
    }
  });

  it('on fields repeated, unknown or of the wrong wire type, and on varints JavaScript reads in its own way', () => {
    const bodies: Array<[string, number[][]]> = [
      ['two times', [timed(fixed64(1, t0))]],
      ['two bodies', [timed(len(5, anyString([])), len(5, anyString([])))]],
      ['two attributes', [timed(len(6, keyValue(text('a'), [])), len(6, keyValue(text('b'), [])))]],
      ['two values in one AnyValue', [timed(len(5, [...anyString([]), 0x10, 1]))]],
      ['an unknown record field', [timed([(13 << 3) | 0, 1])]],
      ['flags as a varint', [timed([(8 << 3) | 0, 1])]],
      ['flags as fixed32', [timed([(8 << 3) | 5, 1, 0, 0, 0])]],
      ['severity as fixed64', [timed(fixed64(2, 1n))]],
      ['a double body', [timed(len(5, fixed64(4, 1n)))]],
      [
        'bool, int, bytes bodies',
        [timed(len(5, [0x10, 1])), timed(len(5, [0x18, 0xff, 0xff, 0x01])), timed(len(5, len(7, [0, 1])))],
      ],
      ['an empty AnyValue', [timed(len(5, []))]],
      ['a record tag in two bytes', [[0x89, 0x00, ...fixed64(1, t0).slice(1)]]],
      ['a record tag past 2^32 (field 1 modulo 2^32)', [[0x89, 0x80, 0x80, 0x80, 0x10, ...fixed64(1, t0).slice(1)]]],
      ['a ten-byte varint', [timed([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]],
      ['an eleven-byte varint', [timed([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]],
      ['a length past the end', [timed([0x2a, 0xff, 0xff, 0xff, 0xff, 0x0f])]],
      ['a huge length', [timed([0x2a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01])]],
    ];
    for (const [what, records] of bodies) same(body(records), what);
    const scopes: Array<[string, number[]]> = [
      ['a scope name twice', [...len(1, text('a')), ...len(1, text('b'))]],
      ['two scope attributes', [...len(3, keyValue(text('a'), [])), ...len(3, keyValue(text('b'), []))]],
      ['a dropped count', [0x20, 0x05]],
      ['a dropped count as LEN', len(4, [])],
      ['a scope tag past 2^32 (name modulo 2^32)', [0x8a, 0x80, 0x80, 0x80, 0x10, 0x01, 0x61]],
      ['field 5 of a scope', len(5, [])],
      ['field 0 of a scope', [0x02, 0x00]],
    ];
    for (const [what, scope] of scopes) same(body([timed()], scope), what);
    for (const raw of [
      [],
      [0x0a],
      [0x0a, 0x00],
      [0x12, 0x00],
      [0x0a, 0x02, 0x0a, 0x00],
      [0x0a, 0x02, 0x1a, 0x00],
      [0x0a, 0x04, 0x0a, 0x00, 0x0a, 0x00],
    ])
      same(Uint8Array.from(raw), `raw [${raw.join(',')}]`);
  });
});
