// The text index (issue 13 item 6): per partition of log_entries, the trigrams of msg's lowercased tokens,
// backfilled into the existing partitions at publish and written for each partition the daemon commits.
// A substring search (ILIKE, LIKE, contains, starts_with) does not read a partition lacking a trigram of
// the searched word's runs of letters and digits; every answer is the one the statement gave before the
// index existed, for an admin and two audiences' keys, including searches for part of a token
// ('%time%' matches 'timeout': a whole-token index would wrongly skip it).
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { tableFromArrays } from 'apache-arrow';
import { plain, plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { adminKey } from '../support/orrery-process.js';
import { makeStatisticsOld } from '../support/old-text-statistics.js';
import { pastInsertTimes } from '../support/otlp.js';
import { publishFolder, skippedBy, teamKey, useAudiencesOrrery } from '../support/publish.js';

/** Each partition's messages: the second is sent with a key of audience team_x. */
const messages = [
  ['connection timeout after 30s', 'retrying request'],
  ['request ok', 'cache hit for key abc'],
  ['TimeOutError in handler', 'Ünïcode messäge'],
];

/** Each query, and how many of the 3 partitions an admin's skips by the text index. */
const queries: Array<[string, number]> = [
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%timeout%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%time%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE msg LIKE '%Timeout%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%timeout' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE contains(msg, 'meou') ORDER BY msg", 1],
  ["SELECT msg FROM log_entries e WHERE e.msg ILIKE '%out after%' ORDER BY msg", 2],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%time_ut%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%request%' AND level = 4 ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE starts_with(msg, 'cache') ORDER BY msg", 2],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%MESSÄGE%' ORDER BY msg", 2],
  ["SELECT count(*) AS n FROM log_entries WHERE msg ILIKE '%zzz%'", 3],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%ok%' ORDER BY msg", 0],
  ["SELECT msg FROM log_entries WHERE msg NOT ILIKE '%timeout%' ORDER BY msg", 0],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%timeout%' OR msg ILIKE '%cache%' ORDER BY msg", 0],
  ["SELECT msg FROM log_entries WHERE contains(msg, 'cache') OR msg ILIKE '%handler%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE lower(msg) LIKE '%timeout%' ORDER BY msg", 0],
];

describe('text index: substring searches skip partitions lacking the word, answers unchanged (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-text-index-');
  const { fixture, dir } = suite;
  const answers = new Map<string, unknown>();
  let published: string[] = [];

  const everyAnswer = () => suite.everyAnswer(queries.map(([sql]) => sql));
  const ingest = (i: number, key: string, bodies: readonly string[]) =>
    suite.ingest(
      i,
      key,
      bodies.map((body) => ({ severity: 9, body })),
    );
  const { materialize } = suite;

  before(async () => {
    const start = Math.floor(Date.now() / 1000);
    for (const [i, bodies] of messages.entries()) await ingest(i, i === 1 ? teamKey.key : adminKey.key, bodies);
    await materialize(start - 2, pastInsertTimes());
    for (const [sql, rows] of await everyAnswer()) answers.set(sql, rows);
    assert.deepEqual(answers.get(`admin: ${queries[1][0]}`), [
      { msg: 'TimeOutError in handler' },
      { msg: 'connection timeout after 30s' },
    ]);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = { msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } } };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    published = run.out;
  });

  it('is backfilled into every partition at publish, and every search answers as before it, for every key', async () => {
    assert.ok(
      published.some((l) => l.startsWith('backfill text index msg_text on log_entries: 3 of 3 partition(s)')),
      published.join('\n'),
    );
    const now = await everyAnswer();
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
    for (const [sql, skipped] of queries) assert.equal(skippedBy(await fixture.admin.query(sql)), skipped, sql);
    // A prepared statement's bound text searches as the same constant does.
    const search = 'SELECT msg FROM log_entries WHERE msg ILIKE ? ORDER BY msg';
    const bound = await fixture.admin.queryPrepared(search, tableFromArrays({ p: ['%timeout%'] }));
    assert.deepEqual(
      bound.toArray().map((row) => plain(row.toJSON() as Record<string, unknown>)),
      answers.get(`admin: ${queries[0][0]}`),
    );
    assert.equal(skippedBy(bound), 1);
  });

  it('indexes each partition the daemon commits after the install', async () => {
    const start = Math.floor(Date.now() / 1000);
    await ingest(3, adminKey.key, ['upstream timeout']);
    await materialize(start - 1, pastInsertTimes());
    const sql = "SELECT msg FROM log_entries WHERE msg ILIKE '%ups%' ORDER BY msg";
    const table = await fixture.admin.query(sql);
    assert.deepEqual(await plainRows(fixture.admin, sql), [{ msg: 'upstream timeout' }]);
    assert.equal(skippedBy(table), 3);
  });

  it('a publish indexes again the files indexed before words of any letters were, newest first', async () => {
    // 'ünï' has no trigram of [0-9a-z]: statistics of ASCII trigrams alone cannot skip a partition for it.
    const search = "SELECT msg FROM log_entries WHERE msg ILIKE '%ÜNÏ%' ORDER BY msg";
    const raw = "SELECT msg FROM log_entries WHERE lower(msg) LIKE '%ünï%' ORDER BY msg";
    const db = fixture.orrery.metadata;
    const partitions = 4;
    assert.equal(skippedBy(await fixture.admin.query(search)), partitions - 1);
    // Every file's statistics made as before 6060fa4 (the bitmap's ASCII part is the same); the server reads them
    // again as it would after a restart (it keeps what it read of each file by generation).
    await makeStatisticsOld(fixture, 'msg_text');
    // Within the installed lists' two seconds.
    let skipped = -1;
    for (let attempt = 0; attempt < 100 && skipped !== 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      skipped = skippedBy(await fixture.admin.query(search));
    }
    assert.equal(skipped, 0);
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.ok(
      run.out.includes(
        `text index msg_text on log_entries: ${partitions} of ${partitions} partition(s) indexed before words of any letters were: their bitmaps, postings and copies are made again, newest first`,
      ),
      run.out.join('\n'),
    );
    assert.ok(
      run.out.some((l) => l.startsWith(`  msg_text: ${partitions}/${partitions} partition(s) indexed again, reached `)),
    );
    const { rows } = await db.query<{ backfilled: boolean }>(
      `SELECT backfilled_end IS NOT NULL AS backfilled FROM resource_ledger WHERE entry_key = 'msg_text' AND state = 'ready'`,
    );
    assert.deepEqual(rows, [{ backfilled: true }]);
    assert.equal(skippedBy(await fixture.admin.query(search)), partitions - 1);
    const [indexed, twin] = [await suite.everyAnswer([search]), await suite.everyAnswer([raw])];
    for (const [who] of suite.clients())
      assert.deepEqual(indexed.get(`${who}: ${search}`), twin.get(`${who}: ${raw}`), who);
    assert.deepEqual(indexed.get(`admin: ${search}`), [{ msg: 'Ünïcode messäge' }]);
    // Nothing left to do: the next publish indexes no file again.
    const again = await publishFolder(fixture.orrery.address, dir);
    assert.equal(again.status, 0, again.err.join('\n'));
    assert.ok(!again.out.some((l) => l.includes('indexed again')), again.out.join('\n'));
  });
});
