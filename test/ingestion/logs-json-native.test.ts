// Issue 16: OTLP/JSON logs bodies are transcoded to the protobuf they stand for on a worker thread
// (src/engine/native/logs-json.cc) and stored as protobuf bodies are, instead of being decoded to objects and NDJSON
// on the event loop. The transcoder answers only for what it is sure of: whatever it vouches for decodes to the
// records the slow way (JSON.parse and the typed reads) gives, and whatever the slow way refuses it gives up on,
// so poison still gets its 400 and stores nothing.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { nativeJsonLogsSeal } from '../../src/engine/native-export.js';
import { payloadContent } from '../../src/ingestion/index.js';
import { decodeLogs, sealJsonLogsWith } from '../../src/ingestion/otlp/index.js';
import { protobufOf, random, randomRequest, sampleRecords, sampleRequest, t0 } from '../support/otlp-logs-corpus.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';

const flat = nativeJsonLogsSeal();
const sealJson = flat ? sealJsonLogsWith(flat) : null;

/**
 * A request in protobufjs form (randomRequest's) as OTLP/JSON text, written the ways exporters may write it: ids as
 * hex, bytes as base64, 64-bit integers as strings or numbers, keys in lowerCamelCase or snake_case, spaces or not.
 */
function otlpJson(request: object, next: () => number): Buffer {
  const snake = (key: string): string => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  const walk = (value: unknown, key: string): unknown => {
    if (value instanceof Uint8Array) {
      if (key !== 'traceId' && key !== 'spanId') return Buffer.from(value).toString('base64');
      const hex = Buffer.from(value).toString('hex');
      return next() < 0.3 ? hex.toUpperCase() : hex;
    }
    if (Array.isArray(value)) return value.map((v) => walk(v, key));
    if (typeof value === 'number' && !Number.isFinite(value)) return next() < 0.8 ? String(value) : null; // JSON has no NaN: the string, or null (unset)
    if (typeof value === 'string' && /^(time|observedTime)UnixNano$|^intValue$/.test(key)) {
      // Sometimes a number: past 2^53 (every time) JSON.parse rounds it, which the transcoder must not take.
      const n = Number(value);
      return next() < (Number.isSafeInteger(n) ? 0.5 : 0.03) ? n : value;
    }
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [next() < 0.1 ? snake(k) : k, walk(v, k)] as const),
    );
  };
  return Buffer.from(JSON.stringify(walk(request, ''), null, next() < 0.2 ? 1 : undefined));
}

/** A JSON body with one byte replaced by one that means something in JSON (or breaks its UTF-8). */
function mutated(json: Buffer, next: () => number): Buffer {
  const bytes = ['"', ',', '{', '}', '[', ']', ':', '0', '9', '-', '.', 'e', 'n', '\\', 'u', ' ', 'a', 'F'].map((c) =>
    c.charCodeAt(0),
  );
  const copy = Buffer.from(json);
  copy[Math.floor(next() * copy.length)] = next() < 0.1 ? 0xff : bytes[Math.floor(next() * bytes.length)];
  return copy;
}

const slowDecode = (json: Uint8Array): ReturnType<typeof decodeLogs> | Error => {
  try {
    return decodeLogs(json, 'json');
  } catch (error) {
    return error as Error;
  }
};

describe('issue 16: OTLP/JSON logs transcoded to protobuf natively', () => {
  it('what it vouches for decodes to what the slow way decodes the JSON to; what the slow way refuses, it gives up on', async () => {
    assert.ok(sealJson, 'the native addon is built with sealJsonLogs (npm run build)');
    const next = random(1716);
    let vouched = 0;
    let vouchedMutated = 0;
    let refusedBySlow = 0;
    for (let n = 0; n < 1500; n++) {
      const good = otlpJson(randomRequest(next), next);
      for (const [json, isMutated] of [
        [good, false],
        [mutated(good, next), true],
      ] as const) {
        const sealed = await sealJson(json);
        const slow = slowDecode(json);
        if (slow instanceof Error) refusedBySlow++;
        if (sealed.body === null || sealed.scanned === null) {
          assert.equal(sealed.scanned, null);
          continue;
        }
        if (isMutated) vouchedMutated++;
        else vouched++;
        assert.ok(
          !(slow instanceof Error),
          `body ${n}: vouched for a body the slow way refuses: ${(slow as Error).message}`,
        );
        assert.deepEqual(decodeLogs(sealed.body, 'protobuf'), slow, `body ${n}`);
      }
    }
    // randomRequest gives a record without a time (the protobuf scan gives those up) in about half the bodies.
    assert.ok(
      vouched > 300 && vouchedMutated > 50 && refusedBySlow > 300,
      `${vouched} / ${vouchedMutated} / ${refusedBySlow}`,
    );
  });

  it('gives up on JSON whose meaning it would have to guess or the slow way refuses', async () => {
    assert.ok(sealJson);
    const record = (fields: string): Buffer =>
      Buffer.from(
        `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"${t0}",${fields}"body":{"stringValue":"x"}}]}]}]}`,
      );
    assert.ok((await sealJson(record(''))).body, 'the plain record is taken');
    for (const fields of [
      '"severityText":"a","severityText":null,', // a key twice: JSON.parse keeps the last
      '"severityText":"a","severity_text":"b",', // both spellings
      '"severityNumber":"SEVERITY_NUMBER_INFO",', // an enum name
      '"severityNumber":1.5,',
      '"severityText":"a\\u0000b",', // NUL
      '"severityText":"a\\ud800b",', // a lone surrogate
      '"traceId":"0af7651916cd43dd8448eb211c80319",', // 31 hex digits
      '"traceId":"0af7651916cd43dd8448eb211c80319g",',
      '"observedTimeUnixNano":9007199254740993,', // past 2^53 as a number: JSON.parse rounds it
      '"observedTimeUnixNano":1e3,',
      '"observedTimeUnixNano":"9223372036854775807",', // out of range: the protobuf scan refuses it
      '"attributes":[null],',
      '"attributes":[{"key":"k","value":{"bytesValue":"AAE"}}],', // unpadded base64: Node reads it, loosely
      '"attributes":[{"key":"k","value":{"bytesValue":"AA-_"}}],', // url-safe
      '"attributes":[{"key":"k","value":{"stringValue":"a","intValue":"1"}}],',
      '"unknownField":1,',
    ])
      assert.equal((await sealJson(record(fields))).body, null, fields);
    assert.equal((await sealJson(Buffer.from('{"resourceLogs":[]'))).body, null, 'cut short');
    assert.equal((await sealJson(Buffer.from([0x7b, 0xff, 0x7d]))).body, null, 'not UTF-8');
  });
});

/** sampleRecords and, per scope, records of what they lack: a zero trace id, a NaN, a negative int as a number, NUL-free control and astral text. */
function records(n: number, tag: string, json: boolean): object[] {
  const time = String(t0 + 100n);
  return [
    ...sampleRecords(n, tag, json),
    { timeUnixNano: time, traceId: json ? '0'.repeat(32) : Buffer.alloc(16), body: { stringValue: `${tag} zero` } },
    {
      timeUnixNano: time,
      body: { stringValue: `${tag} \u0001 \u2028 😀 "\\` },
      attributes: [
        { key: 'nan', value: { doubleValue: json ? 'NaN' : NaN } },
        { key: 'neg', value: { intValue: json ? -42 : '-42' } },
        { key: 'big', value: { doubleValue: 1e300 } },
      ],
    },
  ];
}

const request = (service: string, json: boolean, resources = 1): object =>
  sampleRequest(service, json, resources, records);

describe('issue 16: OTLP/JSON logs through a server with the native addon', () => {
  const fixture = useOrrery({ ORRERY_NATIVE: 'on' });
  const post = async (
    body: Uint8Array,
    contentType: string,
    key = adminKey.key,
    encoding?: string,
  ): Promise<number> => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: {
        'content-type': contentType,
        authorization: `Bearer ${key}`,
        ...(encoding ? { 'content-encoding': encoding } : {}),
      },
      body: new Uint8Array(body),
    });
    await response.arrayBuffer();
    return response.status;
  };
  const json = (service: string, resources = 1): Buffer =>
    Buffer.from(JSON.stringify(request(service, true, resources)));
  type BlockRow = PayloadRow & Record<string, string>;
  const blocksOf = async (service: string): Promise<BlockRow[]> =>
    (
      await fixture.orrery.metadata.query<BlockRow>(
        `SELECT ${payloadColumns}, b.nb_objects, b.audience FROM blocks b
           JOIN processes p USING (process_id) WHERE p.exe LIKE $1 ORDER BY p.exe`,
        [`${service}-%`],
      )
    ).rows;
  const content = async (b: BlockRow): Promise<Buffer> =>
    Buffer.from(payloadContent(await blockPayload(fixture.orrery.store, b)));
  const rowsOf = async (service: string): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    const range = `'${new Date((now - 120) * 1000).toISOString()}', '${new Date((now + 120) * 1000).toISOString()}', 240`;
    for (const view of ['blocks', 'log_entries'])
      await fixture.admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
    const rows = (
      await fixture.admin.query(
        `SELECT replace(exe, '${service}', '') AS exe, epoch_ns(time) AS time, target, level, msg, properties,
                trace_id, span_id
           FROM log_entries WHERE exe LIKE '${service}-%' ORDER BY exe, time, target, msg`,
      )
    )
      .toArray()
      .map((r) => r.toJSON());
    return JSON.stringify(rows, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  };

  it('stores a JSON body as the protobuf it stands for; log_entries holds what the same body sent as protobuf gives', async () => {
    assert.equal(await post(json('js', 2), 'application/json'), 200);
    assert.equal(await post(protobufOf(request('pb', false, 2)), 'application/x-protobuf'), 200);
    const blocks = await blocksOf('js');
    assert.deepEqual(
      blocks.map((b) => Number(b.nb_objects)),
      [16, 16],
    );
    // Each resource's payload is protobuf, the same records as protobufjs's encoding of them (fields in JSON's order).
    const { resourceLogs } = request('js', false, 2) as { resourceLogs: object[] };
    for (const [i, b] of blocks.entries())
      assert.deepEqual(
        decodeLogs(await content(b), 'protobuf'),
        decodeLogs(protobufOf({ resourceLogs: [resourceLogs[i]] }), 'protobuf'),
      );
    const fromJson = await rowsOf('js');
    assert.equal(JSON.parse(fromJson).length, 32);
    assert.equal(fromJson.replaceAll('js', 'pb'), await rowsOf('pb'));
  });

  it('a gzip JSON body is stored as protobuf too, the same block as sent plain; a retry stores nothing twice; the key audience is stamped', async () => {
    const body = json('jsretry');
    assert.equal(await post(body, 'application/json', readerKey.key), 200);
    assert.equal(await post(gzipSync(body), 'application/json', readerKey.key, 'gzip'), 200);
    assert.equal(await post(body, 'application/json', readerKey.key), 200);
    const blocks = await blocksOf('jsretry');
    assert.equal(blocks.length, 1);
    assert.equal(blocks[0].audience, 'public');
    assert.equal((await content(blocks[0]))[0], 0x0a, 'protobuf (ResourceLogs, field 1)');
    assert.equal(JSON.parse(await rowsOf('jsretry')).length, 16);
  });

  it('poison JSON is refused with a 400 and stores nothing', async () => {
    const good = json('jspoison').toString();
    const cases: Array<[string, Buffer]> = [
      ['malformed JSON', Buffer.from(good.slice(0, -1))],
      [
        'invalid UTF-8',
        Buffer.concat([Buffer.from(good.slice(0, 200)), Buffer.from([0xff]), Buffer.from(good.slice(201))]),
      ],
      [
        'a time out of range',
        Buffer.from(good.replace(`"timeUnixNano":"${t0 + 1n}"`, '"timeUnixNano":"9223372036854775807"')),
      ],
      ['a lone surrogate', Buffer.from(good.replace('LOUD', '\\ud800'))],
      [
        'a trace id of 15 bytes',
        Buffer.from(good.replace('0af7651916cd43dd8448eb211c80319c', '0af7651916cd43dd8448eb211c8031')),
      ],
      ['NUL in a resource attribute', Buffer.from(good.replace('jspoison-0', 'jspoison-0\\u0000'))],
      ['an int past int64', Buffer.from(good.replace('"9007199254740993"', '"9223372036854775808"'))],
    ];
    for (const [what, body] of cases) {
      assert.notEqual(body.toString(), good, what);
      assert.equal(await post(body, 'application/json'), 400, what);
    }
    assert.deepEqual(await blocksOf('jspoison'), []);
  });
});
