// A latest-n top-N bounded by time (issue 13): `ORDER BY time DESC LIMIT n` over log_entries reads only the newest
// partitions whose rows, by their counts, are many times n, and of them the rows after the latest time of those left
// out; when that read gives fewer than n rows (the statement's filters, a reader's audience), the statement runs again
// over every partition. Every answer, for an admin, a reader and a team's key, equals the one of the same statement
// under a SELECT * (never bounded), ties on time included; the bounded read opens one file.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { publishFolder, teamKey, useAudiencesOrrery } from '../support/publish.js';

const base = 1704164645000000000n;
const ms = 1_000_000n;

/**
 * Three partitions of 300 rows, at 0-299 ms (team_x's), 1000-1299 ms (public, messages 'a…') and 2000-2299 ms
 * (team_x's, the newest): a reader's rows are all in the second. Each row's time is a whole ms: the newest
 * partition's last two rows tie on 2299 ms.
 */
const partitions = [
  { key: teamKey.key, at: 0, message: 'old' },
  { key: adminKey.key, at: 1000, message: 'a' },
  { key: teamKey.key, at: 2000, message: 'new' },
].map(({ key, at, message }) => ({
  key,
  records: Array.from({ length: 300 }, (_, i) => ({
    time: base + BigInt(at + Math.min(i, 298)) * ms,
    severity: 9,
    body: `${message} ${i}`,
    target: 'app',
  })),
}));

const queries = [
  // Bounded: the newest partition's rows after 1299 ms hold the answer.
  'SELECT time, msg FROM log_entries ORDER BY time DESC, msg LIMIT 2',
  // Bounded, short of 2 rows (no 'a' message in the newest partition): run again over every partition.
  "SELECT time, msg FROM log_entries WHERE msg LIKE 'a %' ORDER BY time DESC LIMIT 2",
  "SELECT time, msg FROM log_entries WHERE msg = 'none' ORDER BY time DESC LIMIT 2",
  // Grouped by the time: a group after the bound holds all its rows.
  'SELECT time, count(*) AS n FROM log_entries GROUP BY time ORDER BY time DESC LIMIT 3',
  // Not bounded: an OFFSET, a window over the rows read, a grouping set whose rows have no time (its total, last).
  'SELECT time, msg FROM log_entries ORDER BY time DESC, msg LIMIT 2 OFFSET 1',
  'SELECT time, count(*) OVER () AS n FROM log_entries ORDER BY time DESC LIMIT 2',
  // (Bounded, its one group of 2298 ms and its total would make up the 2 rows: the 1298 ms group is the second.)
  "SELECT time, count(*) AS n FROM log_entries WHERE msg LIKE '% 298' OR msg LIKE '% 299' GROUP BY ROLLUP (time) ORDER BY time DESC LIMIT 2",
  // The ORDER BY reads the select list's `time`, the target renamed by COLUMNS' pattern (bounded, its one group
  // counted the newest partition's rows alone: 300 for 900).
  "SELECT COLUMNS('^(t)arget$') AS '\\1ime', count(*) AS n FROM log_entries GROUP BY ALL ORDER BY time DESC LIMIT 1",
];

/** What an admin's result tells of a bounded read: the newest partitions its first run read, and its n. */
const boundedOf = (table: Table): { partitions: number; rows: number } | undefined => {
  const text = table.schema.metadata.get('orrery.provenance');
  const read = text === undefined ? undefined : (JSON.parse(text) as { newest_first?: Array<{ bounded?: never }> });
  return read?.newest_first?.[0]?.bounded;
};

describe('a latest-n top-N reads the newest partitions alone when they hold its answer (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-latest-bound-');
  const { fixture } = suite;

  before(() => suite.ingestPartitions(partitions));

  it('answers every statement as its never-bounded twin does, for every key', async () => {
    const answers = await suite.everyAnswer(queries);
    const twins = await suite.everyAnswer(queries.map((sql) => `SELECT * FROM (${sql})`));
    for (const [who] of suite.clients())
      for (const sql of queries)
        assert.deepEqual(answers.get(`${who}: ${sql}`), twins.get(`${who}: SELECT * FROM (${sql})`), `${who}: ${sql}`);
    assert.deepEqual(answers.get(`admin: ${queries[0]}`), [
      { time: 1704164647298, msg: 'new 298' },
      { time: 1704164647298, msg: 'new 299' },
    ]);
    assert.deepEqual(answers.get(`reader: ${queries[0]}`), [
      { time: 1704164646298, msg: 'a 298' },
      { time: 1704164646298, msg: 'a 299' },
    ]);
    assert.deepEqual(answers.get(`admin: ${queries[3]}`), [
      { time: 1704164647298, n: 2 },
      { time: 1704164647297, n: 1 },
      { time: 1704164647296, n: 1 },
    ]);
    assert.deepEqual(answers.get(`admin: ${queries[6]}`), [
      { time: 1704164647298, n: 2 },
      { time: 1704164646298, n: 2 },
    ]);
    assert.deepEqual(answers.get(`admin: ${queries[5]}`), [
      { time: 1704164647298, n: 900 },
      { time: 1704164647298, n: 900 },
    ]);
  });

  it('opens the newest partition file alone for a bounded read, every file otherwise', async () => {
    const filesRead = async (sql: string): Promise<number> => {
      const plan = await fixture.admin.query(`EXPLAIN ANALYZE ${sql}`);
      const text = String(plan.toArray().at(-1)?.toJSON().explain_value);
      return Number(/Total Files Read: (\d+)/.exec(text)?.[1]);
    };
    assert.equal(await filesRead(queries[0]), 1);
    for (const sql of queries.slice(4)) assert.equal(await filesRead(sql), 3, sql);
  });

  it('tells an admin the partitions a bounded read leaves out (provenance, explain_resources), a reader nothing', async () => {
    const files = (await plainRows(
      fixture.admin,
      "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' ORDER BY max_event_time",
    )) as Array<{ file_path: string }>;
    const leftOut = async (client: typeof fixture.admin, sql: string) =>
      plainRows(
        client,
        `SELECT "table", decision, reason FROM explain_resources('${sql.replaceAll("'", "''")}') WHERE decision = 'bounded' ORDER BY reason`,
      );
    assert.deepEqual(boundedOf(await fixture.admin.query(queries[0])), { partitions: 1, rows: 2 });
    assert.deepEqual(
      await leftOut(fixture.admin, queries[0]),
      files
        .slice(0, 2)
        .map((f) => ({ table: 'log_entries', decision: 'bounded', reason: `partition ${f.file_path}` }))
        .sort((a, b) => a.reason.localeCompare(b.reason)),
    );
    // Not bounded: an OFFSET; a reader is told no partition.
    assert.equal(boundedOf(await fixture.admin.query(queries[4])), undefined);
    assert.deepEqual(await leftOut(fixture.admin, queries[4]), []);
    assert.deepEqual(await leftOut(fixture.reader, queries[0]), []);
  });

  it('answers as before with a stored column, its bloom filter and a projection sorted by it, bounded as before', async () => {
    const word = "split_part(msg, ' ', 1)";
    const stored = [
      `SELECT time, msg FROM log_entries WHERE ${word} = 'new' ORDER BY time DESC, msg LIMIT 2`,
      // Short of 2 rows in the newest partition: run again over every partition, the stored column read in both.
      `SELECT time, msg FROM log_entries WHERE ${word} = 'a' ORDER BY time DESC, msg LIMIT 2`,
      `SELECT time, ${word} AS word FROM log_entries ORDER BY time DESC, msg LIMIT 3`,
    ];
    const raw = await suite.everyAnswer(stored);
    const unpublished = await suite.everyAnswer(queries);
    mkdirSync(join(suite.dir, 'resources'), { recursive: true });
    writeFileSync(
      join(suite.dir, 'resources', 'logs.resources.json'),
      JSON.stringify({
        resources: {
          word: { column: { table: 'log_entries', expression: word } },
          word_bloom: { index: { table: 'log_entries', column: 'word', kind: 'bloom_filter' } },
          by_word: { projection: { table: 'log_entries', order_by: ['word', 'time'] } },
        },
      }),
    );
    const published = await publishFolder(fixture.orrery.address, suite.dir);
    assert.equal(published.status, 0, published.err.join('\n'));
    assert.deepEqual(await suite.everyAnswer(stored), raw);
    assert.deepEqual(await suite.everyAnswer(queries), unpublished);
    // The first two skip the older partitions by the bloom filter (one left: nothing to bound); the third is bounded.
    const read = await fixture.admin.query(stored[2]);
    assert.deepEqual(boundedOf(read), { partitions: 1, rows: 3 });
    const provenance = JSON.parse(read.schema.metadata.get('orrery.provenance')!) as {
      stored_columns?: Array<{ use: string }>;
    };
    assert.equal(provenance.stored_columns?.[0]?.use, 'substituted');
  });
});
