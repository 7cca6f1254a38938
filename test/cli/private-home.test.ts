// Issue 15 item 6: `git clone … ~/orrery && npm start` as root with ~ at mode 700. The embedded
// Postgres runs as the `postgres` OS user, which cannot enter ~: neither the cluster under ./data nor
// the binaries under node_modules. The clone here is a hard-linked copy of this one (same files,
// made in a second) inside a private folder; the server starts, says where the cluster and the
// binaries went, is ready, and stops on SIGTERM with exit 0; the next start finds both again.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const clone = new URL('../../../', import.meta.url).pathname.replace(/\/$/, '');
const asRoot = process.getuid?.() === 0;

/** Starts `orrery all` in `dir` until /ready answers 200, then stops it with SIGTERM; the lines it logged. */
async function startAndStop(
  dir: string,
  env: Record<string, string>,
): Promise<{ output: string; code: number | null }> {
  const child = spawn(process.execPath, [join(dir, 'dist/src/orrery.cjs'), 'all'], {
    cwd: dir,
    env: { ...process.env, ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0', ORRERY_HTTP_ADDR: '127.0.0.1:0', ...env },
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  try {
    const deadline = Date.now() + 120_000;
    let port: string | undefined;
    while (!(port = /HTTP \(OTLP[^\n]* listening on [\d.]+:(\d+)/.exec(output)?.[1])) {
      if (Date.now() > deadline || child.exitCode !== null) assert.fail(`no start within 120 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await fetch(`http://127.0.0.1:${port}/ready`)).status, 200, output);
  } finally {
    child.kill('SIGTERM');
  }
  return { output, code: await exited };
}

describe('a clone in a private home, as root (issue 15 item 6)', { skip: !asRoot && 'not running as root' }, () => {
  it('starts on embedded defaults, keeps the cluster and the binaries where Postgres can reach them, and says where', async () => {
    const home = mkdtempSync(join(tmpdir(), 'orrery-home-'));
    const reachable = mkdtempSync(join(tmpdir(), 'orrery-reachable-'));
    try {
      chmodSync(home, 0o700);
      chmodSync(reachable, 0o755);
      const dir = join(home, 'orrery');
      mkdirSync(dir);
      for (const part of readdirSync(clone).filter((name) => !['.git', 'data'].includes(name)))
        assert.equal(spawnSync('cp', ['-al', join(clone, part), dir]).status, 0, `cp -al ${part}`);
      const root = join(reachable, 'orrery');
      const env = { ORRERY_EMBEDDED_POSTGRES_ROOT: root, MICROMEGAS_API_KEYS: '' };

      const first = await startAndStop(dir, env);
      assert.equal(first.code, 0, first.output);
      const cluster = /its cluster is kept in (\S+) instead/.exec(first.output)?.[1];
      assert.match(cluster ?? '', new RegExp(`^${root}/clusters/[0-9a-f]{16}/postgres$`), first.output);
      assert.match(first.output, new RegExp(`copied the Postgres binaries to ${root}/postgres-`));
      assert.match(first.output, /created the embedded Postgres cluster/);
      assert.equal(statSync(home).mode & 0o777, 0o700, 'the home keeps its mode');

      const second = await startAndStop(dir, env);
      assert.equal(second.code, 0, second.output);
      assert.ok(second.output.includes(`its cluster is kept in ${cluster} instead`), second.output);
      assert.doesNotMatch(second.output, /copied the Postgres binaries|created the embedded Postgres cluster/);
    } finally {
      rmSync(home, { recursive: true, force: true });
      rmSync(reachable, { recursive: true, force: true });
    }
  });
});
