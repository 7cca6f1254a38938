// `orrery resources validate` against a started Orrery (issue 13 item 2): the view sets come from the
// server (list_view_sets(), list_view_set_definitions()), diagnostics are printed as a compiler does,
// and the exit status is 2 when a file has errors.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runResourcesCli } from '../../src/resources/index.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';

describe('orrery resources validate against a running server', () => {
  const fixture = useOrrery({}, 'serve');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-resources-cli-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const run = async (args: string[], key: string | undefined = adminKey.key) => {
    const out: string[] = [];
    const err: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: key };
    const status = await runResourcesCli(args, { env, out: (l) => out.push(l), err: (l) => err.push(l) });
    return { status, out, err };
  };
  const write = (name: string, resources: unknown): void => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(join(dir, 'resources', name), JSON.stringify({ resources }, null, 2));
  };

  it("the spec's example over log_entries is valid (exit 0), and the server's plan installs all of it", async () => {
    write('logs.resources.json', {
      pod_name: { column: { table: 'log_entries', expression: "properties->>'k8s.pod.name'" } },
      pod_name_filter: { index: { table: 'log_entries', column: 'pod_name', kind: 'bloom_filter' } },
      by_pod: { projection: { table: 'log_entries', order_by: ['pod_name', 'time'] } },
    });
    assert.deepEqual(await run(['validate', '--dir', dir]), {
      status: 0,
      out: ['3 valid entries, 0 error(s), 0 warning(s).'],
      err: [],
    });
  });

  it('a projection on a series table is a warning and omitted; its set, bloom_filter and text indexes and its column install', async () => {
    await fixture.admin.query(`CREATE TABLE calls_t (ts TIMESTAMP, svc VARCHAR, dur DOUBLE) WITH (time_column = 'ts')`);
    write('logs.resources.json', {
      svc_set: { index: { table: 'calls_t', column: 'svc', kind: 'set' } },
      svc_bloom: { index: { table: 'calls_t', column: 'svc', kind: 'bloom_filter' } },
      svc_text: { index: { table: 'calls_t', column: 'svc', kind: 'text' } },
      by_svc: { projection: { table: 'calls_t', order_by: ['svc'] } },
      svc_upper: { column: { table: 'calls_t', expression: 'upper(svc)' } },
    });
    const checked = await run(['validate', '--dir', dir]);
    const omitted = (entry: string, what: string) =>
      `resources/logs.resources.json: ${entry}: warning: this server does not install it: calls_t is not a view set, and ${what} are kept in view sets' partition files only`;
    assert.deepEqual(checked, {
      status: 0,
      out: [omitted('by_svc', 'projections'), '5 valid entries, 0 error(s), 1 warning(s).'],
      err: [],
    });
    // Published, the omitted one is not recorded ready over no partition file; two others sort calls_t by svc, the
    // text index keeps statistics of its files (none yet), the column is one of calls_t's, filled (no row yet).
    const out: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const status = await runResourcesCli(['--dir', dir], { env, out: (l) => out.push(l), err: () => {} }, 'publish');
    assert.equal(status, 0);
    assert.deepEqual(
      out.filter((l) => /^ready /.test(l)),
      [
        'ready index svc_set on calls_t',
        'ready index svc_bloom on calls_t',
        'ready index svc_text on calls_t',
        'ready column svc_upper on calls_t (__orr_6f79b7c2a06e6690 VARCHAR)',
      ],
    );
    assert.ok(out.includes('installed: 4 entr(ies) ready; serve next'), out.join('\n'));
  });

  it('errors go to stderr as <file>: <entry>: error: <message>, warnings to stdout; exit 2', async () => {
    write('logs.resources.json', {
      hour: { column: { table: 'log_entries', expression: "date_trunc('hour', time)" } },
      lost: { index: { table: 'log_stats', column: 'no_such_column', kind: 'minmax' } },
    });
    assert.deepEqual(await run(['validate', '--dir', dir]), {
      status: 2,
      out: [
        `resources/logs.resources.json: hour: warning: cannot be installed: declare "type" for expression 'date_trunc('hour', time)' (TIMESTAMP); only JSON property reads, string literals and string functions are stored as VARCHAR without it`,
        '1 valid entry, 1 error(s), 1 warning(s).',
      ],
      err: [
        "resources/logs.resources.json: lost: error: index.column 'no_such_column' is neither a column entry of this file nor a column of log_stats",
      ],
    });
  });

  it('a refused key and a missing folder fail with one line', async () => {
    const refused = await run(['validate', '--dir', dir], 'not-a-key');
    assert.equal(refused.status, 1);
    assert.match(
      refused.err[0],
      /^orrery resources: cannot list the view sets on 127\.0\.0\.1:\d+: invalid key \(pass --key or set ORRERY_API_KEY\)$/,
    );
    // A reader's key may validate, not plan: a plan's steps come from the ledger and the served publication,
    // which span every team's entries. The refusal says what the command needs and what the reader can run.
    const valid = join(dir, 'valid');
    mkdirSync(join(valid, 'resources'), { recursive: true });
    writeFileSync(
      join(valid, 'resources', 'logs.resources.json'),
      JSON.stringify({
        resources: { level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } } },
      }),
    );
    for (const [args, program, command, need] of [
      [
        ['plan', '--dir', valid],
        'resources',
        'resources plan',
        'it compares the files with the resource ledger and the served publication',
      ],
      [
        ['--dir', valid, '--dry-run'],
        'publish',
        'publish --dry-run',
        'its plan compares the files with the resource ledger and the served publication',
      ],
      [['status'], 'resources', 'resources status', 'it prints the resource ledger'],
    ] as const) {
      const out: string[] = [];
      const err: string[] = [];
      const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: readerKey.key };
      const status = await runResourcesCli(args, { env, out: (l) => out.push(l), err: (l) => err.push(l) }, program);
      assert.deepEqual({ status, out, lines: err.length }, { status: 1, out: [], lines: 1 }, command);
      assert.match(
        err[0],
        new RegExp(
          `^orrery ${program}: 'orrery ${command}' needs an admin key: ${need} \\(.* on 127\\.0\\.0\\.1:\\d+: permission denied: .*\\); pass an admin's key with --key or ORRERY_API_KEY, or run 'orrery resources validate --dir <folder>', which checks the files and what the server's plan would omit with any key$`,
        ),
        command,
      );
    }
    // An admin's publish refused for the server's rights is not told to use an admin key: the store cannot be
    // written under resources/ (a file stands there, which stops root too).
    const store = join(fixture.orrery.dataDir, 'lake', 'resources');
    rmSync(store, { recursive: true, force: true });
    writeFileSync(store, '');
    try {
      const out: string[] = [];
      const err: string[] = [];
      const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
      const status = await runResourcesCli(
        ['--dir', valid],
        { env, out: (l) => out.push(l), err: (l) => err.push(l) },
        'publish',
      );
      assert.equal(status, 1);
      assert.match(
        err[0],
        /^orrery publish: failed on 127\.0\.0\.1:\d+: installing needs: write access to the object store \(/,
      );
    } finally {
      rmSync(store);
    }
    const missing = await run(['validate', '--dir', join(dir, 'nowhere')]);
    assert.deepEqual(missing, {
      status: 2,
      out: [],
      err: [`orrery resources: folder '${join(dir, 'nowhere')}' does not exist`],
    });
    const usage = await run(['validate']);
    assert.deepEqual(usage.err, [
      "orrery resources: 'validate' needs --dir <folder>",
      "run 'orrery resources help' for usage",
    ]);
  });
});
