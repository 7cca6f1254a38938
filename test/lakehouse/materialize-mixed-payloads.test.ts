// Issue 16: a protobuf logs payload is stored zstd after the 0xd7 mark and its length, and the materializer hands it
// to the native decoder as stored (decompressed on the ordered read's decode thread). A lake written by servers
// of before that mark holds the older forms too: brotli after the 0xcf mark and its length, brotli after the 0xce
// mark (told apart from NDJSON only once decompressed), an object of its own per block, and a gzip body as a client
// sent it. A range over all of them
// makes one partition with every record once, in time order. A gzip body goes to the native decoder as stored
// too, once its first bytes say it holds protobuf: NDJSON lines were stored gzip once (ae63466), and those are read
// as before.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { payloadContent, payloadLines } from '../../src/ingestion/index.js';
import { payloadKey } from '../../src/lakehouse/index.js';
import { brotliStored } from '../support/otlp-logs-corpus.js';
import { useOrrery } from '../support/orrery-process.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';
import { interleavedLogsRequest, logEntriesInOrder, postLogRequests, recentRange } from './lakehouse-fixtures.js';

const requests = 24;
const perRequest = 50;
const t0 = BigInt(Date.now() - 60_000) * 1_000_000n;

/** Older forms of a stored payload, given its content (protobuf). */
type Form = (content: Uint8Array) => Uint8Array;

const scenarios: Array<[string, Form[]]> = [
  // Three blocks in four moved to an object of their own in an older form; the rest stay 0xd7 in the group object.
  ['every form a lake holds', [(body) => brotliStored(body), (body) => brotliStored(body, false), gzipSync]],
  // A range holding both kinds of gzip payload: protobuf (decoded natively) and NDJSON lines (read as before).
  ['gzip holding protobuf and gzip holding NDJSON lines', [gzipSync, (body) => gzipSync(payloadLines(body))]],
  // Stored as received before ingestion checked a gzip trailer (3f89ea9): bytes after the end, an empty last
  // member. Their trailers state 0, which the ordered read refuses, so the range is read through the sort.
  [
    'gzip whose trailer misstates what it holds',
    [
      (body) => Buffer.concat([gzipSync(body), Buffer.alloc(4)]),
      (body) => Buffer.concat([gzipSync(body), gzipSync(Buffer.alloc(0))]),
    ],
  ],
];

for (const [what, older] of scenarios)
  describe(`log_entries from payloads stored in ${what} (issue 16)`, () => {
    const fixture = useOrrery();

    it('are all read, once each, in time order', async () => {
      const { store, metadata } = fixture.orrery;
      await postLogRequests(fixture.orrery.httpPort, requests, (i) =>
        interleavedLogsRequest(i, { requests, perRequest, t0, service: 'mixed-forms' }),
      );
      const { rows } = await metadata.query<PayloadRow>(`SELECT ${payloadColumns} FROM blocks b ORDER BY b.block_id`);
      assert.equal(rows.length, requests);
      let marked = 0;
      for (const [i, row] of rows.entries()) {
        const stored = await blockPayload(store, row);
        marked += stored[0] === 0xd7 ? 1 : 0;
        if (i % (older.length + 1) === older.length) continue;
        // Moved to an object of its own in an older form, as a server of before stored it.
        const payload = older[i % (older.length + 1)](payloadContent(stored));
        await store.put(payloadKey(row.process_id, row.stream_id, row.block_id), payload);
        await metadata.query(
          'UPDATE blocks SET payload_file = NULL, object_offset = 0, payload_size = $2 WHERE block_id = $1',
          [row.block_id, payload.length],
        );
      }
      assert.equal(marked, requests, 'ingestion stores protobuf zstd, after the 0xd7 mark');

      await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${recentRange()})`);
      const n = BigInt(requests * perRequest);
      assert.deepEqual(await logEntriesInOrder(fixture.orrery), [n, n, 0n]);
      const { rows: quarantined } = await metadata.query('SELECT 1 FROM quarantined_blocks');
      assert.equal(quarantined.length, 0);
    });
  });
