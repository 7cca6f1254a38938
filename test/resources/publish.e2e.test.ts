// `orrery publish`, `orrery resources plan|status|prune` against a started Orrery (issue 13 items 3-5
// and 7): the plan (omitted entries and what refers to them), the namespace lock (a second holder is
// refused by name; an expired one is taken over; it is held from a publication's install step to its
// serve step), a backfill that fails midway and resumes from the
// ledger, retire then re-declare, prune, and minmax / set indexes matching the partitions' rows.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runResourcesCli, takeLock } from '../../src/resources/index.js';
import { logsRequest, pastInsertTimes, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

describe('orrery publish and the resource ledger (issue 13)', () => {
  const fixture = useOrrery({ ORRERY_RETIRE_DELAY_SECONDS: '0' }, 'serve');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-publish-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let files: string[] = [];

  const cli = async (args: string[], program: 'resources' | 'publish' = 'resources') => {
    const out: string[] = [];
    const err: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const status = await runResourcesCli(args, { env, out: (l) => out.push(l), err: (l) => err.push(l) }, program);
    return { status, out, err };
  };
  const publish = (...args: string[]) => cli(['--dir', dir, ...args], 'publish');
  const declare = (resources: unknown): void => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }, null, 2));
  };
  const ledger = async () =>
    (
      await fixture.admin.query(
        'SELECT entry_key, kind, state, backfilled_begin IS NOT NULL AS backfilled, detail FROM resource_ledger() ORDER BY entry_key, kind, state',
      )
    )
      .toArray()
      .map((r: Record<string, unknown>) => ({ ...r }));
  const stats = async (view: string) =>
    (
      await fixture.orrery.metadata.query<{ n: string; min: string; max: string }>(
        `SELECT count(*) AS n, min(min_value) AS min, max(max_value) AS max FROM resource_partition_stats WHERE view_set_name = $1`,
        [view],
      )
    ).rows[0];

  const levelIndex = { index: { table: 'log_entries', column: 'level', kind: 'minmax' } };
  const baseResources = {
    // Not installable (an INTEGER expression without a type): omitted, with the indexes on it.
    pod: { column: { table: 'log_entries', expression: "length(properties->>'k8s.pod.name')" } },
    pod_bloom: { index: { table: 'log_entries', column: 'pod', kind: 'bloom_filter' } },
    pod_set: { index: { table: 'log_entries', column: 'pod', kind: 'set' } },
    level_minmax: levelIndex,
    exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } },
  };

  const notInstallable = `declare "type" for expression 'length(properties->>'k8s.pod.name')' (BIGINT); only JSON property reads, string literals and string functions are stored as VARCHAR without it`;

  before(async () => {
    // Three ingests a second and more apart, materialized by the second: three partitions of log_entries.
    const start = Math.floor(Date.now() / 1000);
    for (const [i, level] of [9, 13, 17].entries()) {
      const logs = [{ time: 1704164645000000000n + BigInt(i) * 1_000_000n, severity: level, body: `entry ${i}` }];
      assert.equal(
        (
          await postOtlp(
            fixture.orrery.httpPort,
            'logs',
            adminKey.key,
            logsRequest({ 'service.name': `svc${i}` }, logs),
          )
        ).status,
        200,
      );
      await sleep(1100);
    }
    for (const view of ['processes', 'log_entries']) {
      await fixture.admin.query(
        `SELECT * FROM materialize_partitions('${view}', '${iso(start - 2)}', '${iso(pastInsertTimes())}', 1)`,
      );
    }
    files = (
      await fixture.admin.query(
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
      )
    )
      .toArray()
      .map((r: Record<string, unknown>) => String(r.file_path));
    assert.ok(files.length >= 3, `expected three partitions, got ${files.length}`);
  });

  it('publish --dry-run prints the file changes and the plan, and runs nothing', async () => {
    declare(baseResources);
    const run = await publish('--dry-run');
    assert.equal(run.status, 0, run.err.join('\n'));
    // The CLI's own validation prints the warning first, then the server's plan prints it again.
    assert.deepEqual(run.out, [
      `resources/logs.resources.json: pod: warning: cannot be installed: ${notInstallable}`,
      'no publication served yet:',
      'file added: resources/logs.resources.json',
      `resources/logs.resources.json: pod: warning: cannot be installed: ${notInstallable}`,
      `warning: omitted column pod on log_entries (resources/logs.resources.json: pod): ${notInstallable}`,
      "warning: omitted index pod_bloom on log_entries (resources/logs.resources.json: pod_bloom): it refers to 'pod', which is omitted",
      "warning: omitted index pod_set on log_entries (resources/logs.resources.json: pod_set): it refers to 'pod', which is omitted",
      'install index level_minmax on log_entries',
      'install index exe_set on log_entries',
    ]);
    assert.deepEqual(await ledger(), []);
  });

  it('publish installs and backfills the minmax and set indexes from every partition, newest first', async () => {
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.out.join('\n'), /^publication 1 recorded \(content [0-9a-f]{12}\)$/m);
    assert.match(
      run.out.join('\n'),
      new RegExp(
        `^backfill minmax index level_minmax on log_entries: ${files.length} of ${files.length} partition\\(s\\) to read \\(0 done before\\), newest first$`,
        'm',
      ),
    );
    assert.match(
      run.out.join('\n'),
      /^ {2}level_minmax: 1\/\d+ partition\(s\), reached \d{4}-\d\d-\d\d, about \d+ s left$/m,
    );
    assert.match(run.out.join('\n'), /^served publication 1$/m);
    assert.deepEqual(await ledger(), [
      { entry_key: 'exe_set', kind: 'index', state: 'ready', backfilled: true, detail: null },
      { entry_key: 'level_minmax', kind: 'index', state: 'ready', backfilled: true, detail: null },
    ]);
    // The statistics are the rows' own: one row per partition file, extremes equal to the table's.
    const levels = (
      await fixture.admin.query('SELECT min(level)::VARCHAR AS lo, max(level)::VARCHAR AS hi FROM log_entries')
    ).toArray()[0] as Record<string, unknown>;
    const stored = await fixture.orrery.metadata.query<{ n: string; lo: string; hi: string }>(
      `SELECT count(*) AS n, min(min_value::int)::text AS lo, max(max_value::int)::text AS hi FROM resource_partition_stats s
         JOIN resource_ledger l ON l.hash = s.index_hash WHERE l.entry_key = 'level_minmax'`,
    );
    assert.deepEqual(stored.rows[0], { n: String(files.length), lo: String(levels.lo), hi: String(levels.hi) });
    const exes = await fixture.orrery.metadata.query<{ values: string[] }>(
      `SELECT distinct_values AS values FROM resource_partition_stats s JOIN resource_ledger l ON l.hash = s.index_hash
        WHERE l.entry_key = 'exe_set'`,
    );
    assert.equal(exes.rows.length, files.length);
    for (const row of exes.rows) assert.ok(Array.isArray(row.values));
  });

  it('a publish with no file changes makes no new publication and installs what is missing', async () => {
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(
      run.out.join('\n'),
      /^no file changes: publication 1 again; installing what is missing and re-pointing names$/m,
    );
    assert.match(run.out.join('\n'), /^installed index level_minmax on log_entries: ready; checked again for drift$/m);
    assert.match(
      run.out.join('\n'),
      new RegExp(
        `^backfill minmax index level_minmax on log_entries: 0 of ${files.length} partition\\(s\\) to read \\(${files.length} done before\\), newest first$`,
        'm',
      ),
    );
  });

  it('a second installation is refused naming the lock holder; an expired lock (a crashed holder) is taken over', async () => {
    const held = await takeLock(fixture.orrery.metadata, 'a test holding the lock');
    try {
      const refused = await publish();
      assert.equal(refused.status, 1);
      assert.match(
        refused.err.join('\n'),
        new RegExp(
          `another installation holds the resources lock: a test holding the lock on host .+, pid ${process.pid}, since \\d{4}-`,
        ),
      );
      const prune = await cli(['prune']);
      assert.equal(prune.status, 1);
      assert.match(prune.err.join('\n'), /another installation holds the resources lock/);
      // The holder crashes: it stops renewing, and its lease runs out. (Its renewal, every 15 s, would otherwise take
      // the lock back before a loaded machine's publish reaches it: refused again.)
      await held.handOver();
      await fixture.orrery.metadata.query("UPDATE resource_locks SET expires_at = now() - interval '1 second'");
      const resumed = await publish();
      assert.equal(resumed.status, 0, resumed.err.join('\n'));
    } finally {
      await held.release();
    }
  });

  it('one publication holds the lock from its install step to its serve step: nothing else installs between them', async () => {
    const files = JSON.stringify({
      files: { 'resources/logs.resources.json': readFileSync(join(dir, 'resources', 'logs.resources.json'), 'utf8') },
    });
    const step = (name: string, token: string) =>
      fixture.admin.query(`SELECT msg FROM publish_resources('${files.replaceAll("'", "''")}', '${name}', '${token}')`);
    await step('install', 'publication-a');
    // Between the two steps (where the CLI applies the views), another publish, a prune, or a serve step
    // with another token are refused, naming the install step that holds the lock.
    const refused = await publish();
    assert.equal(refused.status, 1);
    assert.match(refused.err.join('\n'), /another installation holds the resources lock: publish \(install\) by admin/);
    assert.equal((await cli(['prune'])).status, 1);
    await assert.rejects(step('serve', 'publication-b'), /another installation holds the resources lock/);
    await step('serve', 'publication-a');
    const { rows } = await fixture.orrery.metadata.query('SELECT token FROM resource_locks');
    assert.deepEqual(rows, []);
    const after = await publish();
    assert.equal(after.status, 0, after.err.join('\n'));
  });

  it('a backfill that fails midway keeps its progress in the ledger; the next publish resumes there', async () => {
    declare({ ...baseResources, level_set: { index: { table: 'log_entries', column: 'level', kind: 'set' } } });
    const oldest = files[0];
    const bytes = await fixture.orrery.store.get(oldest);
    await fixture.orrery.store.put(oldest, new TextEncoder().encode('not parquet'));
    let failed;
    try {
      failed = await publish();
    } finally {
      await fixture.orrery.store.put(oldest, bytes);
    }
    assert.equal(failed.status, 1);
    assert.match(
      failed.err.join('\n'),
      /installing index level_set on log_entries failed: .*; run orrery publish again to resume/,
    );
    const partial = (await ledger()).find((r) => r.entry_key === 'level_set');
    assert.equal(partial?.state, 'installing');
    assert.equal(partial?.backfilled, files.length > 1);
    const done = Number((await stats('log_entries')).n);
    const resumed = await publish();
    assert.equal(resumed.status, 0, resumed.err.join('\n'));
    assert.match(
      resumed.out.join('\n'),
      new RegExp(
        `^backfill set index level_set on log_entries: 1 of ${files.length} partition\\(s\\) to read \\(${files.length - 1} done before\\), newest first$`,
        'm',
      ),
    );
    assert.equal(Number((await stats('log_entries')).n), done + 1);
    assert.equal((await ledger()).find((r) => r.entry_key === 'level_set')?.state, 'ready');
  });

  it('retire then re-declare: an undeclared entry is retired for seven days, declaring it again cancels that', async () => {
    const { level_minmax: _dropped, ...without } = baseResources;
    declare(without);
    const retired = await publish();
    assert.equal(retired.status, 0, retired.err.join('\n'));
    assert.match(retired.out.join('\n'), /^retired index level_minmax on log_entries \([0-9a-f]{8}\) for 7 days$/m);
    assert.match(retired.out.join('\n'), /^retired index level_set on log_entries \([0-9a-f]{8}\) for 7 days$/m);
    const kept = await cli(['prune', '--dry-run']);
    assert.match(kept.out.join('\n'), /^kept index level_minmax on log_entries \([0-9a-f]{8}\): retired until \d{4}-/m);
    declare({ ...without, level_minmax: levelIndex });
    const again = await publish();
    assert.equal(again.status, 0, again.err.join('\n'));
    assert.match(again.out.join('\n'), /^declared again: index level_minmax on log_entries; retirement cancelled$/m);
    const status = await cli(['status']);
    assert.equal(status.status, 0);
    assert.match(status.out[0], /^TABLE +ENTRY +KIND +HASH +STATE +BACKFILLED +RETIRED_AT +PRUNE_AFTER +DETAIL$/);
    assert.match(
      status.out.join('\n'),
      /^log_entries +level_minmax +index +[0-9a-f]{8} +ready +\d{4}-\S+\.\.\d{4}-\S+ +- +- *$/m,
    );
    assert.match(
      status.out.join('\n'),
      /^log_entries +level_set +index +[0-9a-f]{8} +retired +\d{4}-\S+ +\d{4}-\S+ +\d{4}-\S+/m,
    );
  });

  it('prune drops what was retired more than seven days ago, and only that', async () => {
    await fixture.orrery.metadata.query(
      "UPDATE resource_ledger SET prune_after = now() - interval '1 second' WHERE entry_key = 'level_set'",
    );
    const dry = await cli(['prune', '--dry-run']);
    assert.deepEqual(
      dry.out.filter((l) => l.startsWith('would drop')),
      [dry.out.find((l) => /^would drop index level_set on log_entries \([0-9a-f]{8}\)$/.test(l))],
    );
    const before = Number((await stats('log_entries')).n);
    const pruned = await cli(['prune']);
    assert.equal(pruned.status, 0, pruned.err.join('\n'));
    assert.match(
      pruned.out.join('\n'),
      new RegExp(
        `^dropped index level_set on log_entries \\([0-9a-f]{8}\\): ${files.length} partition statistics row\\(s\\) deleted$`,
        'm',
      ),
    );
    assert.match(pruned.out.join('\n'), /^pruned 1 retired resource\(s\)$/m);
    assert.equal(Number((await stats('log_entries')).n), before - files.length);
    assert.equal((await ledger()).find((r) => r.entry_key === 'level_set')?.state, 'pruned');
  });

  it('plan --revision prints a stored publication; plan alone the served head', async () => {
    const one = await cli(['plan', '--revision', '1']);
    assert.equal(one.status, 0, one.err.join('\n'));
    assert.equal(one.out[0], 'publication 1:');
    const head = await cli(['plan']);
    assert.equal(head.status, 0, head.err.join('\n'));
    assert.match(head.out[0], /^publication \d+:$/);
    assert.ok(head.out.includes('no file changes'));
    const missing = await cli(['plan', '--revision', '99']);
    assert.equal(missing.status, 1);
    assert.match(missing.err[0], /there is no publication 99/);
  });

  it('publish applies the views of the folder; install_on_publish false (or --no-install-resources) installs nothing', async () => {
    mkdirSync(join(dir, 'views'), { recursive: true });
    writeFileSync(
      join(dir, 'views', 'level_counts.sql'),
      `CREATE MATERIALIZED VIEW level_counts WITH (
  extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, level, count(*) AS count, audience
    FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
  count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  merge_partitions_query = $$SELECT time_bin, level, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
  update_group = 4000,
  time_column = 'time_bin'
)
`,
    );
    writeFileSync(join(dir, 'orrery.json'), JSON.stringify({ resources: { install_on_publish: false } }));
    const ledgerBefore = await ledger();
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.equal(
      run.out.find((l) => !l.includes(': warning: ')),
      'resources not installed (resources.install_on_publish is false, or --no-install-resources)',
    );
    assert.match(run.out.join('\n'), /^ {2}created {3}level_counts \(update_group 4000\)$/m);
    const names = (await fixture.admin.query('SELECT view_set_name FROM list_view_set_definitions()'))
      .toArray()
      .map((r: Record<string, unknown>) => String(r.view_set_name));
    assert.ok(names.includes('level_counts'));
    assert.deepEqual(await ledger(), ledgerBefore);
    const forced = await publish('--install-resources', '--dry-run');
    assert.equal(forced.status, 0, forced.err.join('\n'));
    assert.ok(forced.out.includes('file added: views/level_counts.sql'), forced.out.join('\n'));
  });
  it('prune retires an index no ledger row records, then drops it seven days later; one the head declares is kept', async () => {
    const { metadata } = fixture.orrery;
    // An index whose ledger row is lost: a copy of exe_set's statistics under another hash and key.
    const [{ index_hash: exe }] = (
      await metadata.query<{ index_hash: string }>(
        "SELECT index_hash FROM resource_indexes WHERE entry_key = 'exe_set'",
      )
    ).rows;
    await metadata.query(
      `INSERT INTO resource_indexes SELECT 'feedf00d', view_set_name, 'lost_set', kind, expression, value_type
         FROM resource_indexes WHERE index_hash = $1`,
      [exe],
    );
    await metadata.query(
      `INSERT INTO resource_partition_stats SELECT 'feedf00d', view_set_name, file_path, begin_insert_time, min_value,
              max_value, distinct_values, bloom FROM resource_partition_stats WHERE index_hash = $1`,
      [exe],
    );
    // exe_set's own ledger row lost too: the served publication declares it, so it is left to the next publish.
    const [lostRow] = (await metadata.query("SELECT * FROM resource_ledger WHERE entry_key = 'exe_set'")).rows;
    await metadata.query("DELETE FROM resource_ledger WHERE entry_key = 'exe_set'");
    try {
      const dry = await cli(['prune', '--dry-run']);
      assert.equal(dry.status, 0, dry.err.join('\n'));
      assert.ok(
        dry.out.includes('would retire unrecorded index lost_set on log_entries (feedf00d) for 7 days'),
        dry.out.join('\n'),
      );
      assert.ok(
        dry.out.includes(
          `unrecorded index exe_set on log_entries (${exe}): declared by the served publication, which a publish records again`,
        ),
        dry.out.join('\n'),
      );
      const retired = await cli(['prune']);
      assert.equal(retired.status, 0, retired.err.join('\n'));
      assert.ok(
        retired.out.includes('retired unrecorded index lost_set on log_entries (feedf00d) for 7 days'),
        retired.out.join('\n'),
      );
      assert.match(retired.out.join('\n'), /^kept index lost_set on log_entries \(feedf00d\): retired until \d{4}-/m);
      await metadata.query(
        "UPDATE resource_ledger SET prune_after = now() - interval '1 second' WHERE entry_key = 'lost_set'",
      );
      const dropped = await cli(['prune']);
      assert.equal(dropped.status, 0, dropped.err.join('\n'));
      assert.ok(
        dropped.out.includes(
          `dropped index lost_set on log_entries (feedf00d): ${files.length} partition statistics row(s) deleted`,
        ),
        dropped.out.join('\n'),
      );
      const left = await metadata.query("SELECT 1 FROM resource_partition_stats WHERE index_hash = 'feedf00d'");
      assert.equal(left.rows.length, 0);
      // exe_set was neither retired nor dropped.
      assert.equal(
        (await metadata.query('SELECT 1 FROM resource_indexes WHERE index_hash = $1', [exe])).rows.length,
        1,
      );
    } finally {
      const columns = Object.keys(lostRow as object);
      await metadata.query(
        `INSERT INTO resource_ledger (${columns.join(', ')}) SELECT * FROM json_populate_record(NULL::resource_ledger, $1)`,
        [JSON.stringify(lostRow)],
      );
    }
  });

  it('status reports drift: a missing index, missing statistics, an object no ledger records; a publish repairs the first two', async () => {
    const { metadata } = fixture.orrery;
    const hashOf = async (key: string) =>
      (
        await metadata.query<{ index_hash: string }>('SELECT index_hash FROM resource_indexes WHERE entry_key = $1', [
          key,
        ])
      ).rows[0].index_hash;
    const [exe, level] = [await hashOf('exe_set'), await hashOf('level_minmax')];
    const drift = async () => {
      const run = await cli(['status']);
      assert.equal(run.status, 0, run.err.join('\n'));
      return run.out.slice(run.out.findIndex((l) => /^(No drift|Drift: )/.test(l)));
    };
    assert.deepEqual(await drift(), ['No drift: every ready entry is installed.']);
    await metadata.query('DELETE FROM resource_indexes WHERE index_hash = $1', [exe]);
    await metadata.query('DELETE FROM resource_partition_stats WHERE index_hash = $1 AND file_path = $2', [
      level,
      files[0],
    ]);
    await metadata.query(
      `INSERT INTO resource_indexes SELECT 'feedf00e', view_set_name, 'stray_minmax', kind, expression, value_type
         FROM resource_indexes WHERE index_hash = $1`,
      [level],
    );
    try {
      const found = await drift();
      assert.equal(found[0], 'Drift: 3 difference(s) between the ledger and what is installed:');
      assert.match(found[1], /^TABLE +ENTRY +KIND +HASH +PROBLEM$/);
      assert.deepEqual(
        found.slice(2).map((l) => l.split(/ {2,}/)),
        [
          ['log_entries', 'exe_set', 'index', exe, 'missing index: not installed (publish again to repair)'],
          [
            'log_entries',
            'level_minmax',
            'index',
            level,
            `1 of ${files.length} partition file(s) without index statistics (publish again to repair)`,
          ],
          [
            'log_entries',
            'stray_minmax',
            'index',
            'feedf00e',
            'installed but recorded by no ledger row (prune retires it)',
          ],
        ],
      );
      // A publish with no file changes installs what is missing; the stray object is prune's.
      const repaired = await publish('--install-resources');
      assert.equal(repaired.status, 0, repaired.err.join('\n'));
      const left = await drift();
      assert.equal(left.length, 3, left.join('\n'));
      assert.match(left[2], /^log_entries +stray_minmax +index +feedf00e +installed but recorded by no ledger row/);
    } finally {
      await metadata.query("DELETE FROM resource_indexes WHERE index_hash = 'feedf00e'");
    }
    assert.deepEqual(await drift(), ['No drift: every ready entry is installed.']);
  });
});
