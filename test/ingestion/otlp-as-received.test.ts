// Issue 16: a logs protobuf body the validating scan vouches for is stored as received and decoded at
// materialization; what lands in log_entries is what the decode-first path (OTLP/JSON) stores.
import assert from 'node:assert/strict';
import { openSync, writeSync, closeSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { payloadContent, payloadLines, storedProtobufSize } from '../../src/ingestion/index.js';
import { decodeLogs, logsLines, scanLogs } from '../../src/ingestion/otlp/index.js';
import { logLine } from '../../src/ingestion/payload-lines.js';
import {
  protobufOf,
  random,
  randomRequest,
  sampleRecords as records,
  sampleRequest as request,
  t0,
} from '../support/otlp-logs-corpus.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { payloadPlace } from '../../src/lakehouse/index.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';

describe('issue 16: logs protobuf bodies are stored as received and decoded at materialization', () => {
  const fixture = useOrrery();
  const post = async (body: Uint8Array, contentType: string, encoding?: string): Promise<number> => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: {
        'content-type': contentType,
        authorization: `Bearer ${adminKey.key}`,
        ...(encoding ? { 'content-encoding': encoding } : {}),
      },
      body: new Uint8Array(body),
    });
    await response.arrayBuffer();
    return response.status;
  };
  type BlockRow = PayloadRow & Record<string, string>;
  const blocksOf = async (service: string): Promise<BlockRow[]> =>
    (
      await fixture.orrery.metadata.query<BlockRow>(
        `SELECT ${payloadColumns}, b.nb_objects, b.begin_time, b.end_time FROM blocks b
           JOIN processes p USING (process_id) WHERE p.exe LIKE $1 ORDER BY p.exe`,
        [`${service}-%`],
      )
    ).rows;
  const payload = (b: BlockRow): Promise<Buffer> => blockPayload(fixture.orrery.store, b);
  /** What a payload the server compressed (every one not sent gzipped, since #16's storage item) holds. */
  const content = async (b: BlockRow): Promise<Buffer> => {
    const stored = await payload(b);
    assert.equal(Number(b.payload_size), stored.length);
    const held = Buffer.from(payloadContent(stored));
    // After a mark that says what it holds: zstd (0xd7) and the length for protobuf, brotli (0xce) for NDJSON.
    if (held[0] === 0x7b) assert.equal(stored[0], 0xce, 'NDJSON stored compressed (brotli, marked)');
    else
      assert.equal(stored[0] === 0xd7 && storedProtobufSize(stored), held.length, 'protobuf stored compressed, marked');
    return held;
  };
  const materialize = async (): Promise<void> => {
    const now = Math.floor(Date.now() / 1000);
    const range = `'${new Date((now - 120) * 1000).toISOString()}', '${new Date((now + 120) * 1000).toISOString()}', 240`;
    for (const view of ['blocks', 'log_entries'])
      await fixture.admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
  };
  const rowsOf = async (service: string): Promise<unknown[]> =>
    (
      await fixture.admin.query(
        `SELECT replace(exe, '${service}', '') AS exe, epoch_ns(time) AS time, target, level, replace(msg, '${service}', '') AS msg,
                properties, trace_id, span_id
           FROM log_entries WHERE exe LIKE '${service}-%' ORDER BY exe, time, target, msg`,
      )
    )
      .toArray()
      .map((r) => r.toJSON());

  it('the scan vouches for a good body: per resource its record count and time span', () => {
    const body = protobufOf(request('scan', false, 2));
    const scanned = scanLogs(body);
    assert.ok(scanned);
    assert.deepEqual(
      scanned.map((r) => [r.records, r.begin, r.end]),
      [
        [12, t0, t0 + 6n],
        [12, t0, t0 + 6n],
      ],
    );
  });

  it('the scan gives up (the body takes the decode-first path) on what it cannot vouch for', () => {
    const noTime = request('scan', false, 1, (n, tag, json) => [
      ...records(n, tag, json),
      { body: { stringValue: 'no time at all' } },
    ]);
    const badId = request('scan', false, 1, (n, tag, json) => [
      ...records(n, tag, json),
      { timeUnixNano: String(t0), traceId: Buffer.from('abc') },
    ]);
    const late = request('scan', false, 1, (n, tag, json) => [
      ...records(n, tag, json),
      { timeUnixNano: '9223372036854775807' },
    ]);
    for (const body of [noTime, badId, late]) assert.equal(scanLogs(protobufOf(body)), null);
    assert.equal(scanLogs(Buffer.from([0x0a, 0x05, 0x12])), null); // truncated
    assert.equal(scanLogs(Buffer.from([0x10, 0x01])), null); // an unknown field
  });

  it('the scan checks UTF-8 at every position of a string (ASCII is skipped a word at a time)', () => {
    const marker = 'MMMMMMMMMMMMM';
    const body = Buffer.from(
      protobufOf(request('utf8', false, 1, () => [{ timeUnixNano: String(t0), body: { stringValue: marker } }])),
    );
    const at = body.indexOf(marker);
    assert.ok(at > 0 && scanLogs(body));
    for (let k = 0; k < marker.length - 1; k++) {
      const changed = (bytes: number[]): Buffer => {
        const copy = Buffer.from(body);
        copy.set(bytes, at + k);
        return copy;
      };
      assert.equal(scanLogs(changed([0xff])), null, `0xff at ${k}`);
      assert.equal(scanLogs(changed([0xc3, 0x4d])), null, `a cut sequence at ${k}`);
      assert.ok(scanLogs(changed([0xc3, 0xa9])), `é at ${k}`);
    }
  });

  it('payloads are written straight to the same NDJSON lines as decodeLogs + logLine (2 000 random bodies)', () => {
    const next = random(16);
    let direct = 0;
    let scanned = 0;
    for (let n = 0; n < 2000; n++) {
      const body = protobufOf(randomRequest(next));
      if (scanLogs(body) === null) continue;
      scanned++;
      const slow = decodeLogs(body, 'protobuf')
        .flatMap((g) => g.records.map((r) => logLine(r, 0n) + '\n'))
        .join('');
      assert.equal(Buffer.from(payloadLines(body)).toString(), slow, `body ${n}`);
      const lines = logsLines(body);
      if (lines === null) continue;
      direct++;
      assert.equal(lines.toString(), slow, `body ${n}`);
    }
    assert.ok(scanned > 1000, `${scanned} bodies scanned`);
    assert.ok(direct > 150, `${direct} of ${scanned} written directly`);
  });

  it('a one-resource body is its payload byte for byte (compressed); two resources make two requests of their own', async () => {
    const one = protobufOf(request('bytes1', false, 1));
    assert.equal(await post(one, 'application/x-protobuf'), 200);
    const [block] = await blocksOf('bytes1');
    assert.equal(Number(block.nb_objects), 12);
    assert.deepEqual(await content(block), Buffer.from(one));
    assert.ok((await payload(block)).length < one.length / 2, 'stored compressed');

    assert.equal(await post(protobufOf(request('bytes2', false, 2)), 'application/x-protobuf'), 200);
    const blocks = await blocksOf('bytes2');
    assert.equal(blocks.length, 2);
    const { resourceLogs } = request('bytes2', false, 2) as { resourceLogs: object[] };
    for (const [i, b] of blocks.entries())
      assert.deepEqual(await content(b), Buffer.from(protobufOf({ resourceLogs: [resourceLogs[i]] })));
  });

  it('a retried body stores nothing twice', async () => {
    const body = protobufOf(request('retry', false, 2));
    for (let i = 0; i < 3; i++) assert.equal(await post(body, 'application/x-protobuf'), 200);
    assert.equal((await blocksOf('retry')).length, 2);
  });

  it('the answers carry their Content-Length (one write each), not chunked framing', async () => {
    for (const [body, status] of [
      [protobufOf(request('framed', false, 1)), 200],
      [Uint8Array.from([0xff, 0xff]), 400],
    ] as const) {
      const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${adminKey.key}` },
        body: new Uint8Array(body),
      });
      const answer = await response.arrayBuffer();
      assert.equal(response.status, status);
      assert.equal(response.headers.get('transfer-encoding'), null);
      assert.equal(response.headers.get('content-length'), String(answer.byteLength));
    }
  });

  it('a poison record anywhere in a body the scan would take is a 400 and stores nothing', async () => {
    const body = request('poison', false, 2, (n, tag, json) =>
      tag.startsWith('r1b')
        ? [...records(n, tag, json), { timeUnixNano: String(t0), spanId: Buffer.from('toolongforaspan') }]
        : records(n, tag, json),
    );
    assert.equal(await post(protobufOf(body), 'application/x-protobuf'), 400);
    assert.equal((await blocksOf('poison')).length, 0);
  });

  it('a gzip body of one resource is stored as received, compressed; gzipped otherwise it is the same block', async () => {
    const body = protobufOf(request('gz', false, 1));
    const gz = gzipSync(body, { level: 9 });
    assert.equal(await post(gz, 'application/x-protobuf', 'gzip'), 200);
    assert.equal(await post(gzipSync(body, { level: 1 }), 'application/x-protobuf', 'gzip'), 200);
    const blocks = await blocksOf('gz');
    assert.equal(blocks.length, 1);
    assert.deepEqual(await payload(blocks[0]), gz);
    assert.equal(await post(protobufOf(request('plain', false, 1)), 'application/x-protobuf'), 200);
    await materialize();
    const rows = await rowsOf('gz');
    assert.equal(rows.length, 12);
    assert.deepEqual(
      JSON.stringify(rows, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
      JSON.stringify(await rowsOf('plain'), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
    );
  });

  it('a gzip body whose trailer does not state its length (bytes after its end, several members) is stored compressed, with its length', async () => {
    for (const tag of ['gztrailing', 'gzmembers']) {
      const body = protobufOf(request(tag, false, 1));
      const half = body.length >> 1;
      const gz =
        tag === 'gztrailing'
          ? Buffer.concat([gzipSync(body), Buffer.alloc(4)])
          : Buffer.concat([gzipSync(body.subarray(0, half)), gzipSync(body.subarray(half))]);
      assert.equal(await post(gz, 'application/x-protobuf', 'gzip'), 200);
      const blocks = await blocksOf(tag);
      assert.equal(blocks.length, 1);
      // The length the materializer sizes the ordered read's hold by is the content's.
      assert.deepEqual(await content(blocks[0]), Buffer.from(body), tag);
    }
  });

  it('log_entries holds the same rows whether the body came as protobuf (as received) or JSON (transcoded, or decoded first)', async () => {
    const native = process.env.ORRERY_NATIVE !== 'off';
    assert.equal(await post(protobufOf(request('same', false, 2)), 'application/x-protobuf'), 200);
    const json = JSON.stringify(request('json', true, 2));
    assert.equal(await post(Buffer.from(json), 'application/json'), 200);
    // A severity given by its enum name: only the decode-first path reads those.
    const named = JSON.stringify(request('named', true, 2)).replace(
      '"severityNumber":1,',
      '"severityNumber":"SEVERITY_NUMBER_TRACE",',
    );
    assert.ok(named.includes('SEVERITY_NUMBER_TRACE'));
    assert.equal(await post(Buffer.from(named), 'application/json'), 200);
    assert.equal((await content((await blocksOf('same'))[0]))[0], 0x0a); // protobuf
    assert.equal((await content((await blocksOf('json'))[0]))[0], native ? 0x0a : 0x7b); // protobuf with the addon (#16)
    assert.equal((await content((await blocksOf('named'))[0]))[0], 0x7b); // NDJSON
    await materialize();
    const rows = async (service: string): Promise<string> =>
      JSON.stringify(await rowsOf(service), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
    const fromProtobuf = await rows('same');
    assert.equal(JSON.parse(fromProtobuf).length, 24);
    assert.deepEqual(fromProtobuf, await rows('json'));
    assert.deepEqual(fromProtobuf, await rows('named'));
  });

  it('a block whose stored protobuf no longer decodes is quarantined, and the rest of its window materializes', async () => {
    assert.equal(await post(protobufOf(request('dmgok', false, 1)), 'application/x-protobuf'), 200);
    assert.equal(await post(protobufOf(request('dmgbad', false, 1)), 'application/x-protobuf'), 200);
    const [bad] = await blocksOf('dmgbad');
    // Its bytes in place, as many, become a plain protobuf whose first field runs past the payload: read
    // natively (ORRERY_NATIVE=auto) or decoded by JavaScript (off), it fails, as a damaged NDJSON one does.
    const place = payloadPlace(bad);
    const size = place.size ?? (await payload(bad)).length;
    const fd = openSync(fixture.orrery.store.location(place.key), 'r+');
    writeSync(fd, Buffer.concat([Buffer.from([0x0a]), Buffer.alloc(size - 1, 0xff)]), 0, size, place.offset);
    closeSync(fd);
    await materialize();
    assert.equal((await rowsOf('dmgok')).length, 12);
    assert.deepEqual(await rowsOf('dmgbad'), []);
    const quarantined = (
      await fixture.admin.query('SELECT block_id, view_set_name FROM list_quarantined_blocks()')
    ).toArray();
    assert.deepEqual(
      quarantined.map((r) => [r.block_id, r.view_set_name]),
      [[bad.block_id, 'log_entries']],
    );
  });
});
