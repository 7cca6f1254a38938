// Issue 17: a rollup still being backfilled (a resources file's target: it holds buckets from its covered range on,
// and reads the buckets before it from the source's raw rows until backfill steps reach them) keeps the buckets a
// series table's retention took rows of, as every rollup does; a read takes those stored, not from the raw rows left
// before the covered range (a fragment of the bucket, or nothing), and the backfill step that reaches their day
// (`orrery publish` resumed after a retention) leaves them as stored, not replaced by those raw rows. A postponed
// audience's rows of such a bucket are read as a held bucket's.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { plain, plainRows, scalar, useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import { readAfterWrite } from '../support/flight-transactions.js';
import { publishFolderAs } from '../support/publish.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-backfill-kept-01', audiences: ['public'] };
const teamX: TestKey = { name: 'team-x', key: 'team-x-key-backfill-kept-01', audiences: ['team_x'] };
const pub: TestKey = { name: 'pub', key: 'pub-key-backfill-kept-01', audiences: ['public'] };

describe("a bucket retention kept before a backfilling rollup's covered range (#17)", () => {
  const lake = useLakeOrrery({ keys: [admin, teamX, pub], role: 'all', env: { ORRERY_ROLLUP_REFRESH_JOBS: 'off' } });
  const dir = mkdtempSync(join(tmpdir(), 'orrery-backfill-kept-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is read stored, whole, by every key, the raw rows before the range still read', async () => {
    const asAdmin = lake.client(admin);
    const asX = lake.client(teamX);
    await asAdmin.updateCount(`CREATE TABLE bf (ts TIMESTAMPTZ, k INTEGER, v BIGINT) WITH (time_column = 'ts')`);
    // 2024's hour, past the retention set below: retention removes its rows and keeps the bucket. Three days ago:
    // before the covered range, within the retention.
    await asAdmin.updateCount(
      `INSERT INTO bf (ts, k, v, audience) VALUES
         ('2024-01-01 00:10:00+00', 1, 1, 'public'), ('2024-01-01 00:20:00+00', 1, 2, 'public'),
         ('2024-01-01 00:30:00+00', 2, 4, 'public'), ('2024-01-01 00:40:00+00', 3, 8, 'team_x')`,
    );
    await asAdmin.updateCount(
      `INSERT INTO bf (ts, k, v, audience) VALUES (now() - INTERVAL 3 DAY, 1, 16, 'public'), (now() - INTERVAL 3 DAY, 3, 32, 'team_x')`,
    );
    await asAdmin.updateCount(`INSERT INTO bf (ts, k, v, audience) VALUES (now(), 1, 64, 'public')`);
    await scalar(
      asAdmin,
      `SELECT create_rollup('bf_hourly', 'bf', INTERVAL '1 hour', select_list => 'k, count(*) AS n, sum(v)::BIGINT AS s', group_by => 'k')`,
    );
    await scalar(asAdmin, `SELECT refresh_rollup('bf_hourly')`);
    // Where a target's backfill steps have reached a day ago (create_rollup of a target starts it at now's hour, each
    // step moves it a day down): its buckets before are read from the raw rows.
    const [{ covered }] = await plainRows(
      asAdmin,
      `SELECT CAST(time_bucket(INTERVAL 1 HOUR, now()::TIMESTAMP - INTERVAL 1 DAY) AS VARCHAR) AS covered`,
    );
    await lake.orrery.metadata.query(`UPDATE rollup_definitions SET covered_from = $1 WHERE name = 'bf_hourly'`, [
      covered,
    ]);
    const read = `SELECT bucket, k, n::INT AS n, s::INT AS s, audience FROM bf_hourly ORDER BY ALL`;
    const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, k, count(*)::INT AS n, sum(v)::INT AS s, audience FROM bf GROUP BY ALL ORDER BY ALL`;
    const [asAdminBefore, asXBefore] = [await plainRows(asAdmin, source), await plainRows(asX, source)];
    assert.equal(asAdminBefore.length, 6);
    assert.deepEqual(await plainRows(asAdmin, read), asAdminBefore);
    assert.deepEqual(await plainRows(asX, read), asXBefore);

    await asAdmin.query(`SELECT * FROM set_retention('bf', '30 days')`);
    await lake.orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM bf WHERE ts < TIMESTAMP '2025-01-01'`), 0);
    // 2024's hour as before the retention, every key's rows of it; the days after as the raw rows are.
    assert.deepEqual(await plainRows(asAdmin, read), asAdminBefore);
    assert.deepEqual(await plainRows(asX, read), asXBefore);
    // So in a client's transaction that wrote the table (whose reads take every other bucket from the raw rows).
    const old = (rows: Array<Record<string, unknown>>) => rows.filter((r) => Number(r.bucket) < Date.UTC(2025, 0, 1));
    const written = (
      await readAfterWrite(asAdmin, `INSERT INTO bf (ts, k, v, audience) VALUES (now(), 1, 128, 'public')`, read)
    )
      .toArray()
      .map((r) => plain(r.toJSON()));
    assert.deepEqual(old(written), old(asAdminBefore));
  });

  it('is left as retention stored it by the backfill step of a publication resumed over its day', async () => {
    const asAdmin = lake.client(admin);
    mkdirSync(join(dir, 'resources'));
    const tagged = {
      rollup: {
        table: 'bk',
        grain: '1h',
        dimensions: ['k'],
        measures: { n: 'count(*)', tags: 'sum(CAST(tag AS INTEGER))' },
      },
    };
    writeFileSync(join(dir, 'resources', 'bk.resources.json'), JSON.stringify({ resources: { tagged } }));
    const publish = () => publishFolderAs(admin.key, `127.0.0.1:${lake.orrery.flightPort}`, dir);
    const hourMs = 3_600_000;
    const dayMs = 24 * hourMs;
    // The day the resumed backfill fills: two days ago (UTC), the retention's horizon at its 12:30 below.
    const day = Math.floor(Date.now() / dayMs) * dayMs - 2 * dayMs;
    const at = (ms: number): string => `TIMESTAMPTZ '${new Date(ms).toISOString()}'`;
    await asAdmin.updateCount(`CREATE TABLE bk (ts TIMESTAMPTZ, k INTEGER, tag VARCHAR) WITH (time_column = 'ts')`);
    // Each hour of that day at :10 and :50, each of the next day at :30; a row of that day the measure cannot read,
    // so that the publication stops before its day.
    const rows = [
      ...Array.from({ length: 24 }, (_, h) =>
        [10, 50].map((m) => `(${at(day + h * hourMs + m * 60_000)}, ${1 + (h % 2)}, '${h * 100 + m}', 'public')`),
      ).flat(),
      ...Array.from({ length: 24 }, (_, h) => `(${at(day + dayMs + h * hourMs + 30 * 60_000)}, 1, '1', 'public')`),
      `(${at(day + 20 * hourMs + 40 * 60_000)}, 1, 'oops', 'public')`,
    ];
    await asAdmin.updateCount(`INSERT INTO bk (ts, k, tag, audience) VALUES ${rows.join(', ')}`);
    const stopped = await publish();
    assert.equal(stopped.status, 1, stopped.text);
    const target = /^created rollup (rollup_bk_tagged__[0-9a-f]{8}) over bk/m.exec(stopped.text)![1];
    const done = [...stopped.text.matchAll(/^ {2}tagged: (\d{4}-\d\d-\d\d) done/gm)].map((d) => d[1]);
    assert.equal(done[done.length - 1], new Date(day + dayMs).toISOString().slice(0, 10), stopped.text);

    await asAdmin.updateCount(`DELETE FROM bk WHERE tag = 'oops'`);
    // The hours retention keeps below (its horizon at 12:30: 12:00's with its row at 12:50 still raw), as the raw rows
    // answer before it.
    const horizon = day + 12 * hourMs + 30 * 60_000;
    const keptEnd = at(day + 13 * hourMs);
    const raw = (where: string) =>
      plainRows(
        asAdmin,
        `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, k, count(*)::BIGINT AS n, sum(CAST(tag AS INTEGER))::BIGINT AS tags
           FROM bk WHERE ${where} GROUP BY ALL ORDER BY ALL`,
      );
    const keptRaw = await raw(`ts < ${keptEnd}`);
    assert.equal(keptRaw.length, 13);
    await asAdmin.query(`SELECT * FROM set_retention('bk', '${Math.floor((Date.now() - horizon) / 1000)} seconds')`);
    await lake.orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM bk WHERE ts < ${keptEnd}`), 1);
    const stored = `SELECT * FROM ${target}_materialized WHERE bucket < ${keptEnd} ORDER BY ALL`;
    const kept = await plainRows(asAdmin, stored);
    assert.equal(kept.length, 13);
    // A late row of a kept hour: the backfill now starts at its hour, the other kept ones after it in its day.
    await asAdmin.updateCount(
      `INSERT INTO bk (ts, k, tag, audience) VALUES (${at(day + 3 * hourMs + 20 * 60_000)}, 2, '1000', 'public')`,
    );

    const resumed = await publish();
    assert.equal(resumed.status, 0, resumed.err.join('\n'));
    assert.match(resumed.text, new RegExp(`^ {2}tagged: ${new Date(day).toISOString().slice(0, 10)} done, 0 day`, 'm'));
    // The kept hours hold what retention stored, exactly; the view answers them so, the later hours as the raw rows.
    assert.deepEqual(await plainRows(asAdmin, stored), kept);
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT bucket, k, n::BIGINT AS n, tags::BIGINT AS tags FROM rollup_bk_tagged ORDER BY ALL`,
      ),
      [...keptRaw, ...(await raw(`ts >= ${keptEnd}`))],
    );
  });

  it('a bucket a refresh held for an audience is left as that refresh stored it by the backfill step over its day', async () => {
    const asAdmin = lake.client(admin);
    const held = mkdtempSync(join(tmpdir(), 'orrery-backfill-held-'));
    after(() => rmSync(held, { recursive: true, force: true }));
    mkdirSync(join(held, 'resources'));
    const tagged = {
      rollup: {
        table: 'bh',
        grain: '1h',
        dimensions: ['k'],
        measures: { n: 'count(*)', tags: 'sum(CAST(tag AS INTEGER))' },
      },
    };
    writeFileSync(join(held, 'resources', 'bh.resources.json'), JSON.stringify({ resources: { tagged } }));
    const publish = () => publishFolderAs(admin.key, `127.0.0.1:${lake.orrery.flightPort}`, held);
    const hourMs = 3_600_000;
    const dayMs = 24 * hourMs;
    const day = Math.floor(Date.now() / dayMs) * dayMs - 2 * dayMs;
    const at = (ms: number): string => `TIMESTAMPTZ '${new Date(ms).toISOString()}'`;
    await asAdmin.updateCount(`CREATE TABLE bh (ts TIMESTAMPTZ, k INTEGER, tag VARCHAR) WITH (time_column = 'ts')`);
    // Each hour of two days ago at :10, of yesterday at :30, and a row two days ago the measure cannot read: the
    // publication stops before that day.
    const rows = [
      ...Array.from({ length: 24 }, (_, h) => `(${at(day + h * hourMs + 10 * 60_000)}, 1, '${h}', 'public')`),
      ...Array.from({ length: 24 }, (_, h) => `(${at(day + dayMs + h * hourMs + 30 * 60_000)}, 1, '1', 'public')`),
      `(${at(day + 20 * hourMs + 40 * 60_000)}, 1, 'oops', 'public')`,
    ];
    await asAdmin.updateCount(`INSERT INTO bh (ts, k, tag, audience) VALUES ${rows.join(', ')}`);
    const stopped = await publish();
    assert.equal(stopped.status, 1, stopped.text);
    const target = /^created rollup (rollup_bh_tagged__[0-9a-f]{8}) over bh/m.exec(stopped.text)![1];
    await asAdmin.updateCount(`DELETE FROM bh WHERE tag = 'oops'`);
    // team_x's late row of 05:00 its measure cannot read: the refresh stores public's rows of the hour and holds it
    // for team_x.
    const fiveAm = at(day + 5 * hourMs);
    await asAdmin.updateCount(
      `INSERT INTO bh (ts, k, tag, audience) VALUES (${at(day + 5 * hourMs + 20 * 60_000)}, 2, 'bad', 'team_x')`,
    );
    await scalar(asAdmin, `SELECT refresh_rollup('${target}')`);
    const stored = `SELECT bucket, k, n::BIGINT AS n, tags::BIGINT AS tags, audience FROM ${target}_materialized WHERE bucket = ${fiveAm}`;
    const heldStored = await plainRows(asAdmin, stored);
    assert.deepEqual(
      heldStored.map((r) => [r.k, r.n, r.tags, r.audience]),
      [[1, 1, 5, 'public']],
    );

    const resumed = await publish();
    assert.equal(resumed.status, 0, resumed.err.join('\n'));
    assert.match(resumed.text, new RegExp(`^ {2}tagged: ${new Date(day).toISOString().slice(0, 10)} done, 0 day`, 'm'));
    assert.deepEqual(await plainRows(asAdmin, stored), heldStored);
    // public's rows read as the raw rows answer them; team_x's of the hour still read raw (its cast fails there too).
    const view = `SELECT bucket, k, n::BIGINT AS n, tags::BIGINT AS tags FROM rollup_bh_tagged ORDER BY ALL`;
    const raw = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, k, count(*)::BIGINT AS n, sum(CAST(tag AS INTEGER))::BIGINT AS tags
                   FROM bh GROUP BY ALL ORDER BY ALL`;
    assert.deepEqual(await plainRows(lake.client(pub), view), await plainRows(lake.client(pub), raw));
    await assert.rejects(plainRows(lake.client(teamX), view), /Could not convert string 'bad'/);
    // team_x's row corrected: the next refresh stores the hour whole, read so by every key.
    await asAdmin.updateCount(`UPDATE bh SET tag = '7' WHERE tag = 'bad'`);
    await scalar(asAdmin, `SELECT refresh_rollup('${target}')`);
    for (const key of [admin, teamX, pub])
      assert.deepEqual(await plainRows(lake.client(key), view), await plainRows(lake.client(key), raw));
  });
});

// A postponed audience's rows (see rollup-retention-out-of-memory: its aggregate past the maintenance engine's memory,
// retention spares them for a later run) of a bucket kept before the covered range of a publication's target: its
// bucket is held for it, read from those rows, the others' from the stored rows (in a client's transaction that wrote
// the table too), and the backfill step over its day, the publication resumed, leaves it so.
describe("a postponed audience's rows of a kept bucket before a backfilling rollup's covered range (#17)", () => {
  const teamY: TestKey = { name: 'team-y', key: 'team-y-key-backfill-kept-01', audiences: ['team_y'] };
  const lake = useLakeOrrery({
    keys: [admin, teamX, teamY],
    role: 'all',
    // The maintenance engine alone squeezed: retention runs there, the reads and the backfill on the roomy query engine.
    env: { ORRERY_ROLLUP_REFRESH_JOBS: 'off', ORRERY_MAINTENANCE_MEMORY_LIMIT: '32MiB' },
  });
  const dir = mkdtempSync(join(tmpdir(), 'orrery-backfill-postponed-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('are read as held, by every key, as before the retention, before and after the backfill step over their day', async () => {
    const asAdmin = lake.client(admin);
    const clients = [asAdmin, ...[teamX, teamY].map((key) => lake.client(key))];
    mkdirSync(join(dir, 'resources'));
    const sketchy = {
      rollup: {
        table: 'bp',
        grain: '1h',
        dimensions: ['k'],
        measures: { n: 'count(*)', p: 'approx_quantile(v, 0.5)', tags: 'sum(CAST(tag AS INTEGER))' },
      },
    };
    writeFileSync(join(dir, 'resources', 'bp.resources.json'), JSON.stringify({ resources: { sketchy } }));
    const publish = () => publishFolderAs(admin.key, `127.0.0.1:${lake.orrery.flightPort}`, dir);
    const hourMs = 3_600_000;
    const dayMs = 24 * hourMs;
    const day = Math.floor(Date.now() / dayMs) * dayMs - 2 * dayMs;
    const at = (hours: number): string => `TIMESTAMPTZ '${new Date(day + hours * hourMs).toISOString()}'`;
    await asAdmin.updateCount(
      `CREATE TABLE bp (ts TIMESTAMPTZ, k INTEGER, v DOUBLE, tag VARCHAR) WITH (time_column = 'ts')`,
    );
    // Two days ago: rows at 03:10 and 05:10-05:20, before the retention's horizon (12:30) below; one at 14:10; a row
    // the measure cannot read at 20:40, so that the publication stops before that day. Yesterday: one at 10:30.
    await asAdmin.updateCount(
      `INSERT INTO bp (ts, k, v, tag, audience) VALUES (${at(3 + 1 / 6)}, 1, 2.5, '1', 'public'),
         (${at(5 + 1 / 6)}, 1, 3.5, '2', 'public'), (${at(5 + 2 / 6)}, 2, 4.0, '4', 'team_x'),
         (${at(14 + 1 / 6)}, 3, 1.0, '8', 'public'), (${at(20 + 4 / 6)}, 1, 1.0, 'oops', 'public'),
         (${at(34.5)}, 1, 1.0, '16', 'public')`,
    );
    // team_y at 05:30: 32 keys of about 73,000 log buckets of a percentile sketch each, past the 32 MiB its states may take.
    await asAdmin.updateCount(
      `INSERT INTO bp (ts, k, v, tag, audience) SELECT ${at(5.5)}, i % 32, pow(1.02, (i // 32) - 37000), '1', 'team_y' FROM range(32 * 74000) t(i)`,
    );
    const stopped = await publish();
    assert.equal(stopped.status, 1, stopped.text);
    const target = /^created rollup (rollup_bp_sketchy__[0-9a-f]{8}) over bp/m.exec(stopped.text)![1];
    const done = [...stopped.text.matchAll(/^ {2}sketchy: (\d{4}-\d\d-\d\d) done/gm)].map((d) => d[1]);
    assert.equal(done[done.length - 1], new Date(day + dayMs).toISOString().slice(0, 10), stopped.text);
    await asAdmin.updateCount(`DELETE FROM bp WHERE tag = 'oops'`);
    const raw = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, audience, k, count(*)::INT AS n FROM bp GROUP BY ALL ORDER BY ALL`;
    const before = await Promise.all(clients.map((client) => plainRows(client, raw)));
    assert.equal(before[0].length, 37);
    const read = (from: string) => `SELECT bucket, audience, k, n::INT AS n FROM ${from} ORDER BY ALL`;
    const reads = (from: string) => Promise.all(clients.map((client) => plainRows(client, read(from))));

    await asAdmin.query(
      `SELECT * FROM set_retention('bp', '${Math.floor((Date.now() - (day + 12.5 * hourMs)) / 1000)} seconds')`,
    );
    await lake.orrery.daemon!.housekeeping();
    assert.deepEqual(
      await plainRows(asAdmin, 'SELECT audience, count(*)::INT AS n FROM bp GROUP BY ALL ORDER BY ALL'),
      [
        { audience: 'public', n: 2 },
        { audience: 'team_y', n: 32 * 74000 },
      ],
    );
    const [{ last_error: error }] = await plainRows(
      asAdmin,
      `SELECT last_error FROM snouttime.jobs WHERE target = '${target}'`,
    );
    assert.match(String(error), /^audience team_y: retention of bp postponed: /m);
    // Before the covered range (yesterday on): 03:00 and 05:00 kept, team_y's rows of 05:00 held.
    assert.deepEqual(await reads(target), before);
    const written = (
      await readAfterWrite(
        asAdmin,
        `INSERT INTO bp (ts, k, v, tag, audience) VALUES (now(), 99, 1.0, '1', 'public')`,
        `SELECT bucket, audience, k, n::INT AS n FROM ${target} WHERE k <> 99 ORDER BY ALL`,
      )
    )
      .toArray()
      .map((r) => plain(r.toJSON()));
    assert.deepEqual(written, before[0]);

    // Resumed: the step fills the day from team_y's spared rows' hour, 05:00, kept.
    const resumed = await publish();
    assert.equal(resumed.status, 0, resumed.err.join('\n'));
    assert.match(
      resumed.text,
      new RegExp(`^ {2}sketchy: ${new Date(day).toISOString().slice(0, 10)} done, 0 day`, 'm'),
    );
    assert.deepEqual(await reads('rollup_bp_sketchy'), before);
  });
});
