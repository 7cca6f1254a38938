// What a test leaves behind when it ends early (cancelled at its suite's timeout, or failed halfway) must not keep
// its test file running: an `orrery serve` child it started and no hook stops (serve-refresh-jobs once sat 17 minutes
// at 0 % CPU that way, its serve alive, its file never ending), a Postgres client it holds when the suite's Postgres
// is closed. The child is gone once the file is; the Postgres closes.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pollUntil, sleep, startTestPostgres } from './lakehouse-fixtures.js';
import { isRunning } from '../metadata/fixtures.js';

const fixtures = new URL('./lakehouse-fixtures.js', import.meta.url).href;

describe("a test's leftovers do not keep its test file running", () => {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-child-left-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a serve child (OrreryChild) never stopped: the test process exits and the child is killed', async () => {
    // A test process in small: a Postgres and a serve child started as serve-refresh-jobs does, then nothing more.
    const script = `import { adminAndTeams, sharedEnv, startServeChild, startTestPostgres } from ${JSON.stringify(fixtures)};
const [admin] = adminAndTeams('left');
const postgres = await startTestPostgres();
const env = sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString,
  lakeDir: ${JSON.stringify(join(dir, 'lake'))} });
const { child } = await startServeChild({ ...env, ORRERY_DATA_DIR: ${JSON.stringify(join(dir, 'data'))} });
console.log('serve pid', child.child.pid);`;
    const test = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    test.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    test.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => test.once('exit', (code) => resolve(code)));
    const serve = await pollUntil(
      'the serve child started',
      async () => /serve pid (\d+)/.exec(output)?.[1],
      (pid) => pid !== undefined || test.exitCode !== null,
      { timeoutMs: 120_000, intervalMs: 100 },
    );
    assert.ok(serve, `the test process printed no serve pid:\n${output}`);
    const waited = new AbortController();
    const ended = await Promise.race([
      exited.then((code) => ({ code })),
      sleep(120_000, 'still running' as const, { signal: waited.signal }),
    ]);
    waited.abort();
    if (ended === 'still running') {
      // Ended here, so that the test process exits and stops its Postgres.
      process.kill(Number(serve), 'SIGKILL');
      await exited;
    }
    const how = typeof ended === 'string' ? ended : `exited with code ${ended.code}`;
    assert.deepEqual(ended, { code: 0 }, `the test process ${how} 120 s after its last statement:\n${output}`);
    await pollUntil(
      'the serve child gone',
      async () => isRunning(Number(serve)),
      (running) => !running,
      {
        timeoutMs: 30_000,
        intervalMs: 100,
      },
    );
  });

  it('a Postgres client never released: the Postgres closes all the same, ending it', async () => {
    const postgres = await startTestPostgres();
    const held = await postgres.pool.connect();
    const waited = new AbortController();
    const closed = await Promise.race([
      postgres.close().then(() => 'closed'),
      sleep(120_000, 'still closing' as const, { signal: waited.signal }),
    ]);
    waited.abort();
    if (closed !== 'closed') {
      held.release();
      await postgres.close();
    }
    assert.equal(closed, 'closed', 'the Postgres was still closing 120 s after close() with a client held');
    await assert.rejects(held.query('SELECT 1'));
  });
});
