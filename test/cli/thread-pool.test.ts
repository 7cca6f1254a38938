// Issue 9, item 3: the `orrery` command (dist/src/orrery.cjs) gives libuv's thread pool a thread per
// statement that may run at once plus 4, before anything uses the pool; started another way with a
// smaller pool, the server says so. Each run stops at once on an unreachable metadata database,
// after the check.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const launcher = new URL('../../src/orrery.cjs', import.meta.url).pathname;
const cli = new URL('../../src/cli.js', import.meta.url).pathname;
const warning = /WARN libuv's thread pool has (\d+) threads, fewer than ORRERY_MAX_CONCURRENT_QUERIES \+ 4/;

function start(entry: string, env: Record<string, string>): string {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-pool-'));
  chmodSync(dataDir, 0o755);
  try {
    const inherited = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !/^(ORRERY|MICROMEGAS)_|^UV_THREADPOOL_SIZE$/.test(name)),
    );
    const run = spawnSync(process.execPath, [entry, 'serve'], {
      env: {
        ...inherited,
        ORRERY_DATA_DIR: dataDir,
        ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
        ORRERY_HTTP_ADDR: '127.0.0.1:0',
        MICROMEGAS_API_KEYS: JSON.stringify([{ name: 'admin', key: 'admin-key-0123' }]),
        MICROMEGAS_SQL_CONNECTION_STRING: 'postgres://orrery@127.0.0.1:1/telemetry',
        ...env,
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 1, run.stderr);
    return run.stdout;
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('issue 9: the thread pool of the orrery command', () => {
  it('is sized by the launcher, for the default and for ORRERY_MAX_CONCURRENT_QUERIES', () => {
    assert.doesNotMatch(start(launcher, {}), warning);
    assert.doesNotMatch(start(launcher, { ORRERY_MAX_CONCURRENT_QUERIES: '60' }), warning);
  });

  it("is reported when too small: an explicit UV_THREADPOOL_SIZE, or the ES module entry with libuv's default", () => {
    assert.equal(warning.exec(start(launcher, { UV_THREADPOOL_SIZE: '8' }))?.[1], '8');
    assert.equal(warning.exec(start(cli, {}))?.[1], '4');
  });
});
