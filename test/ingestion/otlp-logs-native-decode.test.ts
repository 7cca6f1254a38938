// Issue 16: logs payloads stored as received are decoded at materialization by the native addon's
// __orrery_otlp_logs, straight into DuckDB columns. Its rows must be exactly those the JavaScript path
// gives (payloadLines: the NDJSON lines read_json parses), which stays the path with ORRERY_NATIVE=off:
// compared here column by column, as text, in a real DuckDB engine, over random bodies (every AnyValue
// kind, nested arrays and lists, duplicate and integer-like keys, missing fields, ids absent, empty or
// zero), hand-made edge cases (times at the last valid value, int64 limits, doubles JavaScript writes in
// exponent form) and every stored form (brotli after the marker byte, gzip as received, plain). A payload
// that cannot be decoded fails the statement, naming it, as a damaged NDJSON payload fails read_json.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DuckDBEngine, engineErrors } from '../../src/engine/index.js';
import { nativeLogsPayloads } from '../../src/engine/native-export.js';
import { isErrorOf } from '../../src/errors/index.js';
import { payloadContent, payloadLines, storedProtobufSize } from '../../src/ingestion/index.js';
import { MAX_TIME_UNIX_NANO } from '../../src/ingestion/otlp/otlp-fields.js';
import { payloadRows, protobufPayloadName } from '../../src/views/index.js';
import { brotliStored, protobufOf, random, randomRequest, t0, zstdStored } from '../support/otlp-logs-corpus.js';

const columns = 'time, target, level, msg, properties::VARCHAR AS properties, trace_id, span_id, filename';

/**
 * The stored forms of a payload: brotli after the marker and length (what ingestion writes without the addon, and wrote
 * before zstd), brotli after the older marker alone (what it wrote before, and still writes for NDJSON), gzip (as a
 * client sent it), plain, zstd after its marker and length (what a server with the addon writes).
 */
const storedForms = (body: Uint8Array): Array<[string, Uint8Array]> => [
  ['brotli', brotliStored(body)],
  ['brotli, older mark', brotliStored(body, false)],
  ['gzip', gzipSync(body)],
  ['plain', body],
  ['zstd', zstdStored(body)],
];

describe('issue 16: native materialization of OTLP logs payloads gives the JavaScript path its rows', () => {
  let dir: string;
  let engine: DuckDBEngine;
  let file = 0;
  const contentOf = nativeLogsPayloads();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-native-logs-'));
    engine = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir });
  });
  after(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Writes a file; its path. */
  const put = (bytes: Uint8Array): string => {
    const path = join(dir, `p${file++}`);
    writeFileSync(path, bytes);
    return path;
  };

  /** Rows of these stored payloads read natively and through their NDJSON lines, with the file names made the same. */
  async function bothWays(payloads: readonly Uint8Array[]): Promise<{ native: string[]; js: string[] }> {
    assert.ok(contentOf, 'the native addon is built (npm run build)');
    // One file, the payloads one after the other, as the materializer writes them.
    const bundle = { file: put(Buffer.concat(payloads)), sizes: payloads.map((p) => p.length) };
    const stored = payloads.map((_, i) => protobufPayloadName(bundle.file, i));
    const lines = payloads.map((p) => put(payloadLines(p)));
    for (const p of payloads) assert.deepEqual(Buffer.from((await contentOf(p))!), Buffer.from(payloadContent(p)));
    // Files by their place in the list, rows in one order (a row's text, times as decimal).
    const canonical = (paths: string[], rows: unknown[][]): string[] =>
      rows.map((row) => JSON.stringify([paths.indexOf(row.at(-1) as string), ...row.slice(0, -1).map(String)])).sort();
    const native = await engine.values(`SELECT ${columns} FROM ${payloadRows('log', [], bundle)}`);
    const js = await engine.values(`SELECT ${columns} FROM ${payloadRows('log', lines)}`);
    return { native: canonical(stored, native), js: canonical(lines, js) };
  }

  it('on 600 random bodies, in every stored form', async () => {
    const next = random(4242);
    let rows = 0;
    for (let round = 0; round < 20; round++) {
      const bodies = Array.from({ length: 30 }, () => protobufOf(randomRequest(next)));
      const forms = bodies.map((b, i) => storedForms(b)[i % 5][1]);
      const { native, js } = await bothWays(forms);
      assert.deepEqual(native, js, `round ${round}`);
      rows += js.length;
    }
    assert.ok(rows > 2000, `${rows} rows compared`);
  });

  it('on edge cases: last valid time, int64 limits, doubles, deep nesting, key order, empty records', async () => {
    const deep = (n: number): object =>
      n === 0 ? { stringValue: 'leaf' } : { kvlistValue: { values: [{ key: String(n), value: deep(n - 1) }] } };
    const attributes = [
      { key: 'z', value: { intValue: '1' } },
      { key: '10', value: { intValue: '2' } },
      { key: '2', value: { doubleValue: 1e21 } },
      { key: '4294967295', value: { doubleValue: 1e-7 } },
      { key: '4294967294', value: { doubleValue: 123.456 } },
      { key: 'z', value: { stringValue: 'last wins, first place' } },
      { key: 'otel.severity_text', value: { boolValue: true } },
      { key: 'min', value: { intValue: '-9223372036854775808' } },
      { key: 'big', value: { doubleValue: 1e300 } },
      { key: 'small', value: { doubleValue: -2.5e-300 } },
      { key: 'deep', value: deep(14) },
      { key: '', value: { arrayValue: {} } },
    ];
    const record = (fields: object): object => ({ observedTimeUnixNano: String(t0), ...fields });
    const bodies = [
      { doubleValue: 1e21 },
      { doubleValue: -0 },
      { doubleValue: NaN },
      { doubleValue: 5e-7 },
      { intValue: '-9007199254740993' },
      { bytesValue: Buffer.from([0xff, 0, 1]) },
      { arrayValue: { values: [{}, { doubleValue: Infinity }, { kvlistValue: {} }] } },
      { kvlistValue: { values: [{ key: '1' }, { key: 'a', value: { stringValue: '\u0000"' } }] } },
      {},
    ];
    const request = {
      resourceLogs: [
        {
          scopeLogs: [
            {
              logRecords: [
                record({ timeUnixNano: String(MAX_TIME_UNIX_NANO - 1n), severityText: 'WARN', attributes }),
                record({ severityNumber: -3, severityText: '' }),
                record({ severityNumber: 24, traceId: Buffer.alloc(16), spanId: Buffer.alloc(8) }),
                ...bodies.map((body) => record({ body })),
              ],
            },
          ],
        },
      ],
    };
    const forms = storedForms(protobufOf(request));
    const { native, js } = await bothWays(forms.map(([, p]) => p));
    assert.equal(js.length, forms.length * (3 + bodies.length));
    assert.deepEqual(native, js);
  });

  it('tells protobuf payloads from NDJSON and empty ones, compressed or not', async () => {
    assert.ok(contentOf, 'the native addon is built (npm run build)');
    const ndjson = Buffer.from('{"time":1}\n');
    for (const [form, payload] of [...storedForms(ndjson), ...storedForms(new Uint8Array(0))])
      assert.equal(await contentOf(payload), null, form);
    assert.equal(await contentOf(Uint8Array.from([0xce, 1, 2, 3])), null, 'damaged brotli');
    assert.equal(await contentOf(Uint8Array.from([0xd7, 3, 1, 2, 3])), null, 'damaged zstd');
  });

  it('reads a gzip body as stored once its first bytes show protobuf, sized by its trailer; gzip NDJSON is not', async () => {
    // The materializer bundles such a payload as it is (the decode thread inflates it) when storedProtobufSize
    // gives its content's length, which bounds the ordered read's memory; NDJSON lines, stored gzip once, are not.
    // Requests one after the other are one request (their resourceLogs appended).
    const large = Buffer.concat(Array.from({ length: 40 }, (_, i) => protobufOf(randomRequest(random(100 + i)))));
    for (const body of [protobufOf(randomRequest(random(11))), large]) {
      const gzip = gzipSync(body);
      assert.equal(storedProtobufSize(gzip), body.length);
      const { native, js } = await bothWays([gzip]);
      assert.deepEqual(native, js);
    }
    assert.ok(gzipSync(large).length > 4096, 'a body longer than what is inflated to tell');
    assert.equal(storedProtobufSize(gzipSync(payloadLines(large))), null, 'NDJSON lines');
    assert.equal(storedProtobufSize(Uint8Array.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3])), null, 'cut');
  });

  it('fails the statement on a payload that does not decode, naming it, as read_json fails on damaged NDJSON', async () => {
    const good = protobufOf(randomRequest(random(7)));
    const damaged: Array<[string, Uint8Array]> = [
      ['cut protobuf', good.subarray(0, good.length - 3)],
      ['cut brotli', storedForms(good)[0][1].subarray(0, 20)],
      ['cut brotli, older mark', storedForms(good)[1][1].subarray(0, 20)],
      ['brotli longer than its stated length', brotliStored(good, true, good.length - 1)],
      ['brotli shorter than its stated length', brotliStored(good, true, good.length + 1)],
      ['brotli without its length', Uint8Array.from([0xcf, 0x80, 0x80])],
      ['brotli stating a length past memory', brotliStored(good, true, 2 ** 48)],
      ['cut gzip', storedForms(good)[2][1].subarray(0, 20)],
      ['cut zstd', storedForms(good)[4][1].subarray(0, 20)],
      ['zstd longer than its stated length', zstdStored(good, good.length - 1)],
      ['zstd shorter than its stated length', zstdStored(good, good.length + 1)],
      ['zstd without its length', Uint8Array.from([0xd7, 0x80, 0x80])],
      ['zstd stating a length past memory', zstdStored(good, 2 ** 48)],
      // resource_logs { scope_logs { log_records { time_unix_nano: 1, body { string_value: 0xff } } } }
      [
        'invalid UTF-8',
        Uint8Array.from([0x0a, 18, 0x12, 16, 0x12, 14, 0x09, 1, 0, 0, 0, 0, 0, 0, 0, 0x2a, 3, 0x0a, 1, 0xff]),
      ],
    ];
    for (const [what, payload] of damaged) {
      // The damaged payload second, between good ones: the error names it.
      const parts = [good, payload, good];
      const file = put(Buffer.concat(parts));
      await assert.rejects(
        engine.values(`SELECT count(*) FROM ${payloadRows('log', [], { file, sizes: parts.map((p) => p.length) })}`),
        (error: Error) =>
          isErrorOf(error, engineErrors, 'QUERY_INVALID') && error.message.includes(protobufPayloadName(file, 1)),
        what,
      );
    }
  });

  it('reads only files in the folder it was registered with', async () => {
    await assert.rejects(
      engine.values(`SELECT count(*) FROM ${payloadRows('log', [], { file: '/etc/passwd', sizes: [1] })}`),
      /reads only the materializer's scratch files/,
    );
    await assert.rejects(
      engine.values(`SELECT count(*) FROM ${payloadRows('log', [], { file: `${dir}/../../etc/passwd`, sizes: [1] })}`),
      /reads only the materializer's scratch files/,
    );
  });
});
