// npm test's runner (scripts/test-files.mjs): a test file still running at its deadline fails the run, named, with
// the test under way, what its event loop waits on and the tail of its output, and is killed with every process it
// started, its own group's and a detached one's; the files before and after it run as usual.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isRunning } from '../metadata/fixtures.js';

const runner = fileURLToPath(new URL('../../../scripts/test-files.mjs', import.meta.url));

describe('a test file past its deadline (npm test)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-deadline-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('fails the run with its name, its test under way and its output, and is killed with its processes', () => {
    writeFileSync(join(dir, 'a-passes.test.mjs'), `import { it } from 'node:test';\nit('passes', () => {});\n`);
    writeFileSync(
      join(dir, 'b-hangs.test.mjs'),
      `import { spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
describe('a suite waiting on its child', () => {
  let child;
  after(() => new Promise((resolve) => child.once('exit', resolve)));
  it('starts a child and a detached one', () => {
    const forever = ['-e', 'setInterval(() => {}, 1000)'];
    child = spawn(process.execPath, forever, { stdio: 'ignore' });
    const detached = spawn(process.execPath, forever, { stdio: 'ignore', detached: true });
    detached.unref();
    console.log('children', child.pid, detached.pid);
  });
  it('never ends', () => new Promise(() => {}));
});
`,
    );
    writeFileSync(join(dir, 'c-passes.test.mjs'), `import { it } from 'node:test';\nit('passes too', () => {});\n`);
    // The passing files run under the same deadline, and a node process can take seconds to start on a loaded CI
    // machine: 15 s keeps them clear of it.
    const script = `import { runTestFiles } from ${JSON.stringify(runner)};
const files = ['a-passes', 'b-hangs', 'c-passes'].map((name) => ${JSON.stringify(dir)} + '/' + name + '.test.mjs');
process.exitCode = await runTestFiles('trial', files, { deadlineMs: 15_000, root: ${JSON.stringify(dir)} });`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    const output = run.stdout + run.stderr;
    assert.equal(run.status, 1, output);
    const summary = output.slice(output.indexOf('# trial: '));
    assert.match(summary, /^# trial: 3 files in \d+ s, 1 failed; tests 2, suites 0, pass 2, fail 0/);
    assert.match(
      summary,
      /# FILE FAILED b-hangs\.test\.mjs: still running after \d+ s, past its deadline of 15 s \(ORRERY_TEST_FILE_DEADLINE_SECONDS\): killed with its processes\n/,
    );
    assert.match(
      summary,
      /tests under way:\n# {5}a suite waiting on its child \(.*b-hangs\.test\.mjs:3\)\n# {7}never ends/,
    );
    const [, child, detached] = /children (\d+) (\d+)/.exec(output)!.map(Number);
    assert.match(summary, new RegExp(`handles the event loop waits on:\n(#.*\n)*?# {5}process pid ${child}\n`));
    assert.match(summary, new RegExp(`pid ${child} \\(parent \\d+, group \\d+\\) state S`));
    assert.match(summary, new RegExp(`pid ${detached} \\(parent \\d+, group ${detached}\\) state S`));
    assert.match(summary, /the last \d+ lines of its output:\n(#.*\n)*# {5}children \d+ \d+\n/);
    assert.deepEqual([isRunning(child), isRunning(detached)], [false, false]);
    assert.match(output, /ok 1 - passes too/);
  });
});
