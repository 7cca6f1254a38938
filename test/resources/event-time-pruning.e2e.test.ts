// Partitions skipped by a WHERE on the event time (issue 13), with no resource declared: a statement bounding
// log_entries' time (>=, >, <, <=, BETWEEN, IN, literals, TIMESTAMP and TIMESTAMPTZ constants, now(),
// current_timestamp or current_date minus an interval, under AND, in a subquery handing rows on, a side of a join)
// reads none of the partitions whose event-time bounds (kept in Postgres) fall outside, before any file is opened.
// Rows exactly on a bound, partitions straddling it and a partition materialized after later ones (old events) are
// kept as the WHERE keeps their rows;
// ORs, NOT, casts of the column, NULL bounds and a WHERE over grouped rows decide as the statement does. Every
// answer, for an admin, a reader and team_x, equals the same WHERE `OR false` (which nothing prunes); an admin's
// provenance and explain_resources tell the partitions skipped. A projection is read only of the partitions kept,
// and a top-N by time reads the partitions newest first rather than a projection sorted by another column. A
// statement bounding the time by the clock, repeated as the clock moves, skips a partition leaving its window and
// reads one entering it: nothing decided at one statement's clock is kept for the next. A span's begin is bounded
// from above and its end from below by its partition's bounds (the earliest begin, the latest end), and nothing else.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { pastInsertTimes, postOtlp, tracesRequest } from '../support/otlp.js';
import { adminKey } from '../support/orrery-process.js';
import { projectionsOf } from '../support/projections.js';
import { materializeLogs, publishFolder, skippedBy, teamKey, useAudiencesOrrery } from '../support/publish.js';

/** 2024-01-02 03:04:05 UTC, the partitions' event times are offsets from. */
const base = 1704164645000000000n;
const ms = 1_000_000n;

/**
 * Each partition's rows (event time in ns from base, severity) and the key sending them, in insert order. Their
 * bounds, in ms: [0, 9], [100, 200) (its latest row 1 ns before 200, which Postgres keeps rounded up to 200),
 * [200, 250] (its earliest exactly on 200), [180, 220] (team_x's, straddling 200), [300, 301], and [5, 6], the
 * last one inserted after the others with the oldest events but one (a late partition).
 */
const partitions: Array<{ key: string; rows: Array<[bigint, number]> }> = [
  { key: teamKey.key, rows: Array.from({ length: 10 }, (_, i): [bigint, number] => [BigInt(i) * ms, 9 + (i % 2) * 8]) },
  {
    key: adminKey.key,
    rows: [
      [100n * ms, 9],
      [150n * ms, 17],
      [200n * ms - 1n, 9],
    ],
  },
  {
    key: adminKey.key,
    rows: [
      [200n * ms, 17],
      [250n * ms, 9],
    ],
  },
  {
    key: teamKey.key,
    rows: [
      [180n * ms, 9],
      [200n * ms, 17],
      [220n * ms, 9],
    ],
  },
  {
    key: adminKey.key,
    rows: [
      [300n * ms, 17],
      [301n * ms, 9],
    ],
  },
  {
    key: adminKey.key,
    rows: [
      [5n * ms, 17],
      [6n * ms, 9],
    ],
  },
];

/** base plus `at` ms, as DuckDB's text of a timestamp. */
const at = (offset: number) => `'2024-01-02 03:04:05.${String(offset).padStart(3, '0')}'`;

/** The rows after the bound: of the partition straddling it, of the one starting on it and of a later one. */
const afterBound = `SELECT time, msg FROM log_entries WHERE time > ${at(200)} ORDER BY time, msg`;
/** The first partition's rows and the late one's. */
const early = `SELECT time, msg FROM log_entries WHERE time IS NOT NULL AND time < ${at(50)} ORDER BY time, msg`;

/** Each statement (its WHERE last, then an ORDER BY), and how many of the 6 partitions an admin's skips. */
const queries: Array<[string, number]> = [
  [`SELECT time, msg FROM log_entries WHERE time >= ${at(200)} ORDER BY time, msg`, 2],
  [afterBound, 3],
  [`SELECT time, msg FROM log_entries WHERE time < ${at(200)} ORDER BY time, msg`, 2],
  [`SELECT time, msg FROM log_entries WHERE time <= ${at(200)} ORDER BY time, msg`, 1],
  [`SELECT time, msg FROM log_entries WHERE time BETWEEN ${at(100)} AND ${at(200)} ORDER BY time, msg`, 3],
  [`SELECT time, msg FROM log_entries WHERE ${at(200)} <= time AND level = 4 ORDER BY time, msg`, 2],
  [`SELECT time, msg FROM log_entries WHERE time IN (${at(0)}, ${at(300)}) ORDER BY time, msg`, 4],
  [`SELECT count(*) AS n FROM log_entries WHERE time >= TIMESTAMP ${at(300)}`, 5],
  [`SELECT count(*) AS n FROM log_entries WHERE time >= ${at(300)}::TIMESTAMP_NS`, 5],
  [`SELECT count(*) AS n FROM log_entries WHERE time > TIMESTAMP ${at(100)} + INTERVAL 100 MILLISECOND`, 3],
  // 05:04:05.200 at +02 is 03:04:05.200 UTC.
  ["SELECT time, msg FROM log_entries WHERE time >= TIMESTAMPTZ '2024-01-02 05:04:05.2+02' ORDER BY time, msg", 2],
  ["SELECT count(*) AS n FROM log_entries WHERE time >= DATE '2024-01-03'", 6],
  // The late partition's old events, and a window no partition meets.
  [early, 4],
  [`SELECT count(*) AS n FROM log_entries WHERE time BETWEEN ${at(260)} AND ${at(290)}`, 6],
  // The clock: every event is of 2024.
  ["SELECT count(*) AS n FROM log_entries WHERE time >= now() - INTERVAL '1 day'", 6],
  ['SELECT count(*) AS n FROM log_entries WHERE level = 4 AND time > now() - INTERVAL 1 DAY', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time >= (now() - INTERVAL 5 MINUTE)::TIMESTAMP_NS', 6],
  ["SELECT count(*) AS n FROM log_entries WHERE time < now() - INTERVAL '10 years'", 6],
  ["SELECT count(*) AS n FROM log_entries WHERE time > INTERVAL '1 day 2 hours' + now() - INTERVAL 1 MONTH", 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time >= now()::DATE - INTERVAL 1 DAY - INTERVAL 1 HOUR', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time BETWEEN (now() - INTERVAL 1 DAY)::TIMESTAMP AND now()', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time < now()::DATE', 0],
  // current_timestamp (Orrery's get_current_timestamp(), as now()) and current_date (its UTC date) read the same clock.
  ['SELECT count(*) AS n FROM log_entries WHERE time >= current_timestamp - INTERVAL 1 DAY', 6],
  ["SELECT count(*) AS n FROM log_entries WHERE level = 4 AND time > CURRENT_TIMESTAMP - INTERVAL '1 hour'", 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time > current_timestamp', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time >= now()::TIMESTAMP - INTERVAL 1 DAY', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time BETWEEN current_timestamp - INTERVAL 1 DAY AND now()', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time >= current_date - INTERVAL 1 DAY', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time >= today()', 6],
  ['SELECT count(*) AS n FROM log_entries WHERE time < current_date', 0],
  // A name the statement binds otherwise is not the clock: here a select alias, which DuckDB's WHERE reads.
  [
    "SELECT count(*) AS n, TIMESTAMP '2000-01-01' AS current_timestamp FROM log_entries WHERE time >= current_timestamp",
    0,
  ],
  // And a lambda's parameter, in its body.
  [
    'SELECT count(*) AS n, list_sum(list_transform([1, 2], lambda current_date: current_date + 1)) AS v FROM log_entries WHERE time >= now() - INTERVAL 1 DAY',
    6,
  ],
  // NULL bounds keep no row.
  ['SELECT count(*) AS n FROM log_entries WHERE time > NULL', 6],
  // Levels that pass its rows on, or join them.
  [`SELECT count(*) AS n FROM (SELECT * FROM log_entries) WHERE time >= ${at(300)}`, 5],
  [`WITH e AS (SELECT * FROM log_entries) SELECT count(*) AS n FROM e WHERE time > ${at(200)}`, 3],
  [
    `SELECT l.msg FROM log_entries l JOIN processes p ON l.process_id = p.process_id WHERE l.time > ${at(200)} ORDER BY l.msg`,
    3,
  ],
  // Not decided by the bounds: an OR with another column, NOT, casts and sums of the column, grouped rows.
  [`SELECT time, msg FROM log_entries WHERE time >= ${at(300)} OR level = 2 ORDER BY time, msg`, 0],
  [`SELECT time, msg FROM log_entries WHERE NOT (time < ${at(300)} AND level = 4) ORDER BY time, msg`, 0],
  [`SELECT count(*) AS n FROM log_entries WHERE time::DATE > '2024-01-02'`, 0],
  [`SELECT count(*) AS n FROM log_entries WHERE CAST(time AS TIMESTAMP) >= ${at(200)}`, 0],
  [`SELECT count(*) AS n FROM log_entries WHERE time + INTERVAL 1 MILLISECOND > ${at(300)}`, 0],
  [
    `SELECT * FROM (SELECT exe, max(time) AS time FROM log_entries GROUP BY exe) WHERE time >= ${at(300)} ORDER BY exe`,
    0,
  ],
  // An OR of bounds is decided: a partition is skipped when each alternative skips it. DuckDB reads NOT (a < b) as
  // a >= b (the same of NULL too).
  [`SELECT time, msg FROM log_entries WHERE NOT (time < ${at(300)}) ORDER BY time, msg`, 5],
  [`SELECT count(*) AS n FROM log_entries WHERE time < ${at(50)} OR time > ${at(260)}`, 3],
];

/** The same statement with `OR false` after its WHERE, which no statistics decide. */
const twin = (sql: string) => sql.replace(/( ORDER BY .*)?$/, ' OR false$1');

describe('a WHERE on the event time skips partitions by their bounds, with no resource (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-event-time-');
  const { fixture, dir } = suite;

  before(() =>
    suite.ingestPartitions(
      partitions.map(({ key, rows }, i) => ({
        key,
        records: rows.map(([offset, severity]) => ({
          time: base + offset,
          severity,
          body: `p${i} ${offset}`,
          target: 'app',
        })),
      })),
    ),
  );

  it('answers every statement as its OR false twin for every key, skipping the partitions outside', async () => {
    for (const [sql, skipped] of queries) {
      for (const [who, client] of suite.clients())
        assert.deepEqual(await plainRows(client, sql), await plainRows(client, twin(sql)), `${who}: ${sql}`);
      assert.equal(skippedBy(await fixture.admin.query(sql)), skipped, sql);
      assert.equal(skippedBy(await fixture.admin.query(twin(sql))), 0, twin(sql));
    }
    // The rows on the bound, of the partition straddling it and of the one starting on it.
    assert.deepEqual(await plainRows(fixture.admin, queries[0][0]), [
      { time: 1704164645200, msg: 'p2 200000000' },
      { time: 1704164645200, msg: 'p3 200000000' },
      { time: 1704164645220, msg: 'p3 220000000' },
      { time: 1704164645250, msg: 'p2 250000000' },
      { time: 1704164645300, msg: 'p4 300000000' },
      { time: 1704164645301, msg: 'p4 301000000' },
    ]);
    // Each key reads its audiences' rows of the partitions kept: team_x those of the one straddling the bound (its
    // own) and the public ones, the reader the public ones alone.
    const later = [
      { time: 1704164645250, msg: 'p2 250000000' },
      { time: 1704164645300, msg: 'p4 300000000' },
      { time: 1704164645301, msg: 'p4 301000000' },
    ];
    assert.deepEqual(await plainRows(suite.team, afterBound), [{ time: 1704164645220, msg: 'p3 220000000' }, ...later]);
    assert.deepEqual(await plainRows(fixture.reader, afterBound), later);
    // team_x reads the first partition's rows (its own) and the late one's (public), interleaved by time; the reader
    // the late one's alone.
    const late = [
      { time: 1704164645005, msg: 'p5 5000000' },
      { time: 1704164645006, msg: 'p5 6000000' },
    ];
    const team = (await plainRows(suite.team, early)) as Array<{ msg: string }>;
    assert.deepEqual(
      team.map((r) => r.msg),
      [
        'p0 0',
        ...['1', '2', '3', '4', '5'].map((i) => `p0 ${i}000000`),
        'p5 5000000',
        'p0 6000000',
        'p5 6000000',
        ...['7', '8', '9'].map((i) => `p0 ${i}000000`),
      ],
    );
    assert.deepEqual(await plainRows(fixture.reader, early), late);
  });

  it("names a select list's reads of the clock as DuckDB does when the statement runs with its now() fixed", async () => {
    const sql =
      'SELECT current_date, now(), CURRENT_TIMESTAMP, today(), count(*) AS n FROM log_entries WHERE time > now() - INTERVAL 1 DAY';
    const names = ['current_date', 'now()', 'CURRENT_TIMESTAMP', 'today()', 'n'];
    const fixed = await fixture.admin.query(sql);
    assert.equal(skippedBy(fixed), 6);
    assert.deepEqual(
      fixed.schema.fields.map((f) => f.name),
      names,
    );
    const unpruned = await fixture.admin.query(twin(sql));
    assert.deepEqual(
      unpruned.schema.fields.map((f) => f.name),
      names,
    );
  });

  it('explain_resources tells an admin each partition the event time skipped; a reader none', async () => {
    const explain = (client: typeof fixture.admin, sql: string) =>
      plainRows(client, `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`);
    const pruned = await explain(fixture.admin, afterBound);
    assert.equal(pruned.length, 3);
    for (const row of pruned) {
      assert.deepEqual(
        { ...row, reason: undefined },
        {
          level: null,
          table: 'log_entries',
          rollup: '(event time)',
          grain: null,
          decision: 'pruned',
          reason: undefined,
        },
      );
      assert.match(String(row.reason), /^partition /);
    }
    for (const [, client] of suite.clients().slice(1)) assert.deepEqual(await explain(client, afterBound), []);
  });

  it('a projection is read of the partitions kept; a top-N by time reads the partitions newest first, not its copies', async () => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(
      join(dir, 'resources', 'logs.resources.json'),
      JSON.stringify({ resources: { by_level: { projection: { table: 'log_entries', order_by: ['level'] } } } }),
    );
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    const windowed = `SELECT time, msg FROM log_entries WHERE level = 4 AND time > ${at(200)} ORDER BY time, msg`;
    const latest = 'SELECT time, msg FROM log_entries WHERE level = 4 ORDER BY time DESC LIMIT 2';
    for (const sql of [windowed, latest])
      for (const [who, client] of suite.clients())
        assert.deepEqual(await plainRows(client, sql), await plainRows(client, twin(sql)), `${who}: ${sql}`);
    assert.equal(projectionsOf(await fixture.admin.query(latest)), undefined);
    const read = await fixture.admin.query(windowed);
    assert.deepEqual(projectionsOf(read), [{ table: 'log_entries', projection: 'by_level' }]);
    assert.equal(skippedBy(read), 3);
    assert.deepEqual(await plainRows(fixture.admin, latest), [
      { time: 1704164645301, msg: 'p4 301000000' },
      { time: 1704164645250, msg: 'p2 250000000' },
    ]);
  });
});

/** How far the moving clock's partitions are from the test's start: the window's length, in seconds. */
const windowSeconds = 30;

/**
 * Statements of the clock (decided in JS by the bounds' nanoseconds, or by DuckDB when a bound is of the clock and a
 * literal: see PartitionPruning.byStatistics), each with how many of the partitions an hour before the start, at the
 * start and `windowSeconds` after it an admin's read skips, before and after the clock passes the latest one.
 */
const clockQueries: Array<[string, number, number]> = [
  // The latest partition enters the window.
  ['SELECT count(*) AS n FROM log_entries WHERE time <= now()', 1, 0],
  ["SELECT count(*) AS n FROM log_entries WHERE time <= now() AND time > TIMESTAMP '2000-01-01'", 1, 0],
  // The partition at the start leaves the window.
  [`SELECT count(*) AS n FROM log_entries WHERE time > now() - INTERVAL ${windowSeconds} SECOND`, 1, 2],
  [`SELECT count(*) AS n FROM log_entries WHERE time > current_timestamp - INTERVAL ${windowSeconds} SECOND`, 1, 2],
  // One leaves and one enters.
  [
    `SELECT time, msg FROM log_entries WHERE time BETWEEN (now() - INTERVAL ${windowSeconds} SECOND)::TIMESTAMP_NS AND now() ORDER BY time, msg`,
    2,
    2,
  ],
  // A bound of the clock and a literal: DuckDB's comparison, never kept.
  [
    `SELECT count(*) AS n FROM log_entries WHERE time BETWEEN now() - INTERVAL ${windowSeconds} SECOND AND TIMESTAMP '2100-01-01'`,
    1,
    2,
  ],
];

describe('a bound of the clock skips the partitions outside at each statement as the clock moves (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-event-clock-');
  const { fixture } = suite;
  let start = 0;

  before(async () => {
    start = Date.now();
    const offsets = [-3_600_000, 0, windowSeconds * 1000];
    await suite.ingestPartitions(
      offsets.map((offset, i) => ({
        key: adminKey.key,
        records: [{ time: BigInt(start + offset) * ms, severity: 9, body: `c${i}`, target: 'app' }],
      })),
    );
  });

  it('decides each statement by its own clock: a partition leaving the window is skipped, one entering it read', async () => {
    await suite.answersAsOrFalse(clockQueries.map(([sql, skipped]) => [sql, skipped]));
    // The expectations above hold only before the latest partition's events.
    assert.ok(Date.now() < start + windowSeconds * 1000, 'the statements ran before the latest events');
    await new Promise((resolve) => setTimeout(resolve, start + (windowSeconds + 2) * 1000 - Date.now()));
    await suite.answersAsOrFalse(clockQueries.map(([sql, , skipped]) => [sql, skipped]));
    assert.deepEqual(await plainRows(fixture.admin, clockQueries[0][0]), [{ n: 3 }]);
  });
});

/**
 * Spans' partitions, each one span's [begin, end) in ms from base: [0, 10], [100, 200] and [300, 5000]. A partition
 * keeps the earliest begin and the latest end of its spans: a begin is bounded below by it, an end above, and neither
 * on its other side (a span's end may precede its begin).
 */
const spans: Array<[number, number]> = [
  [0, 10],
  [100, 200],
  [300, 5000],
];

/** Each statement over spans, and how many of its 3 partitions an admin's skips. */
const spanQueries: Array<[string, number]> = [
  [`SELECT name FROM spans WHERE begin < ${at(50)} ORDER BY name`, 2],
  [`SELECT name FROM spans WHERE "end" > ${at(250)} ORDER BY name`, 2],
  // The spans overlapping a window, as dashboards ask.
  [`SELECT name FROM spans WHERE begin <= ${at(250)} AND "end" >= ${at(150)} ORDER BY name`, 2],
  [`SELECT name FROM spans WHERE "end" BETWEEN ${at(150)} AND ${at(250)} ORDER BY name`, 1],
  // Not bounded on these sides.
  [`SELECT name FROM spans WHERE begin > ${at(250)} ORDER BY name`, 0],
  [`SELECT name FROM spans WHERE "end" < ${at(50)} ORDER BY name`, 0],
  ['SELECT count(*) AS n FROM spans WHERE "end" > now() - INTERVAL 1 DAY', 3],
];

describe("a WHERE on a span's begin or end skips partitions by the side its bounds hold (issue 13)", () => {
  const suite = useAudiencesOrrery('orrery-event-spans-');
  const { fixture } = suite;

  before(async () => {
    const start = Math.floor(Date.now() / 1000);
    for (const [i, [begin, end]] of spans.entries()) {
      const span = {
        id: `000000000000000${i + 1}`,
        name: `s${i}`,
        begin: base + BigInt(begin) * ms,
        end: base + BigInt(end) * ms,
      };
      const sent = await postOtlp(fixture.orrery.httpPort, 'traces', adminKey.key, tracesRequest(`svc${i}`, [span]));
      assert.equal(sent.status, 200, sent.text);
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
    const end = pastInsertTimes();
    await materializeLogs(fixture.admin, start - 2, end);
    const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
    await fixture.admin.query(`SELECT * FROM materialize_partitions('streams', '${iso(start - 2)}', '${iso(end)}', 1)`);
    await fixture.admin.query(`SELECT * FROM materialize_partitions('spans', '${iso(start - 2)}', '${iso(end)}', 1)`);
    const listed = await plainRows(
      fixture.admin,
      "SELECT count(*) AS n FROM list_partitions() WHERE view_set_name = 'spans' AND file_path IS NOT NULL",
    );
    assert.deepEqual(listed, [{ n: spans.length }]);
  });

  it('answers every statement as its OR false twin for every key, skipping the partitions outside', async () => {
    await suite.answersAsOrFalse(spanQueries);
    assert.deepEqual(await plainRows(fixture.admin, spanQueries[2][0]), [{ name: 's1' }]);
  });
});
