// Issue 16: a request acknowledged with 200 is durable. The server is killed (SIGKILL) while protobuf logs
// requests of two resources each are in flight, stored together by group commit (so mid-flush); another
// server on the same Postgres and lake then finds every acknowledged record, decodes every payload whole,
// materializes each acknowledged message once, finds no request half stored (one resource of it only), and its
// orphan sweep deletes the objects of groups written but never committed, and only those.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { payloadLines } from '../../src/ingestion/index.js';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';
import { deleteOrphans, payloadPlace } from '../../src/lakehouse/index.js';
import { adminKey } from '../support/orrery-process.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';
import {
  OrreryChild,
  clientFor,
  sharedEnv,
  startRole,
  startTestPostgres,
  type TestKey,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const admin: TestKey = { ...adminKey, audiences: ['public'] };
const recordsPerRequest = 200;
const senders = 6;

const resources = ['a', 'b'];

/**
 * Request `n` of sender `s`, of two resources (two blocks): its records' messages name all three, so each
 * acknowledged one can be found and a request stored in part would show.
 */
function body(s: number, n: number): Uint8Array {
  const t0 = BigInt(Date.now()) * 1_000_000n;
  const type = exportRequestTypes.logs;
  return type
    .encode(
      type.fromObject({
        resourceLogs: resources.map((r) => ({
          resource: { attributes: [{ key: 'service.name', value: { stringValue: `crash-${s}-${r}` } }] },
          scopeLogs: [
            {
              scope: { name: 'crash' },
              logRecords: Array.from({ length: recordsPerRequest / 2 }, (_, i) => ({
                timeUnixNano: String(t0 + BigInt(i)),
                severityNumber: 9,
                body: { stringValue: `s${s} n${n} ${r}${i}` },
                attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(200) } }],
              })),
            },
          ],
        })),
      }),
    )
    .finish();
}

describe('issue 16: kill -9 after a 200 loses nothing', { timeout: 180_000 }, () => {
  let postgres: TestPostgres;
  let dataDir: string;
  let env: Record<string, string>;
  let child: OrreryChild | undefined;

  before(async () => {
    postgres = await startTestPostgres();
    dataDir = mkdtempSync(join(tmpdir(), 'orrery-ingest-crash-'));
    env = {
      ...sharedEnv({
        keys: [admin],
        admins: [admin.name],
        connectionString: postgres.connectionString,
        lakeDir: join(dataDir, 'lake'),
      }),
      ORRERY_DATA_DIR: dataDir,
    };
  });

  after(async () => {
    await child?.stop('SIGKILL');
    await postgres?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('every acknowledged record is stored, decodable and materialized once', async () => {
    child = new OrreryChild('serve', 'serve', env);
    await child.waitForLine(/HTTP \(OTLP.*listening on/, 60_000);
    const port = Number(/listening on [^\s]*:(\d+)/.exec(child.output.find((l) => /HTTP \(OTLP/.test(l))!)![1]);
    const acked: Array<[number, number]> = [];
    let killedAt = -1;
    const sender = async (s: number): Promise<void> => {
      for (let n = 0; killedAt < 0; n++) {
        try {
          const response = await fetch(`http://127.0.0.1:${port}/v1/logs`, {
            method: 'POST',
            headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'application/x-protobuf' },
            body: new Uint8Array(body(s, n)),
          });
          await response.arrayBuffer();
          if (response.status === 200) acked.push([s, n]);
          else assert.fail(`request ${s}/${n}: ${response.status}`);
        } catch (error) {
          if (killedAt < 0) throw error;
          return; // in flight when the server died: not acknowledged, may or may not be stored
        }
        if (acked.length >= 40 && killedAt < 0) {
          killedAt = acked.length;
          const exit = await child!.stop('SIGKILL');
          assert.equal(exit.signal, 'SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: senders }, (_, s) => sender(s)));
    const ackedNow = [...acked];
    assert.ok(ackedNow.length >= 40);

    const serve = await startRole('serve', env);
    const client = clientFor(serve.flightPort, admin);
    try {
      const { rows } = await postgres.pool.query<PayloadRow & { nb_objects: number }>(
        `SELECT ${payloadColumns}, b.nb_objects FROM blocks b`,
      );
      for (const row of rows) {
        const lines = payloadLines(await blockPayload(serve.store, row));
        assert.equal(Buffer.from(lines).toString().trimEnd().split('\n').length, row.nb_objects);
      }
      assert.ok(
        rows.length >= 2 * ackedNow.length,
        `${rows.length} blocks for ${ackedNow.length} acknowledged requests`,
      );
      const now = Math.floor(Date.now() / 1000);
      const range = `'${new Date((now - 300) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 360`;
      await client.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);
      const last = recordsPerRequest / 2 - 1;
      const found = await client.query(
        `SELECT msg, count(*) AS n FROM log_entries WHERE regexp_matches(msg, ' [ab](0|${last})$') GROUP BY msg`,
      );
      const counts = new Map(found.toArray().map((r) => [r.msg as string, Number(r.n)]));
      const ends = resources.flatMap((r) => [`${r}0`, `${r}${last}`]);
      for (const [s, n] of ackedNow)
        for (const end of ends)
          assert.equal(counts.get(`s${s} n${n} ${end}`), 1, `acknowledged record s${s} n${n} ${end}`);
      // Whole or not at all, acknowledged or not: a request found at all is found in full.
      const requests = new Set([...counts.keys()].map((msg) => msg.slice(0, msg.lastIndexOf(' '))));
      for (const request of requests)
        for (const end of ends) assert.equal(counts.get(`${request} ${end}`), 1, `${request} ${end} (half stored?)`);
      // A group written but not committed when the kill came is named by no block: the orphan sweep (at a time
      // past its grace) deletes it, and leaves exactly the objects blocks name, every payload still readable.
      await deleteOrphans(serve.metadata, serve.store, 3600, Date.now() + 7_200_000);
      // (Objects holding bytes: the one a server reserves for its next group's payloads is empty until written.)
      const written: string[] = [];
      for (const key of await serve.store.list('blobs/')) if ((await serve.store.size(key)) !== 0) written.push(key);
      assert.deepEqual(written, [...new Set(rows.map((r) => payloadPlace(r).key))].sort());
      for (const row of rows) await blockPayload(serve.store, row);
    } finally {
      client.close();
      await serve.close();
    }
  });
});
