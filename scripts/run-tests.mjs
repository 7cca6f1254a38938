// Lints (ESLint with typescript-eslint's type-aware rules), checks the formatting (Prettier), then runs every compiled *.test.js under
// dist/test with node's test runner, one file at a time, then the statement suites once more with
// the native addon off (ORRERY_NATIVE=off), so the JavaScript converter's and the JavaScript ingest's
// paths are held to the same answers and errors, then three statement case files once more on servers where
// test/sql/publication/'s resources (stored column, indexes, projection) are published (ORRERY_SQL_CASES_RESOURCES:
// the answers with resources are those without), then the lakehouse suites once more on an s3:// lake
// (a real S3-compatible server, scripts/s3-server.mjs; ORRERY_TEST_S3 tells the fixtures where).
// Each file runs in a process of its own with a deadline (scripts/test-files.mjs): ORRERY_TEST_FILE_DEADLINE_SECONDS,
// 20 minutes by default, about 3.5 times the slowest file of a whole CI run (sql/sql-cases.test.js, ~340 s of a
// 60-minute run), so that a file hung on a hook or a child fails the run, named, well within CI's 90 minutes.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { startS3Server } from './s3-server.mjs';
import { runTestFiles } from './test-files.mjs';

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
// Ingestion, materialization, queries with audiences, retention, admin functions, index pruning, stored columns, text
// indexes, projections and partition files gone from the store, lean for CI time.
const lakehouseSuites = [
  'ingestion/otlp-whole-request.test.js',
  'ingestion/otlp-group-commit.test.js',
  'lakehouse/daemon.test.js',
  'lakehouse/admin-functions.test.js',
  'lakehouse/missing-partition.test.js',
  'lakehouse/security.test.js',
  'lakehouse/time-filters.test.js',
  'resources/index-pruning.e2e.test.js',
  'resources/stored-columns.e2e.test.js',
  'resources/text-index.e2e.test.js',
  'resources/projections.e2e.test.js',
].map((f) => join(testDir, f));

const onS3 = async (label, testFiles) => {
  const s3 = await startS3Server();
  try {
    return await run(label, testFiles, { ORRERY_TEST_S3: JSON.stringify({ bucket: s3.bucket, env: s3.env }) });
  } finally {
    await s3.close();
  }
};

const deadlineSeconds = Number(process.env.ORRERY_TEST_FILE_DEADLINE_SECONDS || 1200);
if (!(deadlineSeconds > 0)) {
  console.error(
    `ORRERY_TEST_FILE_DEADLINE_SECONDS must be a positive number of seconds, not '${process.env.ORRERY_TEST_FILE_DEADLINE_SECONDS}'`,
  );
  process.exit(2);
}
// npm test's own arguments (e.g. --test-name-pattern=…) go to each file's node.
const run = (label, testFiles, env) =>
  runTestFiles(label, testFiles, { env, nodeArgs: process.argv.slice(2), deadlineMs: deadlineSeconds * 1000, root });
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
  (await run('every suite', files, {})) ||
  (await run('statement suites with ORRERY_NATIVE=off', statementSuites, { ORRERY_NATIVE: 'off' })) ||
  (await run('statement cases with resources published', [join(testDir, 'sql', 'sql-cases.test.js')], {
    ORRERY_SQL_CASES_RESOURCES: 'on',
  })) ||
  (await onS3('lakehouse suites on an s3:// lake', lakehouseSuites));
process.exit(status);
