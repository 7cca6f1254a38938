// What `orrery` prints when it cannot start: one line saying why, no stack trace, exit 1 (2 for a bad setting).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const cli = new URL('../../src/cli.js', import.meta.url).pathname;

describe('startup errors', () => {
  it('names an unreachable metadata database in one line and exits 1', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'orrery-start-'));
    chmodSync(dataDir, 0o755);
    try {
      const run = spawnSync(process.execPath, [cli, 'serve'], {
        env: {
          ...process.env,
          ORRERY_DATA_DIR: dataDir,
          ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
          ORRERY_HTTP_ADDR: '127.0.0.1:0',
          MICROMEGAS_API_KEYS: JSON.stringify([{ name: 'admin', key: 'admin-key-0123' }]),
          MICROMEGAS_SQL_CONNECTION_STRING: 'postgres://orrery@127.0.0.1:1/telemetry',
        },
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(run.status, 1);
      assert.match(run.stderr, /^orrery: failed to start: cannot connect to the metadata database .*127\.0\.0\.1:1.*ECONNREFUSED/m);
      assert.doesNotMatch(run.stderr, /^\s+at /m);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses an ORRERY_NATIVE other than auto, on or off, naming the variable', () => {
    const run = spawnSync(process.execPath, [cli, 'serve'], {
      env: { ...process.env, ORRERY_NATIVE: 'maybe', ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0', ORRERY_HTTP_ADDR: '127.0.0.1:0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 2);
    assert.equal(run.stderr.trim(), "orrery: ORRERY_NATIVE must be one of auto, on, off, got 'maybe'");
  });
});
