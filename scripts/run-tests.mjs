// Lints (ESLint with typescript-eslint's type-aware rules), checks the formatting (Prettier), then runs every compiled *.test.js under
// dist/test with node's test runner (Node 20 takes no globs), then the statement suites once more with
// the native addon off (ORRERY_NATIVE=off), so the JavaScript converter's and the JavaScript ingest's
// paths are held to the same answers and errors.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const testDir = join(root, 'dist', 'test');
const files = readdirSync(testDir, { recursive: true, withFileTypes: true })
  .filter((entry) => entry.isFile() && entry.name.endsWith('.test.js'))
  .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
  .sort();
const statementSuites = [
  'sql/sql-cases.test.js',
  'flight/statements.test.js',
  'flight/prepared.test.js',
  'tables/series-ingest.test.js',
].map((f) => join(testDir, f));

const run = (label, testFiles, env) => {
  console.log(`# ${label}`);
  const result = spawnSync(
    process.execPath,
    ['--test', '--test-concurrency=1', ...process.argv.slice(2), ...testFiles],
    {
      stdio: 'inherit',
      env: { ...process.env, ...env },
    },
  );
  return result.status ?? 1;
};
const eslint = () => {
  console.log('# eslint');
  return (
    spawnSync(process.execPath, [join(root, 'node_modules', 'eslint', 'bin', 'eslint.js'), '.'], {
      cwd: root,
      stdio: 'inherit',
    }).status ?? 1
  );
};
const prettier = () => {
  console.log('# prettier --check');
  const cli = join(root, 'node_modules', 'prettier', 'bin', 'prettier.cjs');
  return spawnSync(process.execPath, [cli, '--check', '.'], { cwd: root, stdio: 'inherit' }).status ?? 1;
};
const status =
  eslint() ||
  prettier() ||
  run('every suite', files, {}) ||
  run('statement suites with ORRERY_NATIVE=off', statementSuites, { ORRERY_NATIVE: 'off' });
process.exit(status);
