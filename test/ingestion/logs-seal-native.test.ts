// Issue 16: the native seal of a logs protobuf body (src/engine/native/logs-seal.cc) does on a worker thread what
// the ack path did on the event loop, with the same results: the JavaScript scan's verdict, the sha256 of a body
// stored whole (the block id derives from it, so a retry is the same block whichever path stored it), and a
// payload that decompresses to the body. A server with the addon and one without (ORRERY_NATIVE=off) store a
// body as the same block.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { nativeLogsSeal } from '../../src/engine/native-export.js';
import { payloadContent, storedProtobufSize } from '../../src/ingestion/index.js';
import { scanLogs, sealLogsWith } from '../../src/ingestion/otlp/index.js';
import { protobufOf, random, randomRequest } from '../support/otlp-logs-corpus.js';
import { adminKey, startTestOrrery } from '../support/orrery-process.js';

const flat = nativeLogsSeal();
const seal = flat ? sealLogsWith(flat) : null;

describe('issue 16: the native seal of logs bodies', () => {
  it('gives the scan its verdict, and a body of one resource its sha256 and a zstd payload of it', async () => {
    assert.ok(seal, 'the native addon is built with sealLogs (npm run build)');
    const next = random(1616);
    let whole = 0;
    let pieces = 0;
    let refused = 0;
    for (let n = 0; n < 400; n++) {
      const good = protobufOf(randomRequest(next));
      const changed = Uint8Array.from(good);
      changed[Math.floor(next() * good.length)] = Math.floor(next() * 256);
      for (const body of [good, changed]) {
        const compress = next() < 0.8;
        const sealed = await seal(body, compress);
        const scanned = scanLogs(body);
        assert.deepEqual(sealed.scanned, scanned, `body ${n}`);
        if (scanned !== null && scanned.length === 1 && scanned[0].records > 0) {
          whole++;
          assert.equal(sealed.digest, createHash('sha256').update(body).digest('hex'));
          if (compress) {
            assert.ok(sealed.payload);
            assert.equal(sealed.payload[0], 0xd7, 'marked as zstd of protobuf');
            assert.equal(storedProtobufSize(sealed.payload), body.length, 'with its length');
            assert.deepEqual(Buffer.from(payloadContent(sealed.payload)), Buffer.from(body));
          } else assert.equal(sealed.payload, undefined, 'a gzip body is stored as received: nothing to compress');
        } else {
          if (scanned === null) refused++;
          else pieces++;
          assert.equal(sealed.digest, undefined);
          assert.equal(sealed.payload, undefined);
        }
      }
    }
    assert.ok(whole > 100 && refused > 100 && pieces > 10, `${whole} whole, ${pieces} in pieces, ${refused} refused`);
  });

  it('a large body (1,000 records) decompresses whole; bodies sealed at once each get their own', async () => {
    assert.ok(seal);
    const next = random(16);
    const bodies = Array.from({ length: 8 }, () => {
      const request = randomRequest(next) as { resourceLogs: Array<{ scopeLogs: Array<{ logRecords: object[] }> }> };
      const records = request.resourceLogs[0].scopeLogs.flatMap((s) => s.logRecords);
      const resource = { ...request.resourceLogs[0], scopeLogs: [{ logRecords: [] as object[] }] };
      for (let i = 0; resource.scopeLogs[0].logRecords.length < 1000; i++)
        resource.scopeLogs[0].logRecords.push({
          ...records[i % records.length],
          timeUnixNano: 1_700_000_000_000_000_000 + i,
        });
      return protobufOf({ resourceLogs: [resource] });
    });
    const sealed = await Promise.all(bodies.map((body) => seal(body, true)));
    sealed.forEach((s, i) => {
      assert.equal(s.scanned?.[0].records, 1000);
      assert.equal(s.digest, createHash('sha256').update(bodies[i]).digest('hex'));
      assert.deepEqual(Buffer.from(payloadContent(s.payload!)), Buffer.from(bodies[i]));
    });
  });

  it('a server with the native seal and one without (ORRERY_NATIVE=off) store a body as the same block', async () => {
    const body = protobufOf({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: 'sealed' } }] },
          scopeLogs: [
            {
              logRecords: Array.from({ length: 50 }, (_, i) => ({
                timeUnixNano: 1_700_000_000_000_000_000 + i,
                body: { stringValue: `record ${i}` },
              })),
            },
          ],
        },
      ],
    });
    const blockIds: string[] = [];
    for (const native of ['on', 'off']) {
      const orrery = await startTestOrrery({ ORRERY_NATIVE: native });
      try {
        const response = await fetch(`http://127.0.0.1:${orrery.httpPort}/v1/logs`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${adminKey.key}` },
          body: new Uint8Array(body),
        });
        await response.arrayBuffer();
        assert.equal(response.status, 200, `ORRERY_NATIVE=${native}`);
        const { rows } = await orrery.metadata.query<{ block_id: string; nb_objects: number }>(
          'SELECT block_id::text, nb_objects FROM blocks',
        );
        assert.deepEqual(
          rows.map((r) => r.nb_objects),
          [50],
        );
        blockIds.push(rows[0].block_id);
      } finally {
        await orrery.close();
      }
    }
    assert.equal(blockIds[0], blockIds[1]);
  });
});
