// Newest partitions first for a top-N by time (issue 13): `ORDER BY time DESC LIMIT n` (or ASC) over
// log_entries lists the set's partition files latest event time first (earliest first), so DuckDB's top-N,
// once it holds n rows, skips the row groups of the partitions after them by their time statistics. Every
// answer, for an admin, a reader and a team's key, equals the one of the same statement under a SELECT *
// (which is read in the partitions' own order), ties on time included; an admin's provenance tells the order.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { teamKey, useAudiencesOrrery } from '../support/publish.js';

const base = 1704164645000000000n;
const ms = 1_000_000n;

/**
 * Each partition's records (event time in ms from base, message) and the key sending them, in insert order:
 * the first, team_x's, holds the earliest events and the most rows; the second holds later events than the
 * third (event time, not insert time, orders them); the fifth spans the fourth's latest times, its 131 ms row
 * tying the fourth's; the third is team_x's too.
 */
const partitions: Array<{ key: string; rows: Array<[number, string]> }> = [
  { key: teamKey.key, rows: Array.from({ length: 40 }, (_, i): [number, string] => [i, `team ${i}`]) },
  {
    key: adminKey.key,
    rows: [
      [110, 'timeout x'],
      [111, 'ok'],
      [112, 'timeout y'],
    ],
  },
  {
    key: teamKey.key,
    rows: [
      [120, 'timeout team'],
      [121, 'ok team'],
      [122, 'timeout team 2'],
    ],
  },
  {
    key: adminKey.key,
    rows: [
      [130, 'timeout p'],
      [131, 'zz ok'],
      [132, 'timeout q'],
    ],
  },
  {
    key: adminKey.key,
    rows: [
      [101, 'timeout r'],
      [131, 'aa tie'],
      [105, 'ok'],
    ],
  },
  {
    key: adminKey.key,
    rows: [
      [100, 'timeout s'],
      [102, 'ok'],
      [103, 'ok'],
    ],
  },
];

/** Each statement, and the order an admin's provenance tells its partitions are read in (none: their own). */
const queries: Array<[string, 'desc' | 'asc' | undefined]> = [
  ['SELECT time FROM log_entries ORDER BY time DESC LIMIT 3', 'desc'],
  // The second row is the fourth partition's 'aa tie', tied at 131 ms with the third's 'zz ok'.
  ['SELECT time, msg FROM log_entries ORDER BY time DESC, msg LIMIT 2', 'desc'],
  ["SELECT time, exe, msg FROM log_entries WHERE msg ILIKE '%timeout%' ORDER BY time DESC LIMIT 2", 'desc'],
  ['SELECT e.msg FROM log_entries e ORDER BY e.time DESC NULLS LAST, e.msg LIMIT 1 OFFSET 2', 'desc'],
  ['SELECT * FROM log_entries ORDER BY time DESC, msg LIMIT 2', 'desc'],
  ['SELECT time, msg FROM log_entries ORDER BY time ASC, msg LIMIT 2', 'asc'],
  ["SELECT time, msg FROM log_entries WHERE msg LIKE 'ok%' ORDER BY time LIMIT 2", 'asc'],
  ["SELECT time, msg FROM log_entries WHERE msg = 'none' ORDER BY time DESC LIMIT 1", 'desc'],
  ['SELECT time, msg FROM log_entries ORDER BY time DESC, msg LIMIT 20', 'desc'],
  [
    'SELECT time, msg, row_number() OVER (ORDER BY time, msg) AS r FROM log_entries ORDER BY time DESC, msg LIMIT 2',
    'desc',
  ],
  // Not a top-N by the set's time: no LIMIT, another order, nulls first, a name the select list renames.
  ['SELECT time, msg FROM log_entries ORDER BY time DESC, msg', undefined],
  ['SELECT time, msg FROM log_entries ORDER BY msg DESC LIMIT 2', undefined],
  ['SELECT time, msg FROM log_entries ORDER BY time DESC NULLS FIRST, msg LIMIT 2', undefined],
  ['SELECT msg AS time FROM log_entries ORDER BY time DESC LIMIT 2', undefined],
];

/** The same statement as the planner does not read newest first: its rows handed on by an outer SELECT *. */
const twin = (sql: string) => `SELECT * FROM (${sql})`;

const newestFirst = (table: Table): { table: string; partitions: number; order: string } | undefined => {
  const text = table.schema.metadata.get('orrery.provenance');
  const read =
    text === undefined
      ? undefined
      : (JSON.parse(text) as { newest_first?: Array<{ table: string; partitions: number; order: string }> });
  return read?.newest_first?.[0];
};

describe('a top-N by time scans the latest partitions first, answers unchanged (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-newest-first-');
  const { fixture } = suite;

  before(() =>
    suite.ingestPartitions(
      partitions.map(({ key, rows }) => ({
        key,
        records: rows.map(([at, body]) => ({ time: base + BigInt(at) * ms, severity: 9, body, target: 'app' })),
      })),
    ),
  );

  it('answers every statement as its twin does, for every key', async () => {
    const answers = await suite.everyAnswer(queries.map(([sql]) => sql));
    const twins = await suite.everyAnswer(queries.map(([sql]) => twin(sql)));
    for (const [who] of suite.clients())
      for (const [sql] of queries)
        assert.deepEqual(answers.get(`${who}: ${sql}`), twins.get(`${who}: ${twin(sql)}`), `${who}: ${sql}`);
    // The tie on 31 ms is answered from the partition that does not hold the probed rows.
    assert.deepEqual(answers.get(`admin: ${queries[1][0]}`), [
      { time: 1704164645132, msg: 'timeout q' },
      { time: 1704164645131, msg: 'aa tie' },
    ]);
  });

  it("reads a top-N's partitions latest first (earliest for ASC), by the admin's provenance; twins in their own order", async () => {
    for (const [sql, order] of queries) {
      const read = newestFirst(await fixture.admin.query(sql));
      assert.deepEqual(read, order && { table: 'log_entries', partitions: 6, order }, sql);
      assert.equal(newestFirst(await fixture.admin.query(twin(sql))), undefined, twin(sql));
    }
    // DuckDB's scan of the latest partitions first: the 3 rows found, it skips the others' row groups by their
    // time statistics, the first-inserted partition's 40 rows among them (read first in insert order).
    const plan = await fixture.admin.query(`EXPLAIN ANALYZE ${queries[0][0]}`);
    const scanned = /TABLE_SCAN[\s\S]*?(\d+) rows/.exec(String(plan.toArray().at(-1)?.toJSON().explain_value));
    assert.ok(scanned && Number(scanned[1]) <= 15, scanned?.[0]);
    // A reader's result tells nothing of the partitions.
    assert.equal(newestFirst(await fixture.reader.query(queries[0][0])), undefined);
  });

  it("answers with the rows of each key's audience only", async () => {
    const sql = 'SELECT time, msg FROM log_entries ORDER BY time LIMIT 2';
    assert.deepEqual(await plainRows(fixture.reader, sql), [
      { time: 1704164645100, msg: 'timeout s' },
      { time: 1704164645101, msg: 'timeout r' },
    ]);
    assert.deepEqual(await plainRows(suite.team, sql), [
      { time: 1704164645000, msg: 'team 0' },
      { time: 1704164645001, msg: 'team 1' },
    ]);
  });
});
