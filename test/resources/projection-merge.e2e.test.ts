// A projection, or a minmax, set or text index, on a set whose read merges (log_stats: GROUP BY time_bin,
// process_id, level, target, audience) is planned as omitted with a warning, as a stored column there is:
// statements read such a set's partitions and merge them, never a projection's copies nor index statistics
// (readingSelects), so they would be bytes no statement reads. Were copies read, those lacking process_id and
// target would merge two processes' rows of one minute and level into one (s10-projmerge). Answers stay the
// extract's, for every key. A projection of log_entries published with them is installed and read. Those a
// server before the rule installed are retired by the next publish and dropped by prune past their 7 days. Real
// server, Postgres, DuckDB and Flight SQL client over a socket.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Table } from 'apache-arrow';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { installerOf, registerInstaller, runResourcesCli, type ResourceInstaller } from '../../src/resources/index.js';
import { adminKey, readerKey } from '../support/orrery-process.js';
import { publishFolder, runCliAs, useAudiencesOrrery } from '../support/publish.js';

const views = ['blocks', 'processes', 'streams', 'log_entries', 'log_stats'];
/** Reads multiplicity (count, avg) and sums, restricting the projection's sort column, naming only stored columns. */
const query = 'SELECT count(*) AS n, avg(count) AS a, sum(count)::BIGINT AS s FROM log_stats WHERE level >= 0';
/** The same over log_stats as its extract computes it from log_entries. */
const truth = `SELECT count(*) AS n, avg(count) AS a, sum(count)::BIGINT AS s FROM (
  SELECT date_bin('1 minute', time) AS time_bin, process_id, level, target, count(*) AS count, audience
    FROM log_entries GROUP BY ALL) WHERE level >= 0`;

const provenanceOf = (table: Table): Record<string, unknown> | undefined => {
  const text = table.schema.metadata.get('orrery.provenance');
  return text === undefined ? undefined : (JSON.parse(text) as Record<string, unknown>);
};

describe('a projection or a statistics index on a set whose read merges is omitted with a warning (issue 13)', () => {
  const suite = useAudiencesOrrery('orrery-projection-merge-');
  const { fixture, dir } = suite;
  /** Where the next insert range starts, epoch ms: the end of the last one materialized. */
  let mark = 0;

  /** Posts records of two services (processes) in one minute, then materializes the range as one partition per set. */
  const round = async (first: number): Promise<void> => {
    await sleep(Math.max(0, mark - Date.now() + 20));
    for (const i of [first, first + 1])
      await suite.ingest(i, adminKey.key, [
        { severity: 9, body: `b${i}.0` },
        { severity: 9, body: `b${i}.1` },
      ]);
    const end = Math.ceil(Date.now() / 1000) * 1000;
    await sleep(end - Date.now() + 20);
    const range = `'${new Date(mark).toISOString()}', '${new Date(end).toISOString()}', ${(end - mark) / 1000}`;
    for (const view of views) await fixture.admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
    mark = end;
  };
  const answers = () => suite.everyAnswer([query]);
  const truths = async () =>
    new Map([...(await suite.everyAnswer([truth]))].map(([k, v]) => [k.replace(truth, query), v]));

  before(async () => {
    mark = (Math.floor(Date.now() / 1000) - 1) * 1000;
    await round(0);
    mkdirSync(join(dir, 'resources'), { recursive: true });
  });

  it('publish warns and installs nothing for log_stats; the projection of log_entries is installed and read', async () => {
    const without = await answers();
    assert.deepEqual(without, await truths());
    writeFileSync(
      join(dir, 'resources', 'stats.resources.json'),
      JSON.stringify({
        resources: {
          by_level: { projection: { table: 'log_stats', order_by: ['level'], columns: ['count'] } },
          entries_by_level: { projection: { table: 'log_entries', order_by: ['level'], columns: ['msg'] } },
          // Statistics only pruning reads, which reads no merging set: omitted too.
          level_minmax: { index: { table: 'log_stats', column: 'level', kind: 'minmax' } },
          target_text: { index: { table: 'log_stats', column: 'target', kind: 'text' } },
        },
      }),
    );
    // `resources validate` reports them as the plan will, by asking the server (resource_omissions).
    const validate = async (key: string) => {
      const [out, err]: [string[], string[]] = [[], []];
      const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: key };
      const status = await runResourcesCli(['validate', '--dir', dir], {
        env,
        out: (l) => out.push(l),
        err: (l) => err.push(l),
      });
      return { status, out, err };
    };
    const reason = (kind: string) =>
      `this server does not install it: log_stats merges its partitions' rows (its merge query is not SELECT * FROM {source}): queries could not read ${kind}`;
    assert.deepEqual(await validate(adminKey.key), {
      status: 0,
      out: [
        `resources/stats.resources.json: by_level: warning: ${reason("a projection's copies")}`,
        `resources/stats.resources.json: level_minmax: warning: ${reason("a minmax index's statistics")}`,
        `resources/stats.resources.json: target_text: warning: ${reason("a text index's statistics")}`,
        '4 valid entries, 0 error(s), 3 warning(s).',
      ],
      err: [],
    });
    // The omissions depend on the files and the view sets' definitions alone (resource_omissions reads no ledger):
    // a key that is no admin is told the same.
    assert.deepEqual(await validate(readerKey.key), await validate(adminKey.key));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(
      run.text,
      /^warning: omitted projection by_level on log_stats \(resources\/stats\.resources\.json: by_level\): log_stats merges its partitions' rows .*queries could not read a projection's copies$/m,
    );
    for (const [key, kind] of [
      ['level_minmax', 'minmax'],
      ['target_text', 'text'],
    ])
      assert.match(
        run.text,
        new RegExp(
          `^warning: omitted index ${key} on log_stats \\(resources/stats\\.resources\\.json: ${key}\\): log_stats merges its partitions' rows .*queries could not read a ${kind} index's statistics$`,
          'm',
        ),
      );
    assert.doesNotMatch(run.text, /(by_level|level_minmax|target_text) on log_stats .*partition\(s\)/);
    assert.match(run.text, /^backfill projection entries_by_level on log_entries .*1 of 1 partition\(s\)/m);
    // Nothing is written for them: no copy, no installed projection or index, no ledger row.
    const { rows } = await fixture.orrery.metadata.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM resource_projections WHERE view_set_name = 'log_stats')
            + (SELECT count(*) FROM resource_indexes WHERE view_set_name = 'log_stats')
            + (SELECT count(*) FROM resource_ledger WHERE physical_table = 'log_stats') AS n`,
    );
    assert.equal(Number(rows[0].n), 0);
    for (const q of [query, 'SELECT level FROM log_stats WHERE level >= 0'])
      assert.equal(provenanceOf(await fixture.admin.query(q))?.projections, undefined, q);
    assert.deepEqual(await plainRows(fixture.admin, `SELECT * FROM explain_resources('${query}')`), []);
    // The control: the pass-through set's projection is read by the same kind of statement.
    assert.deepEqual(
      provenanceOf(await fixture.admin.query('SELECT count(*) AS n FROM log_entries WHERE level >= 0'))?.projections,
      [{ table: 'log_entries', projection: 'entries_by_level' }],
    );
    assert.deepEqual(await answers(), without);
  });

  it('partitions sharing a minute: answers equal the extract, no projection read', async () => {
    await round(2);
    assert.deepEqual(await answers(), await truths());
    assert.equal(provenanceOf(await fixture.admin.query(query))?.projections, undefined);
  });

  it('installed before the rule (a server that planned them): the next publish retires them, prune drops them 7 days on', async () => {
    const { metadata, address } = fixture.orrery;
    // A server before 87f3287 and 50ec4fa: its installers planned no omission for a set whose read merges rows.
    const installers = new Map<string, ResourceInstaller>(
      ['projection', 'index'].map((kind) => [kind, installerOf(kind, metadata)!]),
    );
    for (const [kind, installer] of installers)
      registerInstaller(kind as 'projection' | 'index', { ...installer, unsupported: () => null }, metadata);
    try {
      const old = await publishFolder(address, dir);
      assert.equal(old.status, 0, old.err.join('\n'));
      assert.match(old.text, /^backfill projection by_level on log_stats .*partition\(s\) to copy/m);
    } finally {
      for (const [kind, installer] of installers)
        registerInstaller(kind as 'projection' | 'index', installer, metadata);
    }
    const onLogStats = async (): Promise<number> =>
      Number(
        (
          await metadata.query<{ n: string }>(
            `SELECT (SELECT count(*) FROM resource_projections WHERE view_set_name = 'log_stats')
                  + (SELECT count(*) FROM resource_projection_files WHERE view_set_name = 'log_stats')
                  + (SELECT count(*) FROM resource_indexes WHERE view_set_name = 'log_stats') AS n`,
          )
        ).rows[0].n,
      );
    assert.ok((await onLogStats()) > 3, 'the old plan installed a projection, its copies and two indexes');
    assert.deepEqual(await answers(), await truths());
    const ledger = async () =>
      (
        await metadata.query<{ entry_key: string; retired: boolean; pruned: boolean; days: number }>(
          `SELECT entry_key, retired_at IS NOT NULL AS retired, pruned_at IS NOT NULL AS pruned,
                  round(extract(epoch FROM prune_after - retired_at) / 86400)::int AS days
             FROM resource_ledger WHERE physical_table = 'log_stats' ORDER BY entry_key`,
        )
      ).rows;
    // The next publish (no file changes) plans them as omitted: what it no longer declares is retired for 7 days.
    const next = await publishFolder(address, dir);
    assert.equal(next.status, 0, next.err.join('\n'));
    for (const line of [
      /^retired projection by_level on log_stats \([0-9a-f]+\) for 7 days$/m,
      /^retired index level_minmax on log_stats \([0-9a-f]+\) for 7 days$/m,
      /^retired index target_text on log_stats \([0-9a-f]+\) for 7 days$/m,
    ])
      assert.match(next.text, line);
    const retired = { retired: true, pruned: false, days: 7 };
    assert.deepEqual(
      await ledger(),
      ['by_level', 'level_minmax', 'target_text'].map((entry_key) => ({ entry_key, ...retired })),
    );
    assert.deepEqual(await answers(), await truths());
    // Within the 7 days prune keeps them; past them (prune_after moved back, as the days would) it drops them.
    const kept = await runCliAs(adminKey.key, address, 'resources', ['prune']);
    assert.equal(kept.status, 0, kept.err.join('\n'));
    assert.match(kept.text, /^kept projection by_level on log_stats \([0-9a-f]+\): retired until \d{4}-/m);
    assert.ok((await onLogStats()) > 3);
    await metadata.query(
      "UPDATE resource_ledger SET prune_after = now() - interval '1 second' WHERE physical_table = 'log_stats'",
    );
    const pruned = await runCliAs(adminKey.key, address, 'resources', ['prune']);
    assert.equal(pruned.status, 0, pruned.err.join('\n'));
    assert.match(
      pruned.text,
      /^dropped projection by_level on log_stats \([0-9a-f]+\): \d+ projection file\(s\) queued/m,
    );
    assert.match(pruned.text, /^dropped index level_minmax on log_stats /m);
    assert.match(pruned.text, /^pruned 3 retired resource\(s\)$/m);
    assert.equal(await onLogStats(), 0);
    assert.deepEqual(
      (await ledger()).map((r) => [r.entry_key, r.pruned]),
      [
        ['by_level', true],
        ['level_minmax', true],
        ['target_text', true],
      ],
    );
    assert.deepEqual(await answers(), await truths());
  });
});
