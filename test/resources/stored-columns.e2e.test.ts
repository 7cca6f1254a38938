// Stored columns (issue 13 item 2): a column entry is installed as `__orr_<hash>` in log_entries's partition
// files (existing files rewritten newest first, new and merged files written with it), queries read it
// in place of its expression only when every file they read holds it, and no answer changes: every query
// answers exactly as before the column existed, for an admin and two audiences' keys, while a file is not
// yet backfilled, after a merge, and after the entry is retired and pruned. An index declared on the
// column entry prunes partitions. Only an admin's result names the column read; nobody reads `__orr_`
// columns by name.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { runResourcesCli } from '../../src/resources/index.js';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { pastInsertTimes, podLogs, postOtlp } from '../support/otlp.js';
import { adminKey } from '../support/orrery-process.js';
import { publishFolder, teamKey, useAudiencesOrrery } from '../support/publish.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

interface Provenance {
  partitions?: Array<{ skipped: number; indexes: string[] }>;
  stored_columns?: Array<{ table: string; entry: string; column: string; use: string; reason?: string }>;
}
const provenanceOf = (table: Table): Provenance | undefined => {
  const text = table.schema.metadata.get('orrery.provenance');
  return text === undefined ? undefined : (JSON.parse(text) as Provenance);
};

/** Each query, and whether an admin's reads the stored column (true), leaves the expression (false) or holds none (null). */
const queries: Array<[string, boolean | null]> = [
  ["SELECT msg FROM log_entries WHERE properties->>'pod' = 'pod-1' ORDER BY msg", true],
  ["SELECT properties->>'pod', count(*) AS n FROM log_entries GROUP BY properties->>'pod' ORDER BY 1", true],
  [
    "SELECT json_extract_string(properties, 'pod') AS pod, count(*) AS n FROM log_entries GROUP BY ALL HAVING count(*) > 0 ORDER BY pod",
    true,
  ],
  ["SELECT * FROM log_entries WHERE (properties->>'pod') IN ('pod-0', 'pod-2') ORDER BY msg", true],
  ["SELECT e.msg, upper(e.properties->>'pod') FROM log_entries e ORDER BY 2, 1", true],
  ["SELECT e.* FROM log_entries e WHERE e.properties->>'pod' = 'pod-1' ORDER BY msg", true],
  ["SELECT msg FROM log_entries ORDER BY properties->>'pod' DESC, msg", true],
  ["SELECT msg AS properties FROM log_entries WHERE properties->>'pod' = 'pod-1' ORDER BY 1", false],
  ["SELECT log_entries.msg, log_entries FROM log_entries WHERE properties->>'pod' = 'pod-2' ORDER BY 1", false],
  [
    "SELECT a.msg FROM log_entries a JOIN log_entries b USING (msg) WHERE a.properties->>'pod' = 'pod-1' ORDER BY 1",
    null,
  ],
  ["SELECT count(*) AS n FROM (SELECT properties->>'pod' AS p FROM log_entries) WHERE p = 'pod-2'", null],
  ["SELECT msg FROM log_entries WHERE properties->>'other' IS NULL ORDER BY msg", null],
  // Column aliases rename msg to properties: the expression no longer reads the property (answer 0, not 2).
  [
    "SELECT count(*) AS n FROM log_entries AS l(p, s, b, i, e, u, c, t, g, lv, properties, m) WHERE CASE WHEN json_valid(properties) THEN properties->>'pod' END = 'pod-1'",
    null,
  ],
  // property_get and a one-key JSONPath read the same property: the same stored column (issue 13).
  ["SELECT msg FROM log_entries WHERE property_get(properties, 'pod') = 'pod-1' ORDER BY msg", true],
  ["SELECT json_extract_string(properties, '$.pod') AS p, count(*) AS n FROM log_entries GROUP BY 1 ORDER BY 1", true],
  [`SELECT msg FROM log_entries WHERE properties->>'$."pod"' IN ('pod-2') ORDER BY msg`, true],
  // Other keys, and a JSON pointer, are other expressions as far as matching goes.
  ["SELECT msg FROM log_entries WHERE property_get(properties, 'Pod') IS NULL ORDER BY msg", null],
  ["SELECT msg FROM log_entries WHERE properties->>'/pod' = 'pod-1' ORDER BY msg", null],
];

describe('stored columns: installed, backfilled, read in place of their expression (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-columns-', { ORRERY_RETIRE_DELAY_SECONDS: '0' });
  const { fixture, dir } = suite;
  let start = 0;
  let end = 0;
  const answers = new Map<string, unknown>();

  const answer = async (client: TestFlightClient, sql: string): Promise<unknown> => {
    try {
      return await plainRows(client, sql);
    } catch (error) {
      return { error: (error as Error).message };
    }
  };
  const { clients } = suite;
  const everyAnswer = async () => {
    const all = new Map<string, unknown>();
    for (const [sql] of queries)
      for (const [who, client] of clients()) all.set(`${who}: ${sql}`, await answer(client, sql));
    return all;
  };
  const assertSameAnswers = async () => {
    const now = await everyAnswer();
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
  };
  /** What an admin's result says of the stored column for each query. */
  const uses = async () => {
    const out: Array<[string, string | undefined]> = [];
    for (const [sql] of queries) {
      const used = provenanceOf(await fixture.admin.query(sql))?.stored_columns;
      out.push([sql, used?.map((u) => `${u.entry}:${u.use}`).join(',')]);
    }
    return out;
  };
  const publish = async () => {
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    return run.out;
  };
  const declare = (resources: unknown) =>
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
  const currentFiles = async () =>
    (
      await plainRows(
        fixture.admin,
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
      )
    ).map((r) => String(r.file_path));
  const holding = async () =>
    (
      await fixture.orrery.metadata.query<{ file_path: string }>(
        "SELECT file_path FROM resource_column_files WHERE view_set_name = 'log_entries'",
      )
    ).rows.map((r) => r.file_path);

  before(async () => {
    // Three partitions of log_entries a second apart, pods 0, 1 and 2; the middle one sent by a key of audience team_x.
    start = Math.floor(Date.now() / 1000);
    for (const i of [0, 1, 2]) {
      const sent = await postOtlp(fixture.orrery.httpPort, 'logs', i === 1 ? teamKey.key : adminKey.key, podLogs(i));
      assert.equal(sent.status, 200, sent.text);
      await sleep(1100);
    }
    end = pastInsertTimes();
    for (const view of ['processes', 'log_entries'])
      await fixture.admin.query(
        `SELECT * FROM materialize_partitions('${view}', '${iso(start - 2)}', '${iso(end)}', 1)`,
      );
    assert.equal((await currentFiles()).length, 3);
    for (const [sql, rows] of await everyAnswer()) answers.set(sql, rows);
    assert.deepEqual(answers.get(`admin: ${queries[0][0]}`), [{ msg: 'entry 1.0' }, { msg: 'entry 1.1' }]);
    mkdirSync(join(dir, 'resources'), { recursive: true });
  });

  it('publish rewrites every partition file with the column, newest first, and queries read it; no answer changes', async () => {
    declare({
      pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
      pod_bloom: { index: { table: 'log_entries', column: 'pod', kind: 'bloom_filter' } },
    });
    const before = await currentFiles();
    const out = await publish();
    assert.ok(
      out.some((l) =>
        /^backfill stored column pod \(__orr_[0-9a-f]{16} VARCHAR\) on log_entries: 3 partition file/.test(l),
      ),
      out.join('\n'),
    );
    assert.ok(
      out.some((l) => /^ready column pod on log_entries/.test(l)),
      out.join('\n'),
    );
    assert.ok(
      out.some((l) => /^ready index pod_bloom on log_entries/.test(l)),
      out.join('\n'),
    );
    const after = await currentFiles();
    assert.equal(after.length, 3);
    assert.ok(
      after.every((f) => !before.includes(f)),
      'every file was rewritten',
    );
    assert.deepEqual((await holding()).sort(), [...after].sort());
    await assertSameAnswers();
    for (const [sql, use] of await uses()) {
      const expected = queries.find(([q]) => q === sql)![1];
      assert.equal(use, expected === null ? undefined : `pod:${expected ? 'substituted' : 'kept'}`, sql);
    }
    // The index on the column entry prunes by the expression the column stores.
    const pruned = provenanceOf(await fixture.admin.query(queries[0][0]));
    assert.deepEqual(pruned?.partitions?.[0]?.skipped, 2);
    assert.deepEqual(pruned?.partitions?.[0]?.indexes, ['pod_bloom']);
    const byMacro = provenanceOf(await fixture.admin.query(queries[13][0]));
    assert.deepEqual(byMacro?.partitions?.[0]?.skipped, 2);
    // A reader's result names no stored column.
    for (const client of [fixture.reader, suite.team])
      assert.equal(provenanceOf(await client.query(queries[0][0]))?.stored_columns, undefined);
  });

  it('explain_resources tells an admin the stored column a statement reads, and why one is kept; a reader sees none', async () => {
    const [{ column_name: column }] = (
      await fixture.orrery.metadata.query<{ column_name: string }>(
        "SELECT column_name FROM resource_columns WHERE view_set_name = 'log_entries' AND entry_key = 'pod'",
      )
    ).rows;
    const explain = (client: TestFlightClient, sql: string) =>
      plainRows(client, `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`);
    const use = (decision: string, reason: string) => ({
      level: null,
      table: 'log_entries',
      rollup: 'pod',
      grain: null,
      decision,
      reason,
    });
    assert.deepEqual(await explain(fixture.admin, queries[1][0]), [use('substituted', `reads ${column}`)]);
    assert.deepEqual(
      await explain(fixture.admin, "SELECT msg AS properties FROM log_entries ORDER BY properties->>'pod'"),
      [use('kept', 'the select alias properties shadows the column the expression reads')],
    );
    assert.deepEqual(await explain(fixture.admin, queries[11][0]), []);
    for (const client of [fixture.reader, suite.team]) assert.deepEqual(await explain(client, queries[1][0]), []);
  });

  it('nobody reads a __orr_ column by name, and a statement naming one reads no stored column', async () => {
    const { rows } = await fixture.orrery.metadata.query<{ column_name: string }>(
      'SELECT column_name FROM resource_columns',
    );
    const name = rows[0].column_name;
    for (const [who, client] of clients()) {
      await assert.rejects(client.query(`SELECT ${name} FROM log_entries`), /not found|does not have a column/i, who);
      await assert.rejects(
        client.query(`SELECT msg, ${name} FROM log_entries WHERE properties->>'pod' = 'pod-1'`),
        /not found|does not have a column/i,
        who,
      );
    }
  });

  it('a file not holding the column yet is read by the expression, then backfilled by the next publish', async () => {
    const [newest] = (
      await fixture.orrery.metadata.query<{ file_path: string }>(
        "SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time DESC LIMIT 1",
      )
    ).rows;
    await fixture.orrery.metadata.query('DELETE FROM resource_column_files WHERE file_path = $1', [newest.file_path]);
    await assertSameAnswers();
    const kept = provenanceOf(await fixture.admin.query(queries[1][0]))?.stored_columns;
    assert.equal(kept?.[0]?.use, 'kept');
    assert.match(kept?.[0]?.reason ?? '', /backfill/);
    const out = await publish();
    assert.ok(
      out.some((l) => /1 partition file\(s\) to rewrite/.test(l)),
      out.join('\n'),
    );
    assert.equal(provenanceOf(await fixture.admin.query(queries[1][0]))?.stored_columns?.[0]?.use, 'substituted');
    await assertSameAnswers();
  });

  it('a merged partition is written with the column', async () => {
    await fixture.admin.query(
      `SELECT * FROM materialize_partitions('log_entries', '${iso(start - 2)}', '${iso(end)}', ${end - start + 2})`,
    );
    const files = await currentFiles();
    assert.equal(files.length, 1);
    assert.deepEqual(await holding(), files);
    assert.equal(provenanceOf(await fixture.admin.query(queries[0][0]))?.stored_columns?.[0]?.use, 'substituted');
    await assertSameAnswers();
  });

  it('a column on a view set whose merge query merges rows is planned as omitted: queries could not read it', async () => {
    declare({
      pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
      level_text: { column: { table: 'log_stats', expression: "concat('level ', level)" } },
    });
    const run = await publishFolder(fixture.orrery.address, dir, '--dry-run');
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(
      run.text,
      /^warning: omitted column level_text on log_stats \(__orr_[0-9a-f]{16} VARCHAR\) \(resources\/logs\.resources\.json: level_text\): log_stats merges its partitions' rows/m,
    );
    assert.match(run.text, /^installed column pod on log_entries/m);
  });

  it('a later publication retires the entry; once pruned, queries compute the expression again', async () => {
    declare({});
    const out = await publish();
    assert.ok(
      out.some((l) => /^retired column pod on log_entries/.test(l)),
      out.join('\n'),
    );
    await assertSameAnswers();
    await fixture.orrery.metadata.query("UPDATE resource_ledger SET prune_after = now() - interval '1 second'");
    const err: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const pruned: string[] = [];
    assert.equal(
      await runResourcesCli(['prune'], { env, out: (l) => pruned.push(l), err: (l) => err.push(l) }, 'resources'),
      0,
      err.join('\n'),
    );
    assert.ok(
      pruned.some((l) => /^dropped column pod on log_entries/.test(l)),
      pruned.join('\n'),
    );
    assert.equal(provenanceOf(await fixture.admin.query(queries[0][0]))?.stored_columns, undefined);
    await assertSameAnswers();
  });
});
