// `orrery views plan|apply|pull|list|show` end to end: the built CLI (node dist/src/cli.js) in a
// child process against a started Orrery, through Flight SQL. Issue 4 item 8 and its round trip:
// pull → apply → plan shows nothing to do.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';
import { specExample } from '../support/spec-example.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** A view reading target_counts (a materialized view), so it must sit in a later update_group. */
const rollup = (name: string, updateGroup: number): string => `CREATE MATERIALIZED VIEW ${name} WITH (
  extract_query = $$SELECT date_bin('1 hour', time_bin) AS time_bin, target, sum(count) AS count, audience
    FROM target_counts WHERE time_bin >= '{begin}' AND time_bin < '{end}' GROUP BY ALL$$,
  count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  merge_partitions_query = $$SELECT time_bin, target, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
  update_group = ${updateGroup},
  time_column = 'time_bin'
)
`;

describe('orrery views against a running server', () => {
  const fixture = useOrrery({ MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS: '1' }, 'serve');
  const root = mkdtempSync(join(tmpdir(), 'orrery-views-e2e-'));
  const dir = join(root, 'views');
  after(() => rmSync(root, { recursive: true, force: true }));

  /** Runs the CLI asynchronously (the server answers from this very process). */
  const views = (args: string[], key: string | null = adminKey.key): Promise<Run> =>
    new Promise((resolve) => {
      const env: NodeJS.ProcessEnv = { ...process.env, ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address };
      if (key === null) delete env.ORRERY_API_KEY;
      else env.ORRERY_API_KEY = key;
      execFile(process.execPath, [cli, 'views', ...args], { env }, (error, stdout, stderr) =>
        resolve({ status: error ? Number(error.code) : 0, stdout, stderr }),
      );
    });
  const names = async (): Promise<string[]> =>
    (await fixture.admin.query('SELECT view_set_name FROM list_view_set_definitions() ORDER BY view_set_name'))
      .toArray()
      .map((r) => String(r.view_set_name));
  const storedSql = async (name: string): Promise<string> =>
    String(
      (
        await fixture.admin.query(
          `SELECT definition_sql FROM list_view_set_definitions() WHERE view_set_name = '${name}'`,
        )
      )
        .getChild('definition_sql')!
        .get(0),
    );
  const plan = (lines: string[]): string =>
    [`Plan for ${dir} against ${fixture.orrery.address}:`, ...lines, ''].join('\n');

  it('list shows the built-in log_stats definition, loaded', async () => {
    const { status, stdout, stderr } = await views(['list']);
    assert.equal(stderr, '');
    assert.equal(status, 0);
    assert.match(
      stdout,
      /^NAME {7}UPDATE_GROUP {2}UPDATED_AT {16}STATUS\nlog_stats {2}3000 {10}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {2}loaded\n$/,
    );
  });

  it('show prints the stored statement exactly', async () => {
    assert.deepEqual(await views(['show', 'log_stats']), {
      status: 0,
      stdout: `${await storedSql('log_stats')}\n`,
      stderr: '',
    });
    assert.deepEqual(await views(['show', 'log_statz']), {
      status: 1,
      stdout: '',
      stderr: `orrery views: no view set definition named 'log_statz' on ${fixture.orrery.address} (it has: log_stats)\n`,
    });
  });

  it('pull writes each definition to <name>.sql, and plan then has nothing to do', async () => {
    const pulled = await views(['pull', '--dir', dir]);
    assert.deepEqual(pulled, {
      status: 0,
      stdout: `  new        log_stats.sql\nPulled 1 definition(s) from ${fixture.orrery.address} into ${dir}: 1 new, 0 updated, 0 unchanged.\n`,
      stderr: '',
    });
    assert.equal(readFileSync(join(dir, 'log_stats.sql'), 'utf8'), `${await storedSql('log_stats')}\n`);
    assert.deepEqual(await views(['plan', '--dir', dir]), {
      status: 0,
      stdout: plan(['Nothing to do: 1 view set(s) match the server.']),
      stderr: '',
    });
  });

  it('plan shows a create and a replace, checked by the server, without changing anything', async () => {
    writeFileSync(join(dir, 'target_counts.sql'), `${specExample('target_counts')}\n`);
    const logStats = readFileSync(join(dir, 'log_stats.sql'), 'utf8');
    writeFileSync(
      join(dir, 'log_stats.sql'),
      logStats.replace("merge_sort_order = 'time_bin'", "merge_sort_order = 'time_bin, target'"),
    );
    const before = await storedSql('log_stats');
    assert.deepEqual(await views(['plan', '--dir', dir]), {
      status: 0,
      stdout: plan([
        '',
        '  NAME           ACTION   UPDATE_GROUP  CHECK',
        '  log_stats      replace  3000          ok (would_replace)',
        '  target_counts  create   4000          ok (would_create)',
        '',
        '1 to create, 1 to replace, 0 to drop, 0 unchanged.',
      ]),
      stderr: '',
    });
    assert.deepEqual(await names(), ['log_stats']);
    assert.equal(await storedSql('log_stats'), before);
  });

  it('apply runs the plan; the stored texts are the files, and plan then has nothing to do', async () => {
    assert.deepEqual(await views(['apply', '--dir', dir]), {
      status: 0,
      stdout: [
        `Applying 2 change(s) from ${dir} to ${fixture.orrery.address}:`,
        '  replaced  log_stats (update_group 3000)',
        '  created   target_counts (update_group 4000)',
        'Done: 1 replaced, 1 created.',
        '',
      ].join('\n'),
      stderr: '',
    });
    assert.deepEqual(await names(), ['log_stats', 'target_counts']);
    assert.equal(await storedSql('target_counts'), specExample('target_counts'));
    assert.equal(
      await storedSql('log_stats'),
      readFileSync(join(dir, 'log_stats.sql'), 'utf8')
        .trim()
        .replace(/^CREATE /, 'CREATE OR REPLACE '),
    );
    assert.deepEqual(await views(['plan', '--dir', dir]), {
      status: 0,
      stdout: plan(['Nothing to do: 2 view set(s) match the server.']),
      stderr: '',
    });
  });

  it('plan shows a refusal with its reason and exits 2; apply stops there and attempts nothing after it', async () => {
    writeFileSync(join(dir, 'target_rollup.sql'), rollup('target_rollup', 5000));
    writeFileSync(join(dir, 'bad_group.sql'), rollup('bad_group', 3500));
    const refusal =
      'INVALID_ARGUMENT: update_group 3500 must be greater than the update_group of target_counts (4000), which this definition reads';
    assert.deepEqual(await views(['plan', '--dir', dir]), {
      status: 2,
      stdout: plan([
        '',
        '  NAME           ACTION  UPDATE_GROUP  CHECK',
        `  bad_group      create  3500          refused: ${refusal}`,
        '  target_rollup  create  5000          ok (would_create)',
        '',
        '2 to create, 0 to replace, 0 to drop, 2 unchanged, 1 refused.',
      ]),
      stderr: '',
    });
    assert.deepEqual(await views(['apply', '--dir', dir]), {
      status: 2,
      stdout: `Applying 2 change(s) from ${dir} to ${fixture.orrery.address}:\n  refused   bad_group: ${refusal}\n`,
      stderr: 'Stopped at bad_group (create); applied 0 of 2 change(s); not attempted: target_rollup.\n',
    });
    assert.deepEqual(await names(), ['log_stats', 'target_counts']);
    rmSync(join(dir, 'bad_group.sql'));
    assert.equal((await views(['apply', '--dir', dir])).status, 0);
    assert.deepEqual(await names(), ['log_stats', 'target_counts', 'target_rollup']);
  });

  it('leaves a stored definition without a file alone unless --prune, and shows a drop refused for a dependent', async () => {
    rmSync(join(dir, 'target_counts.sql'));
    assert.deepEqual(await views(['plan', '--dir', dir]), {
      status: 0,
      stdout: plan([
        '',
        '  NAME           ACTION       UPDATE_GROUP  CHECK',
        '  target_counts  not managed  4000          no file; left alone (--prune drops it)',
        '',
        'Nothing to do: 2 view set(s) match the server (1 not managed).',
      ]),
      stderr: '',
    });
    const pruned = await views(['plan', '--dir', dir, '--prune']);
    assert.equal(pruned.status, 2);
    assert.match(
      pruned.stdout,
      /\n {2}target_counts {2}drop {4}4000 {10}refused: FAILED_PRECONDITION: .*target_rollup.*\n/,
    );
  });

  it('apply --prune drops by descending update_group, dependents first', async () => {
    rmSync(join(dir, 'target_rollup.sql'));
    assert.deepEqual(await views(['apply', '--dir', dir, '--prune']), {
      status: 0,
      stdout: [
        `Applying 2 change(s) from ${dir} to ${fixture.orrery.address}:`,
        '  dropped   target_rollup (update_group 5000)',
        '  dropped   target_counts (update_group 4000)',
        'Done: 2 dropped.',
        '',
      ].join('\n'),
      stderr: '',
    });
    assert.deepEqual(await names(), ['log_stats']);
  });

  it('round-trips: pull into an empty folder, apply, plan shows nothing to do', async () => {
    const fresh = join(root, 'fresh');
    assert.equal((await views(['pull', '--dir', fresh])).status, 0);
    assert.deepEqual(readdirSync(fresh), ['log_stats.sql']);
    assert.deepEqual(await views(['apply', '--dir', fresh, '--prune']), {
      status: 0,
      stdout: 'Nothing to do: 1 view set(s) match the server.\n',
      stderr: '',
    });
    const after = await views(['plan', '--dir', fresh, '--prune']);
    assert.deepEqual(after, {
      status: 0,
      stdout: `Plan for ${fresh} against ${fixture.orrery.address}:\nNothing to do: 1 view set(s) match the server.\n`,
      stderr: '',
    });
  });

  it('a non-admin key gets each change refused with PERMISSION_DENIED; no key fails with a hint', async () => {
    const empty = join(root, 'empty');
    assert.equal((await views(['pull', '--dir', empty])).status, 0);
    rmSync(join(empty, 'log_stats.sql'));
    const denied = await views(['plan', '--dir', empty, '--prune'], readerKey.key);
    assert.equal(denied.status, 2);
    assert.match(denied.stdout, /\n {2}log_stats {2}drop {4}3000 {10}refused: PERMISSION_DENIED: .*admin/);
    assert.deepEqual(await views(['list'], null), {
      status: 1,
      stdout: '',
      stderr:
        `orrery views: cannot list the view set definitions of ${fixture.orrery.address}: UNAUTHENTICATED: missing credentials: ` +
        'send "authorization: Bearer <key>" or use a Basic handshake (pass --key or set ORRERY_API_KEY)\n',
    });
  });
});
