// `orrery views` command line: options, defaults from the environment, usage errors, exit statuses.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parseViewsArgs, runViewsCli, viewsUsage } from '../../src/views-cli/index.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

async function run(
  argv: string[],
  env: Record<string, string> = {},
): Promise<{ status: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const status = await runViewsCli(argv, { env, out: (l) => out.push(l), err: (l) => err.push(l) });
  return { status, out, err };
}

describe('views command line', () => {
  it('reads options, with the server and key from the environment by default', () => {
    const env = { ORRERY_FLIGHT_SQL_ADDR: 'orrery.internal:50051', ORRERY_API_KEY: 'env-key' };
    assert.deepEqual(parseViewsArgs(['plan', '--dir', 'views', '--prune'], env), {
      command: 'plan',
      dir: 'views',
      prune: true,
      name: undefined,
      server: 'orrery.internal:50051',
      key: 'env-key',
      tls: false,
    });
    assert.deepEqual(parseViewsArgs(['show', 'log_stats', '--server', '10.0.0.1:6000', '--key', 'k', '--tls'], env), {
      command: 'show',
      dir: undefined,
      prune: false,
      name: 'log_stats',
      server: '10.0.0.1:6000',
      key: 'k',
      tls: true,
    });
    assert.equal(parseViewsArgs(['list'], {}).server, '127.0.0.1:50051');
    assert.equal(parseViewsArgs(['list'], {}).key, undefined);
  });

  it('prints the usage for help, -h and no command', async () => {
    for (const argv of [['help'], ['-h'], [], ['plan', '--help']]) {
      assert.deepEqual(await run(argv), { status: 0, out: [viewsUsage], err: [] });
    }
  });

  it('refuses bad usage with exit status 2 and a message naming the problem', async () => {
    const cases: Array<[string[], string]> = [
      [['deploy'], "unknown command 'deploy'"],
      [['plan'], "'plan' needs --dir <folder>"],
      [['pull'], "'pull' needs --dir <folder>"],
      [['list', '--prune'], "option --prune does not apply to 'list'"],
      [['pull', '--dir', 'v', '--prune'], "option --prune does not apply to 'pull'"],
      [['show'], "'show' takes one view name"],
      [['show', 'a', 'b'], "'show' takes one view name"],
      [['list', 'extra'], "unexpected argument 'extra'"],
      [['list', '--server', 'no-port'], "server address 'no-port' is not host:port"],
      [['list', '--colour'], "unknown option '--colour'"],
      [['plan', '--dir'], 'option --dir needs a value'],
      [['list', '--tls=yes'], 'option --tls does not take a value'],
    ];
    for (const [argv, message] of cases) {
      assert.deepEqual(
        await run(argv),
        { status: 2, out: [], err: [`orrery views: ${message}`, "run 'orrery views help' for usage"] },
        argv.join(' '),
      );
    }
  });

  it('fails with exit status 1 and the gRPC status when the server cannot be reached', async () => {
    const { status, out, err } = await run(['list', '--server', '127.0.0.1:1', '--key', 'k']);
    assert.equal(status, 1);
    assert.deepEqual(out, []);
    assert.equal(err.length, 1);
    assert.match(
      err[0],
      /^orrery views: cannot list the view set definitions of 127\.0\.0\.1:1: UNAVAILABLE: cannot reach the Flight SQL server at 127\.0\.0\.1:1: .*ECONNREFUSED/,
    );
  });

  it('fails with exit status 1 when the --tls-ca file cannot be read', async () => {
    const { status, err } = await run(['list', '--tls-ca', '/nonexistent/ca.pem']);
    assert.equal(status, 1);
    assert.match(err[0], /^orrery views: cannot read --tls-ca '\/nonexistent\/ca\.pem': ENOENT/);
  });

  it('is wired into the orrery command', () => {
    const help = spawnSync(process.execPath, [cli, 'views', 'help'], { encoding: 'utf8' });
    assert.equal(help.status, 0);
    assert.equal(help.stdout, `${viewsUsage}\n`);
    const bad = spawnSync(process.execPath, [cli, 'views', 'deploy'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr, "orrery views: unknown command 'deploy'\nrun 'orrery views help' for usage\n");
  });
});
