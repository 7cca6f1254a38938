// Issue 16: concurrent OTLP requests of a signal are stored together (group commit: their payloads appended to
// one object, written and synced once, their rows in one Postgres statement). Each is still checked alone
// before it joins a flush (a bad body is a 400 and stores nothing while the others are stored), stored whole,
// stamped with its own key's audience, idempotent on retry, and answered only once its flush has committed.
// The blocks of a group read back from their segments of its object (materialized, parse_block); an object
// whose rows never committed is named by no block, and the orphan sweep deletes it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';
import { deleteOrphans, payloadGroupSecond, payloadKey } from '../../src/lakehouse/index.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';
import { scrapeMetrics } from '../support/metric-value.js';

const keys = [
  { ...adminKey, audiences: ['team-a'] },
  { ...readerKey, audiences: ['team-b'] },
];
const recordsPerResource = 50;
const t0 = BigInt(Date.now()) * 1_000_000n;

/** A logs request of two resources (`<service>-a`, `<service>-b`); `time` overrides every record's time. */
function body(service: string, time?: string): Uint8Array {
  const type = exportRequestTypes.logs;
  return type
    .encode(
      type.fromObject({
        resourceLogs: ['a', 'b'].map((r) => ({
          resource: { attributes: [{ key: 'service.name', value: { stringValue: `${service}-${r}` } }] },
          scopeLogs: [
            {
              scope: { name: 'group-commit' },
              logRecords: Array.from({ length: recordsPerResource }, (_, i) => ({
                timeUnixNano: time ?? String(t0 + BigInt(i)),
                body: { stringValue: `${service} ${r} ${i}` },
              })),
            },
          ],
        })),
      }),
    )
    .finish();
}

describe('issue 16: group commit of concurrent OTLP requests', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: JSON.stringify(keys) });
  const post = async (key: string, payload: Uint8Array): Promise<number> => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
      body: new Uint8Array(payload),
    });
    await response.arrayBuffer();
    return response.status;
  };
  const flushes = async (): Promise<{ count: number; requests: number }> => {
    const text = await scrapeMetrics(fixture.orrery.httpPort);
    const value = (name: string): number =>
      Number(new RegExp(`^${name}\\{signal="logs"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    return { count: value('orrery_ingest_flush_requests_count'), requests: value('orrery_ingest_flush_requests_sum') };
  };
  /**
   * The objects under blobs/ (on a local lake with the temporary files of writes too) that hold bytes: the file
   * reserved for the next group (FileObjectStore.reserveNew) is empty until that group writes it.
   */
  const payloads = async (): Promise<string[]> => {
    const keys: string[] = [];
    for await (const page of fixture.orrery.store.listWrittenBefore('blobs/', new Date(Date.now() + 3_600_000)))
      for (const key of page) if ((await fixture.orrery.store.size(key)) !== 0) keys.push(key);
    return keys;
  };
  /** The group objects the blocks name, sorted. */
  const named = async (): Promise<string[]> =>
    (
      await fixture.orrery.metadata.query<{ payload_file: string }>(
        'SELECT DISTINCT payload_file FROM blocks WHERE payload_file IS NOT NULL',
      )
    ).rows
      .map((r) => r.payload_file)
      .sort();
  const stored = async (): Promise<Array<{ exe: string; audience: string; blocks: number; records: number }>> =>
    (
      await fixture.orrery.metadata.query<{ exe: string; audience: string; blocks: number; records: number }>(
        `SELECT p.exe, p.audience, count(*)::int AS blocks, sum(b.nb_objects)::int AS records
           FROM blocks b JOIN processes p USING (process_id)
          WHERE b.audience = p.audience GROUP BY p.exe, p.audience ORDER BY p.exe`,
      )
    ).rows;

  it('a bad body among concurrent ones is refused alone; the others are stored whole with their audience', async () => {
    const senders = 24;
    const good = Array.from({ length: senders }, (_, i) => body(`gc${String(i).padStart(2, '0')}`));
    const keyOf = (i: number): string => keys[i % 2].key;
    const malformed = good[0].subarray(0, good[0].length - 3);
    const outOfRange = body('gc-bad', '18446744073709551615');
    const statuses = await Promise.all([
      ...good.map((payload, i) => post(keyOf(i), payload)),
      post(keyOf(0), good[0]), // a retry racing its original, maybe in the same flush
      post(keys[0].key, malformed),
      post(keys[1].key, outOfRange),
    ]);
    assert.deepEqual(statuses, [...good.map(() => 200), 200, 400, 400]);

    const expected = good.flatMap((_, i) =>
      ['a', 'b'].map((r) => ({
        exe: `gc${String(i).padStart(2, '0')}-${r}`,
        audience: keys[i % 2].audiences[0],
        blocks: 1,
        records: recordsPerResource,
      })),
    );
    assert.deepEqual(await stored(), expected);
    // Nothing of the refused bodies was written: the objects are those the blocks name (one per group of
    // payloads written together), no temporary file left.
    const files = (await payloads()).sort();
    const blocksName = await named();
    const unnamed = files.filter((key) => !blocksName.includes(key));
    assert.deepEqual(
      files.filter((key) => !unnamed.includes(key)),
      blocksName,
    );
    // Only the retry's object when it was written alone (its row was there when its group committed).
    assert.ok(unnamed.length <= 1, unnamed.join('\n'));
    // The 25 accepted requests went through fewer flushes than requests, and fewer objects: they were stored together.
    const { count, requests } = await flushes();
    assert.equal(requests, senders + 1);
    assert.ok(count < requests, `${count} flushes for ${requests} requests`);
    assert.ok(files.length < requests, `${files.length} objects for ${requests} requests`);

    // Retried, each is acknowledged again and stores nothing twice: the blocks keep naming the first objects.
    assert.deepEqual(
      await Promise.all(good.map((payload, i) => post(keyOf(i), payload))),
      good.map(() => 200),
    );
    assert.deepEqual(await stored(), expected);
    assert.deepEqual(
      await named(),
      files.filter((key) => !unnamed.includes(key)),
    );
  });

  it('the blocks of a shared object read back whole: materialized, and by parse_block', async () => {
    const { rows } = await fixture.orrery.metadata.query<{ payload_file: string; blocks: number; ids: string[] }>(
      `SELECT payload_file, count(*)::int AS blocks, array_agg(block_id::text) AS ids FROM blocks
        GROUP BY payload_file ORDER BY count(*) DESC LIMIT 1`,
    );
    assert.ok(rows[0].blocks > 1, `at most ${rows[0].blocks} block(s) in one object`);
    const now = Math.floor(Date.now() / 1000);
    const range = `'${new Date((now - 300) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 360`;
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);
    const perExe = (
      await fixture.admin.query(
        `SELECT exe, count(*)::INT AS n, count(DISTINCT msg)::INT AS distinct_msgs,
                bool_and(starts_with(msg, replace(exe, '-', ' '))) AS own
           FROM log_entries GROUP BY exe ORDER BY exe`,
      )
    )
      .toArray()
      .map((r) => r.toJSON());
    assert.deepEqual(
      perExe,
      (await stored()).map((s) => ({
        exe: s.exe,
        n: recordsPerResource,
        distinct_msgs: recordsPerResource,
        own: true,
      })),
    );
    for (const id of rows[0].ids) {
      const parsed = await fixture.admin.query(`SELECT count(*)::INT AS n FROM parse_block('${id}')`);
      assert.equal(parsed.getChild('n')!.get(0), recordsPerResource, id);
    }
  });

  it('a block stored before group objects (an object of its own, no payload_file) still reads, and is kept', async () => {
    const db = fixture.orrery.metadata;
    const { rows } = await db.query<PayloadRow & { exe: string }>(
      `SELECT ${payloadColumns}, p.exe FROM blocks b JOIN processes p USING (process_id) ORDER BY p.exe LIMIT 1`,
    );
    const [old] = rows;
    const own = payloadKey(old.process_id, old.stream_id, old.block_id);
    // As an older Orrery stored it: its payload at its own key, its row naming no object.
    await fixture.orrery.store.put(own, await blockPayload(fixture.orrery.store, old));
    await db.query('UPDATE blocks SET payload_file = NULL, object_offset = 0 WHERE block_id = $1', [old.block_id]);
    const now = Math.floor(Date.now() / 1000);
    const range = `'${new Date((now - 300) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 360`;
    await fixture.admin.query(`SELECT * FROM regenerate_partitions('log_entries', ${range})`);
    const count = await fixture.admin.query(`SELECT count(*)::INT AS n FROM log_entries WHERE exe = '${old.exe}'`);
    assert.equal(count.getChild('n')!.get(0), recordsPerResource);
    const parsed = await fixture.admin.query(`SELECT count(*)::INT AS n FROM parse_block('${old.block_id}')`);
    assert.equal(parsed.getChild('n')!.get(0), recordsPerResource);
    await deleteOrphans(db, fixture.orrery.store, 3600, Date.now() + 7_200_000);
    assert.notEqual(await fixture.orrery.store.size(own), null);
  });

  it('an object whose rows never commit (as when a crash comes between) is deleted by the orphan sweep alone', async () => {
    const db = fixture.orrery.metadata;
    await db.query(`CREATE FUNCTION refuse_blocks() RETURNS trigger LANGUAGE plpgsql AS $$
                      BEGIN RAISE EXCEPTION 'refused by the test'; END $$`);
    await db.query(
      'CREATE TRIGGER refuse_blocks BEFORE INSERT ON blocks FOR EACH ROW EXECUTE FUNCTION refuse_blocks()',
    );
    const before = await payloads();
    try {
      assert.ok((await post(keys[0].key, body('never-committed'))) >= 500);
    } finally {
      await db.query('DROP TRIGGER refuse_blocks ON blocks');
      await db.query('DROP FUNCTION refuse_blocks()');
    }
    const left = (await payloads()).filter((key) => !before.includes(key));
    assert.equal(left.length, 1, left.join('\n'));
    assert.ok(!(await named()).includes(left[0]));
    // Young, it may be a write under way: kept. Past the grace, it goes once the server's replay mark no longer
    // covers it (a replay would insert its rows), and every object a block names stays.
    await deleteOrphans(db, fixture.orrery.store, 3600);
    assert.ok((await payloads()).includes(left[0]));
    await deleteOrphans(db, fixture.orrery.store, 3600, Date.now() + 7_200_000);
    assert.ok((await payloads()).includes(left[0]), 'kept while a mark covers it');
    // A later commit moves the mark past it (the mark names seconds; the group's is at least one second old then).
    const second = BigInt(payloadGroupSecond(left[0])!);
    for (let i = 0; ; i++) {
      assert.equal(await post(keys[0].key, body(`after-${i}`)), 200);
      const { rows } = await db.query<{ from: string }>('SELECT replay_from::text AS from FROM ingest_marks');
      if (rows.every((r) => BigInt(r.from) / 1_000_000_000n > second)) break;
      assert.ok(i < 100, 'the mark did not move past the group');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { objects } = await deleteOrphans(db, fixture.orrery.store, 3600, Date.now() + 7_200_000);
    assert.ok(objects >= 1);
    assert.deepEqual((await payloads()).filter((key) => key.startsWith('blobs/groups/')).sort(), await named());
  });

  it('a commit that gives way to another statement (a deadlock, a lock timeout, a cancel) or finds no room (disk full, out of memory, a limit) is a 503 with Retry-After; its retry is stored once', async () => {
    const db = fixture.orrery.metadata;
    const send = async (payload: Uint8Array): Promise<{ status: number; retryAfter: string | null }> => {
      const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/logs`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${keys[0].key}` },
        body: new Uint8Array(payload),
      });
      await response.arrayBuffer();
      return { status: response.status, retryAfter: response.headers.get('retry-after') };
    };
    // Postgres refusing the insert with each SQLSTATE as it would a statement that gave way to another, or one it had
    // no room for.
    for (const state of ['40P01', '40001', '55P03', '57014', '53100', '53200', '53400']) {
      const payload = body(`gave-way-${state}`);
      await db.query(`CREATE FUNCTION give_way() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN RAISE EXCEPTION 'gave way (test)' USING ERRCODE = '${state}'; END $$`);
      await db.query('CREATE TRIGGER give_way BEFORE INSERT ON blocks FOR EACH ROW EXECUTE FUNCTION give_way()');
      let refused;
      try {
        refused = await send(payload);
      } finally {
        await db.query('DROP TRIGGER give_way ON blocks');
        await db.query('DROP FUNCTION give_way()');
      }
      // OTLP exporters send again after a 503 (and its Retry-After); a 500 they drop.
      assert.equal(refused.status, 503, state);
      assert.ok(Number(refused.retryAfter) > 0, state);
      assert.deepEqual(await send(payload), { status: 200, retryAfter: null }, state);
      assert.deepEqual(
        (await stored()).filter((r) => r.exe.startsWith(`gave-way-${state}`)).map((r) => [r.blocks, r.records]),
        [
          [1, recordsPerResource],
          [1, recordsPerResource],
        ],
        state,
      );
    }
  });
});
