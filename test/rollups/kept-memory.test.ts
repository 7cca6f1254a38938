// Issue 17: the in-memory copies of rollups' rows a server reads from (stored rows, rings of kept tails) take at most
// ORRERY_ROLLUP_KEPT_MEMORY_LIMIT together, through a real server: a copy that would take more evicts the least
// recently read, one larger than the budget is not kept, a ring's replaced rows stay counted, and every read
// (an audience's too) still answers the aggregation of the source. Told by /metrics. The maintenance engine's copies
// (its refreshes of rollups of rollups read their sources' rows from them) take at most a quarter of
// ORRERY_MAINTENANCE_MEMORY_LIMIT, evicted the same way.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  clientFor,
  plain,
  plainRows,
  pollUntil,
  scalar,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import { tableFromFlightData, type FlightData } from '../../src/wire/index.js';
import { packAny, type TestFlightClient } from '../support/flight-client.js';
import { keptDropped, storedMakingsDuring } from '../support/kept-makings.js';
import { scrapeMetrics } from '../support/metric-value.js';
import { jobLeftForADay, jobRunOnSchedule } from '../support/refresh-jobs.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-kept-memory-01', audiences: ['ops'] };
const teamA: TestKey = { name: 'team-a', key: 'team-a-key-kept-memory-01', audiences: ['team-a'] };
const teamB: TestKey = { name: 'team-b', key: 'team-b-key-kept-memory-01', audiences: ['team-b'] };

/** 1 MiB: two of the rollups' stored rows below (~412 KB each, as kept-size.ts measures them) fit, three do not. */
const budget = 1024 * 1024;

/** The series of a metric on /metrics, its labels as an object (the instance's left out), with its value. */
const series = (text: string, name: string): Array<{ labels: Record<string, string>; value: number }> =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))].map(([, labels, value]) => ({
    labels: Object.fromEntries(
      [...(labels ?? '').matchAll(/(\w+)="([^"]*)"/g)].filter(([, k]) => k !== 'instance').map(([, k, v]) => [k, v]),
    ),
    value: Number(value),
  }));
/** The series of a metric of one engine's kept copies. */
const engineSeries = (text: string, name: string, engine: 'query' | 'maintenance') =>
  series(text, name).filter(({ labels }) => labels.engine === engine);

describe('kept copies of rollups under ORRERY_ROLLUP_KEPT_MEMORY_LIMIT (issue 17)', () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let orrery: InProcessOrrery;
  let asAdmin: TestFlightClient;
  let asTeamA: TestFlightClient;
  let asTeamB: TestFlightClient;

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-kept-memory-lake-'));
    orrery = await startRole('all', {
      ...sharedEnv({
        keys: [admin, teamA, teamB],
        admins: [admin.name],
        connectionString: postgres.connectionString,
        lakeDir,
      }),
      ORRERY_ROLLUP_KEPT_MEMORY_LIMIT: '1MiB',
    });
    asAdmin = clientFor(orrery.flightPort, admin);
    asTeamA = clientFor(orrery.flightPort, teamA);
    asTeamB = clientFor(orrery.flightPort, teamB);
  });
  after(async () => {
    for (const c of [asAdmin, asTeamA, asTeamB]) c?.close();
    await orrery?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  const metrics = async (): Promise<string> => scrapeMetrics(orrery.httpPort, admin.key);
  /** The bytes the query engine keeps by rollup, of one kind. */
  const kept = async (kind: 'stored' | 'tail', text?: string): Promise<Record<string, number>> =>
    Object.fromEntries(
      series(text ?? (await metrics()), 'orrery_rollup_kept_bytes')
        .filter(({ labels }) => labels.engine === 'query' && labels.kind === kind)
        .map(({ labels, value }) => [labels.rollup, value]),
    );
  const evictions = (text: string): number =>
    series(text, 'orrery_rollup_kept_evictions_total').find(
      ({ labels }) => labels.engine === 'query' && labels.kind === 'stored',
    )?.value ?? 0;
  /** An integer-time rollup of `table` per 10 (its watermark never moves with the clock), refreshed, its job idle. */
  const rollup = async (name: string, table: string): Promise<void> => {
    await asAdmin.query(
      `SELECT create_rollup('${name}', '${table}', bucket_width => 10,
         select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
    );
    // The job's first run is due at create_rollup whatever the schedule: once it has run, none lands in the test.
    await jobLeftForADay(asAdmin, name);
    await scalar(asAdmin, `SELECT refresh_rollup('${name}')`);
  };
  const sourceOf = (table: string): string =>
    `SELECT t // 10 * 10 AS bucket, host, count(*) AS n, sum(v) AS s, audience FROM ${table} GROUP BY ALL`;
  const order = ' ORDER BY bucket, host, audience';
  /**
   * Every key's read of the rollup and of its `_materialized` stored rows (the buckets before its watermark) answers
   * the source's aggregation.
   */
  const exact = async (name: string, table: string, watermark: number): Promise<void> => {
    for (const client of [asAdmin, asTeamA, asTeamB]) {
      assert.deepEqual(
        await plainRows(client, `SELECT * FROM ${name}${order}`),
        await plainRows(client, `${sourceOf(table)}${order}`),
        name,
      );
      assert.deepEqual(
        await plainRows(client, `SELECT bucket, host, n, s, audience FROM ${name}_materialized${order}`),
        await plainRows(client, `SELECT * FROM (${sourceOf(table)}) WHERE bucket < ${watermark}${order}`),
        `${name}_materialized`,
      );
    }
  };
  /** A key's read of a rollup, with the kept copies of stored rows it made (awaited: each a table, or null). */
  const read = async (client: TestFlightClient, name: string): Promise<Array<string | null>> =>
    Promise.all(await storedMakingsDuring(() => plainRows(client, `SELECT * FROM ${name}${order}`)));

  it('a copy that would take more than the budget evicts the least recently read; reads stay exact', async () => {
    await asAdmin.updateCount(`CREATE TABLE kept_memory (t BIGINT, host VARCHAR, v BIGINT) WITH (time_column = 't')`);
    // 100 hosts of 4 KB names in bucket 0 (the stored rows, ~412 KB), and a row at 100: the watermark is 100.
    await asTeamA.updateCount(
      `INSERT INTO kept_memory SELECT i % 10, 'h' || i || repeat('x', 4000), i FROM range(100) t(i) UNION ALL SELECT 100, 'h0', 0`,
    );
    await asTeamB.updateCount(`INSERT INTO kept_memory VALUES (5, 'b', 1), (105, 'b', 2)`);
    for (const name of ['km1', 'km2', 'km3']) await rollup(name, 'kept_memory');

    assert.equal((await read(asTeamA, 'km1')).length, 1);
    assert.equal((await read(asTeamA, 'km2')).length, 1);
    assert.deepEqual(Object.keys(await kept('stored')).sort(), ['km1', 'km2'], 'two fit');
    // km1 read again (its kept copy: nothing made), then km3's copy: km2 is the least recently read.
    assert.deepEqual(await read(asTeamB, 'km1'), []);
    const [third] = await read(asTeamA, 'km3');
    assert.ok(third, 'kept');
    let text = await metrics();
    const stored = await kept('stored', text);
    assert.deepEqual(Object.keys(stored).sort(), ['km1', 'km3'], 'km2 evicted');
    assert.ok(stored.km1 > 400_000 && stored.km1 === stored.km3, JSON.stringify(stored));
    assert.equal(evictions(text), 1);
    assert.equal(engineSeries(text, 'orrery_rollup_kept_budget_bytes', 'query')[0]?.value, budget);
    const total = engineSeries(text, 'orrery_rollup_kept_bytes', 'query').reduce((sum, { value }) => sum + value, 0);
    assert.ok(total <= budget, `${total} bytes kept`);

    // km2's next read reads its files (its copy evicted), and makes it again: km1 is now the least recently read.
    let plan = '';
    const makings = await storedMakingsDuring(async () => {
      plan = (await asAdmin.query(`EXPLAIN ANALYZE SELECT * FROM km2`))
        .toArray()
        .map((row) => Object.values(row.toJSON() as Record<string, unknown>).join('\n'))
        .join('\n');
    });
    assert.doesNotMatch(plan, /__orrery_tail_s\d+/, 'read from its files');
    assert.match(plan, /READ_PARQUET/);
    assert.ok(await makings[0]);
    text = await metrics();
    assert.deepEqual(Object.keys(await kept('stored', text)).sort(), ['km2', 'km3'], 'km1 evicted');
    assert.equal(evictions(text), 2);

    // Stored rows larger than the budget alone are not kept, and evict nothing.
    await asAdmin.updateCount(`CREATE TABLE kept_wide (t BIGINT, host VARCHAR, v BIGINT) WITH (time_column = 't')`);
    await asTeamA.updateCount(
      `INSERT INTO kept_wide SELECT i % 10, 'h' || i || repeat('x', 4000), i FROM range(300) t(i) UNION ALL SELECT 100, 'h0', 0`,
    );
    await rollup('kw', 'kept_wide');
    assert.deepEqual(await read(asTeamA, 'kw'), [null], 'larger than the budget');
    text = await metrics();
    assert.deepEqual(Object.keys(await kept('stored', text)).sort(), ['km2', 'km3']);
    assert.equal(evictions(text), 2);

    // Every read exact, whatever each one's copy is (kept, evicted, made again meanwhile).
    const readsMade = await storedMakingsDuring(async () => {
      for (const name of ['km1', 'km2', 'km3']) await exact(name, 'kept_memory', 100);
      await exact('kw', 'kept_wide', 100);
    });
    await Promise.all(readsMade);
    const final = engineSeries(await metrics(), 'orrery_rollup_kept_bytes', 'query').reduce(
      (sum, { value }) => sum + value,
      0,
    );
    assert.ok(final <= budget, `${final} bytes kept`);
  });

  it('a statement set up to read a copy evicted since (dropped at once) answers its rows exactly', async () => {
    // Copies of equal size under this budget: the two last read are kept, km1 the least recently read.
    for (const name of ['km1', 'km2']) await read(asTeamA, name);
    assert.deepEqual(Object.keys(await kept('stored')).sort(), ['km1', 'km2']);
    // Set up with km1's copy (read now: km2 is the least recently read), then km3 evicts km2 and km2 evicts km1.
    const sql = `SELECT * FROM km1${order}`;
    const info = await asTeamA.getFlightInfo(packAny('CommandStatementQuery', { query: sql }));
    for (const name of ['km3', 'km2']) assert.ok((await read(asTeamA, name))[0]);
    assert.deepEqual(Object.keys(await kept('stored')).sort(), ['km2', 'km3'], 'km1 evicted');
    const rows = (await asTeamA.doGet(info.endpoints[0].ticket)).table.toArray().map((r) => plain(r.toJSON()));
    assert.deepEqual(rows, await plainRows(asTeamA, `${sourceOf('kept_memory')}${order}`));
  });

  it('a DoGet streaming from a copy evicted (and dropped) midway answers its rows exactly', async () => {
    // km1's copy made anew (the least recently read of km2 and km3 evicted), and read by the statement below.
    const [copy] = await read(asTeamA, 'km1');
    assert.ok(copy, 'kept');
    // 40 times km1's rows (~16 MB): DoGet streams them in batches of 2 MiB, the next one made as the client reads on.
    const sql = `SELECT k.*, i FROM km1 k, range(40) t(i)`;
    const info = await asTeamA.getFlightInfo(packAny('CommandStatementQuery', { query: sql }));
    const stream = asTeamA.client.doGet(info.endpoints[0].ticket)[Symbol.asyncIterator]();
    const parts: FlightData[] = [];
    while (!parts.some((part) => part.dataBody.byteLength > 0)) {
      const next = await stream.next();
      assert.ok(!next.done, 'a batch before the stream ends');
      parts.push(next.value);
    }
    // The first batch read: km3 and km2 read evict km1's copy, dropped at once, before the rest is read.
    const dropped = keptDropped(copy);
    for (const name of ['km3', 'km2']) assert.ok((await read(asTeamA, name))[0]);
    assert.deepEqual(Object.keys(await kept('stored')).sort(), ['km2', 'km3'], 'km1 evicted');
    await dropped;
    for (let next = await stream.next(); !next.done; next = await stream.next()) parts.push(next.value);
    assert.ok(parts.filter((part) => part.dataBody.byteLength > 0).length > 1, 'streamed in batches');
    const sorted = (rows: unknown[]): string[] => rows.map((row) => JSON.stringify(row)).sort();
    assert.deepEqual(
      sorted(
        tableFromFlightData(parts)!
          .toArray()
          .map((row) => plain(row.toJSON())),
      ),
      sorted(await plainRows(asTeamA, `SELECT s.*, i FROM (${sourceOf('kept_memory')}) s, range(40) t(i)`)),
    );
  });

  it('a ring of kept tails is charged with every row put in it, replaced ones too, until it is dropped', async () => {
    await asAdmin.updateCount(`CREATE TABLE kept_ring (t BIGINT, host VARCHAR, v BIGINT) WITH (time_column = 't')`);
    // Files (300 rows each: not inlined in the catalog), so the tail (its files' aggregate) is kept: host a in buckets
    // 0 (stored) and 10 (the watermark's).
    await asTeamA.updateCount(`INSERT INTO kept_ring SELECT i % 20, 'a', i FROM range(300) t(i)`);
    await rollup('kr', 'kept_ring');
    // The first read keeps its tail (the rows from the watermark 10 on) as the ring's first row, in the background.
    await plainRows(asAdmin, `SELECT * FROM kr`);
    const first = (
      await pollUntil(
        "kr's ring charged",
        () => kept('tail'),
        (bytes) => (bytes.kr ?? 0) > 0,
        { timeoutMs: 120_000 },
      )
    ).kr;
    // A write keeps the tail anew before it answers, its row charged with the bytes its INSERT answered: a second row
    // of the same groups (the same bytes). The first is replaced, but its memory is DuckDB's until the ring's database
    // is detached: the ring is charged with both, by the time the write answered.
    await asTeamA.updateCount(`INSERT INTO kept_ring SELECT 10 + i % 10, 'a', i FROM range(300) t(i)`);
    assert.equal((await kept('tail')).kr, 2 * first, "kr's ring charged with both rows");
    await exact('kr', 'kept_ring', 10);
  });
});

describe("the maintenance engine's kept copies under a quarter of ORRERY_MAINTENANCE_MEMORY_LIMIT (issue 17)", () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let orrery: InProcessOrrery;
  let asAdmin: TestFlightClient;
  /** A quarter of the maintenance engine's 32 MiB. */
  const daemonBudget = 8 * 1024 * 1024;

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-kept-memory-lake-'));
    orrery = await startRole('all', {
      ...sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString, lakeDir }),
      ORRERY_MAINTENANCE_MEMORY_LIMIT: '32MiB',
    });
    asAdmin = clientFor(orrery.flightPort, admin);
  });
  after(async () => {
    asAdmin?.close();
    await orrery?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it("a refresh's copy of its source rollup's rows that would take more evicts the least recently read; the rollups read exact", async () => {
    await asAdmin.updateCount(`CREATE TABLE kept_daemon (t BIGINT, host VARCHAR, v BIGINT) WITH (time_column = 't')`);
    // 750 hosts of 4 KB names in bucket 0 (each base's stored rows, ~3.1 MB: two fit the budget, three do not), and a
    // row at 1000: the watermark of every rollup is 1000.
    await asAdmin.updateCount(
      `INSERT INTO kept_daemon SELECT i % 10, 'h' || i || repeat('x', 4000), i FROM range(750) t(i) UNION ALL SELECT 1000, 'h0', 0`,
    );
    const bases = ['kd_b1', 'kd_b2', 'kd_b3'];
    for (const base of bases) {
      await asAdmin.query(
        `SELECT create_rollup('${base}', 'kept_daemon', bucket_width => 10,
           select_list => 'host, count(*) AS n, sum(v) AS s', group_by => 'host')`,
      );
      await scalar(asAdmin, `SELECT refresh_rollup('${base}')`);
    }
    // Each rollup of a base is refreshed by its job, due at once, on the maintenance engine: its read of the base's
    // stored rows makes the engine's copy of them.
    for (const [i, base] of bases.entries())
      await asAdmin.query(
        `SELECT create_rollup('kd_t${i + 1}', '${base}', bucket_width => 100,
           select_list => 'host, sum(n) AS n, sum(s) AS s', group_by => 'host')`,
      );
    const daemon = async (): Promise<{ text: string; copies: number; evicted: number }> => {
      const text = await metrics();
      const copies = engineSeries(text, 'orrery_rollup_kept_bytes', 'maintenance').filter(
        ({ labels }) => labels.kind === 'stored',
      ).length;
      const evicted =
        engineSeries(text, 'orrery_rollup_kept_evictions_total', 'maintenance').find(
          ({ labels }) => labels.kind === 'stored',
        )?.value ?? 0;
      return { text, copies, evicted };
    };
    const metrics = (): Promise<string> => scrapeMetrics(orrery.httpPort, admin.key);
    // Every base's copy made: kept, or evicted by one made after it.
    const { text, copies, evicted } = await pollUntil(
      "the maintenance engine's copies of the three bases",
      daemon,
      (d) => d.copies + d.evicted >= 3,
      { timeoutMs: 180_000 },
    );
    const total = engineSeries(text, 'orrery_rollup_kept_bytes', 'maintenance').reduce(
      (sum, { value }) => sum + value,
      0,
    );
    assert.ok(total > 0 && total <= daemonBudget, `${total} bytes kept by the maintenance engine`);
    assert.ok(copies >= 1 && evicted >= 1, `${copies} copies kept, ${evicted} evicted`);
    assert.equal(engineSeries(text, 'orrery_rollup_kept_budget_bytes', 'maintenance')[0]?.value, daemonBudget);
    // The rollups refreshed by their jobs from the copies (or the files of one evicted) hold their source's aggregation.
    const source = `SELECT t // 100 * 100 AS bucket, host, count(*) AS n, sum(v)::BIGINT AS s FROM kept_daemon GROUP BY ALL`;
    for (const [i] of bases.entries()) {
      assert.equal((await jobRunOnSchedule(asAdmin, `kd_t${i + 1}`)).last_status, 'ok');
      assert.deepEqual(
        await plainRows(
          asAdmin,
          `SELECT bucket, host, n::BIGINT AS n, s::BIGINT AS s FROM kd_t${i + 1}_materialized ORDER BY ALL`,
        ),
        await plainRows(asAdmin, `SELECT * FROM (${source}) WHERE bucket < 1000 ORDER BY ALL`),
      );
    }
  });
});
