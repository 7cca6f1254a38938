// A text index's postings (issue 13): in a partition holding the searched word, a search reads only the rows
// whose tokens hold it (the posted tokens' rows), not the partition's other rows; the search is still
// evaluated on those. One partition mixes the admin's rows (audience public) with team_x's; every answer,
// for an admin, a reader and team_x, is the one the statement gave before the index existed, including a word
// only team_x's rows hold, searches for part of a token, ORs, and words the postings cannot tell.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { metricValue } from '../support/metric-value.js';
import { adminKey } from '../support/orrery-process.js';
import { logsRequest, pastInsertTimes, postOtlp } from '../support/otlp.js';
import { makeStatisticsOld } from '../support/old-text-statistics.js';
import { materializeLogs, publishFolder, skippedBy, teamKey, useAudiencesOrrery } from '../support/publish.js';

/**
 * The mixed partition: 200 admin rows (every 40th a timeout, spelled in several ways, within a longer token
 * for two; one with a word of other letters than [0-9a-z]) and 20 of team_x. Its tokens held by at most 1/8 of
 * its rows are posted, 'request' is not.
 */
const adminRows = Array.from({ length: 200 }, (_, i) =>
  i % 40 === 7
    ? `request ${['TimeOut', 'timeout', 'timeouts', 'xtimeoutx', 'TIMEOUT'][(i - 7) / 40]} after 3s`
    : i === 100
      ? 'request Ünïcödé ok'
      : 'request ok',
);
const teamRows = Array.from({ length: 20 }, (_, i) =>
  i === 5 ? 'team call secretword' : i % 4 === 0 ? `team call ${i} timeout` : `team call ${i} refused`,
);

/** Each query, and the rows of the mixed partition's 220 an admin's statement reads (undefined: every row). */
const queries: Array<[string, number | undefined]> = [
  ["SELECT count(*) AS n FROM log_entries WHERE msg ILIKE '%timeout%'", 10],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%time%' ORDER BY msg", 10],
  ["SELECT msg FROM log_entries WHERE contains(msg, 'timeout') ORDER BY msg", 10],
  ["SELECT time, msg FROM log_entries WHERE msg ILIKE '%timeout%' ORDER BY time DESC LIMIT 3", 10],
  ["SELECT exe, count(*) AS n FROM log_entries WHERE msg ILIKE '%timeout after%' GROUP BY exe ORDER BY exe", 5],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%secretword%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%ÜNÏCÖDÉ%' ORDER BY msg", 1],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%timeout%' OR msg ILIKE '%refused%' ORDER BY msg", 24],
  ["SELECT count(*) AS n FROM (SELECT * FROM log_entries) WHERE msg ILIKE '%timeout%'", 10],
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%timeout%' AND level = 9 ORDER BY msg", 10],
  // In the partition's order, as without the index (the copy's rows are in its tokens' order).
  ["SELECT msg FROM log_entries WHERE msg ILIKE '%time%'", 10],
  // What the postings cannot tell, or a row may pass without the word: every row is read.
  ["SELECT count(*) AS n FROM log_entries WHERE msg ILIKE '%request%'", undefined],
  ["SELECT count(*) AS n FROM log_entries WHERE msg ILIKE '%timeout%' OR level = 9", undefined],
  ["SELECT count(*) AS n FROM log_entries WHERE msg NOT ILIKE '%timeout%'", undefined],
  ["SELECT count(*) AS n FROM log_entries WHERE msg ILIKE '%ok%'", undefined],
];

/** The rows read of partitions read in part, from an admin's result provenance. */
const rowsRead = (table: Table): Record<string, unknown> | undefined => {
  const text = table.schema.metadata.get('orrery.provenance');
  const read = text === undefined ? undefined : (JSON.parse(text) as { rows_read?: Array<Record<string, unknown>> });
  return read?.rows_read?.[0];
};

describe('text index postings: a search reads only the rows holding its word, answers unchanged (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-text-rows-');
  const { fixture, dir } = suite;
  let before0: Map<string, unknown>;

  before(async () => {
    const start = Math.floor(Date.now() / 1000);
    const time = 1704164645000000000n;
    for (const [key, rows] of [
      [adminKey.key, adminRows],
      [teamKey.key, teamRows],
    ] as const) {
      const records = rows.map((body, j) => ({ time: time + BigInt(j), severity: 9, body, target: 'app' }));
      const sent = await postOtlp(
        fixture.orrery.httpPort,
        'logs',
        key,
        logsRequest({ 'service.name': `svc-${key.slice(0, 4)}` }, records),
      );
      assert.equal(sent.status, 200, sent.text);
    }
    // Both keys' records in one partition, whatever second each post took: one over their range.
    const mixed = pastInsertTimes();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // A second partition without the word: the trigram bitmap skips it whole.
    await suite.ingest(1, adminKey.key, [{ severity: 9, body: 'cache hit' }]);
    await materializeLogs(fixture.admin, start - 2, mixed, mixed - start + 2);
    await suite.materialize(mixed, pastInsertTimes());
    before0 = await suite.everyAnswer(queries.map(([sql]) => sql));
    assert.deepEqual(before0.get(`admin: ${queries[0][0]}`), [{ n: 10 }]);
    assert.deepEqual(before0.get(`reader: ${queries[5][0]}`), []);
    assert.deepEqual(before0.get(`team_x: ${queries[5][0]}`), [{ msg: 'team call secretword' }]);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } },
      // The mixed partition's services differ by audience: a reader's statement decides by public's alone.
      exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } },
    };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
  });

  it('answers every search as before the index, for every key', async () => {
    const now = await suite.everyAnswer(queries.map(([sql]) => sql));
    for (const [sql, rows] of before0) assert.deepEqual(now.get(sql), rows, sql);
  });

  it("reads only the rows of the word's tokens, by the admin's provenance and DuckDB's plan; a reader is told nothing", async () => {
    for (const [sql, read] of queries) {
      const table = await fixture.admin.query(sql);
      const expected = { table: 'log_entries', partitions: 1, rows: 220, read, index: 'msg_text', copies: 1 };
      assert.deepEqual(rowsRead(table), read === undefined ? undefined : expected, sql);
      if (read !== undefined) assert.equal(skippedBy(table), 1, sql);
    }
    // The word's rows are read from the index's copy of the partition's posted rows, where each posted token's
    // rows are together: the 10 rows are 10 positions in a row, evaluated in the scan with the search.
    const plan = await fixture.admin.query(`EXPLAIN ANALYZE ${queries[0][0]}`);
    const text = String(plan.toArray().at(-1)?.toJSON().explain_value).replace(/[│\s]/g, '');
    const scan = /__orr_position>=(\d+)AND__orr_position<=(\d+)\(msg~~\*'%timeout%'\).*text-index\//.exec(text);
    assert.ok(scan, text);
    assert.equal(Number(scan[2]) - Number(scan[1]) + 1, 10, text);
    // The mixed partition has a copy of each audience's posted rows besides the file's; the other partition,
    // of public's rows alone, has its one copy.
    const { rows: copies } = await fixture.orrery.metadata.query<{ audience: string; own: boolean }>(
      `SELECT a.audience, a.copy_path <> s.copy_path AS own FROM resource_audience_stats a
         JOIN resource_partition_stats s USING (index_hash, file_path) JOIN resource_indexes i USING (index_hash)
        WHERE i.kind = 'text' ORDER BY own, a.audience`,
    );
    assert.deepEqual(
      copies.map((c) => [c.audience, c.own]),
      [
        ['public', false],
        ['public', true],
        ['team_x', true],
      ],
    );
    assert.equal(rowsRead(await fixture.reader.query(queries[0][0])), undefined);
    assert.equal(rowsRead(await suite.team.query(queries[5][0])), undefined);
  });

  it("decides a reader's search by its audiences' rows alone: another audience's word reads no row, as a word nobody holds", async () => {
    // Rows of partitions read by each statement, as the server counts them: the work a statement does, so
    // what its time can tell.
    const rowsRead = async (client: typeof fixture.reader, sql: string) => {
      const before = await metricValue(fixture.orrery.httpPort, 'orrery_partition_rows_read_total');
      const rows = await plainRows(client, sql);
      return { rows, read: (await metricValue(fixture.orrery.httpPort, 'orrery_partition_rows_read_total')) - before };
    };
    const search = (word: string) => `SELECT msg FROM log_entries WHERE msg ILIKE '%${word}%' ORDER BY msg`;
    assert.deepEqual(await rowsRead(fixture.reader, search('secretword')), { rows: [], read: 0 });
    assert.deepEqual(await rowsRead(fixture.reader, search('nobodyword')), { rows: [], read: 0 });
    // Of the word's 10 rows, the 5 of the reader's audience (public) are read, not team_x's.
    assert.deepEqual(await rowsRead(fixture.reader, queries[0][0]), { rows: [{ n: 5 }], read: 5 });
    assert.deepEqual(await rowsRead(suite.team, search('secretword')), {
      rows: [{ msg: 'team call secretword' }],
      read: 1,
    });
    // A word most of team_x's rows hold (not posted: the reader's own statistics tell).
    assert.deepEqual(await rowsRead(fixture.reader, search('refused')), { rows: [], read: 0 });
    assert.deepEqual((await rowsRead(fixture.admin, search('secretword'))).read, 1);
    // A set index: team_x's service holds no row of the reader's in the mixed partition (read whole by others).
    const service = (name: string) => `SELECT count(*) AS n FROM log_entries WHERE exe = '${name}'`;
    assert.deepEqual(await rowsRead(fixture.reader, service(`svc-${teamKey.key.slice(0, 4)}`)), {
      rows: [{ n: 0 }],
      read: 0,
    });
    assert.deepEqual(await rowsRead(fixture.reader, service('svc-nobody')), { rows: [{ n: 0 }], read: 0 });
    assert.deepEqual(await rowsRead(suite.team, service(`svc-${teamKey.key.slice(0, 4)}`)), {
      rows: [{ n: 20 }],
      read: 220,
    });
    assert.deepEqual((await rowsRead(fixture.reader, service(`svc-${adminKey.key.slice(0, 4)}`))).read, 220);
  });

  it('a publish indexes again the files indexed before words of any letters were: such a word reads its rows alone', async () => {
    const search = queries.find(([sql]) => sql.includes('ÜNÏCÖDÉ'))![0];
    const oldCopies = await makeStatisticsOld(fixture, 'msg_text');
    // Version 1 postings cannot tell of 'ünïcödé' (each of its trigrams holds a letter other than [0-9a-z]): every row of both partitions is read (within the installed
    // lists' two seconds).
    let table = await fixture.admin.query(search);
    for (let attempt = 0; attempt < 100 && skippedBy(table) !== 0; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      table = await fixture.admin.query(search);
    }
    assert.equal(skippedBy(table), 0);
    assert.equal(rowsRead(table), undefined);
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.ok(
      run.out.includes(
        'text index msg_text on log_entries: 2 of 2 partition(s) indexed before words of any letters were: their bitmaps, postings and copies are made again, newest first',
      ),
      run.out.join('\n'),
    );
    // The other partition is skipped, and of the mixed one the word's row alone is read, from the new copy.
    table = await fixture.admin.query(search);
    assert.equal(skippedBy(table), 1);
    const expected = { table: 'log_entries', partitions: 1, rows: 220, read: 1, index: 'msg_text', copies: 1 };
    assert.deepEqual(rowsRead(table), expected);
    const now = await suite.everyAnswer(queries.map(([sql]) => sql));
    for (const [sql, rows] of before0) assert.deepEqual(now.get(sql), rows, sql);
    assert.deepEqual(now.get(`admin: ${search}`), [{ msg: 'request Ünïcödé ok' }]);
    // The old copies stay for the statements their postings planned, queued for deletion; no row names them.
    const db = fixture.orrery.metadata;
    const { rows: queued } = await db.query<{ file_path: string; later: boolean }>(
      `SELECT file_path, expiration > now() + interval '30 minutes' AS later FROM temporary_files
        WHERE file_path = ANY($1::text[]) ORDER BY file_path`,
      [oldCopies],
    );
    assert.deepEqual(
      queued,
      [...oldCopies].sort().map((file_path) => ({ file_path, later: true })),
    );
    const { rows: named } = await db.query(
      `SELECT copy_path FROM resource_partition_stats WHERE copy_path = ANY($1::text[])
       UNION SELECT copy_path FROM resource_audience_stats WHERE copy_path = ANY($1::text[])`,
      [oldCopies],
    );
    assert.deepEqual(named, []);
    const again = await publishFolder(fixture.orrery.address, dir);
    assert.equal(again.status, 0, again.err.join('\n'));
    assert.ok(!again.out.some((l) => l.includes('indexed again')), again.out.join('\n'));
  });
});
