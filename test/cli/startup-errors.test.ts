// What `orrery` prints when it cannot start: one line saying why, no stack trace, exit 1 (2 for a bad setting).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';

const cli = new URL('../../src/cli.js', import.meta.url).pathname;
/** The `orrery` command as installed (it sizes libuv's thread pool, then runs cli.js). */
const orrery = new URL('../../src/orrery.cjs', import.meta.url).pathname;

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
      assert.match(
        run.stderr,
        /^orrery: failed to start: cannot connect to the metadata database .*127\.0\.0\.1:1.*ECONNREFUSED/m,
      );
      assert.doesNotMatch(run.stderr, /^\s+at /m);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses an ORRERY_NATIVE other than auto, on or off, naming the variable', () => {
    const run = spawnSync(process.execPath, [cli, 'serve'], {
      env: {
        ...process.env,
        ORRERY_NATIVE: 'maybe',
        ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
        ORRERY_HTTP_ADDR: '127.0.0.1:0',
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(run.status, 2);
    assert.equal(run.stderr.trim(), "orrery: ORRERY_NATIVE must be one of auto, on, off, got 'maybe'");
  });

  it('issue 11: a failed start prints no connection hints and leaves no generated key behind', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'orrery-start-'));
    chmodSync(dataDir, 0o755);
    try {
      const run = spawnSync(process.execPath, [cli, 'serve'], {
        env: {
          ...process.env,
          ORRERY_DATA_DIR: dataDir,
          ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
          ORRERY_HTTP_ADDR: '127.0.0.1:0',
          MICROMEGAS_API_KEYS: '',
          MICROMEGAS_SQL_CONNECTION_STRING: 'postgres://orrery@127.0.0.1:1/telemetry',
        },
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(run.status, 1);
      assert.match(run.stderr, /^orrery: failed to start: cannot connect to the metadata database/m);
      assert.doesNotMatch(run.stdout + run.stderr, /Connect with|jdbc:arrow-flight-sql/);
      assert.equal(existsSync(join(dataDir, 'credentials.json')), false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('issue 11: SIGTERM stops every role and the embedded Postgres without an ERROR or WARN line', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'orrery-stop-'));
    chmodSync(dataDir, 0o755);
    try {
      const child = spawn(process.execPath, [orrery, 'all'], {
        env: {
          ...process.env,
          ORRERY_DATA_DIR: dataDir,
          ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
          ORRERY_HTTP_ADDR: '127.0.0.1:0',
          MICROMEGAS_API_KEYS: '',
        },
      });
      let output = '';
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
      await new Promise<void>((ready, fail) => {
        const timer = setTimeout(() => fail(new Error(`no start within 120 s:\n${output}`)), 120_000);
        const read = (chunk: Buffer): void => {
          output += chunk.toString();
          if (/Connect with/.test(output)) {
            clearTimeout(timer);
            ready();
          }
        };
        child.stdout.on('data', read);
        child.stderr.on('data', read);
      });
      assert.match(output, /HTTP \(OTLP.*listening[\s\S]*Connect with/, 'the hints come once the server listens');
      await new Promise((r) => setTimeout(r, 5000)); // the daemon's passes hold connections by now
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.doesNotMatch(output, / (ERROR|WARN) /, output);
      // The hints name the port the server listens on (here not the configured 0).
      const listening = /Flight SQL listening on 127\.0\.0\.1:(\d+)/.exec(output)?.[1];
      assert.ok(listening && listening !== '0', output);
      assert.match(output, new RegExp(`jdbc:arrow-flight-sql://127\\.0\\.0\\.1:${listening}\\?`));
      assert.match(output, new RegExp(`grpc://127\\.0\\.0\\.1:${listening}"`));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // Issue 8: a setting that cannot be used stops start-up in configuration loading, before anything
  // starts (no Postgres, no DuckDB): one line naming the variable, exit 2.
  for (const [variable, value, expected] of [
    [
      'MICROMEGAS_STATIC_TABLES_URL',
      's3://bucket/tables',
      "orrery: MICROMEGAS_STATIC_TABLES_URL: only file:// URLs are supported, got 's3://bucket/tables'",
    ],
    ['MICROMEGAS_STATIC_TABLES_URL', 'not a url', "orrery: MICROMEGAS_STATIC_TABLES_URL: not a URL: 'not a url'"],
    [
      'MICROMEGAS_STATIC_TABLES_URL',
      'file:///no/such/orrery/folder',
      'orrery: MICROMEGAS_STATIC_TABLES_URL: /no/such/orrery/folder is not a folder',
    ],
    [
      'MICROMEGAS_OBJECT_STORE_URI',
      'gs://bucket/lake',
      "orrery: MICROMEGAS_OBJECT_STORE_URI: only file:// and s3:// URLs are supported, got 'gs://bucket/lake'",
    ],
    // Issue 15: an s3:// store's bucket, prefix and credentials are checked before anything starts.
    [
      'MICROMEGAS_OBJECT_STORE_URI',
      's3://Not_A_Bucket/lake',
      "orrery: MICROMEGAS_OBJECT_STORE_URI: 'Not_A_Bucket' is not an S3 bucket name (in 's3://Not_A_Bucket/lake')",
    ],
    [
      'MICROMEGAS_OBJECT_STORE_URI',
      's3://bucket/lake/../other',
      "orrery: MICROMEGAS_OBJECT_STORE_URI: the prefix of 's3://bucket/lake/../other' may hold only letters, digits and . _ = + - between slashes",
    ],
    [
      'MICROMEGAS_OBJECT_STORE_URI',
      's3://bucket/lake',
      'orrery: MICROMEGAS_OBJECT_STORE_URI is s3://: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set',
    ],
    [
      'MICROMEGAS_OBJECT_STORE_URI',
      'file://host/lake',
      'orrery: MICROMEGAS_OBJECT_STORE_URI: File URL host must be "localhost" or empty on linux',
    ],
    [
      'MICROMEGAS_SQL_CONNECTION_STRING',
      'mysql://db/x',
      'orrery: MICROMEGAS_SQL_CONNECTION_STRING must be a postgres://user:password@host:port/database URL',
    ],
    [
      'ORRERY_DUCKDB_MEMORY_LIMIT',
      'lots',
      "orrery: ORRERY_DUCKDB_MEMORY_LIMIT must be a size such as 4GB or 512MiB, got 'lots'",
    ],
  ]) {
    it(`refuses ${variable}=${value} before starting anything`, () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'orrery-start-'));
      try {
        const run = spawnSync(process.execPath, [cli, 'serve'], {
          env: {
            ...process.env,
            ORRERY_DATA_DIR: dataDir,
            ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
            ORRERY_HTTP_ADDR: '127.0.0.1:0',
            [variable]: value,
          },
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(run.stderr, `${expected}\n`);
        assert.equal(run.status, 2);
        assert.deepEqual(readdirSync(dataDir), [], 'nothing was created in the data folder');
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  }
});
