// A node:test reporter for scripts/test-files.mjs, next to the TAP one. As the file runs, a line as each test starts
// and ends (`start`/`end`, nesting, place, name): they name the tests under way in a file stopped at its deadline,
// since TAP prints a test only once it ended. At the end, each failed test with its place and its error: CI keeps only
// the tail of a run's output, and a failure 2,000 tests up is otherwise out of sight.
import { inspect } from 'node:util';

export default async function* fileReporter(source) {
  const failed = [];
  for await (const { type, data } of source) {
    if (type === 'test:dequeue' || type === 'test:pass' || type === 'test:fail')
      yield `${type === 'test:dequeue' ? 'start' : 'end'}\t${data.nesting}\t${data.file}:${data.line}\t${data.name}\n`;
    if (type !== 'test:fail') continue;
    const error = data.details?.error;
    // A suite fails because a test in it failed: that test is listed already.
    if (error?.failureType === 'subtestsFailed') continue;
    failed.push({ name: data.name, at: `${data.file}:${data.line}`, error: error?.cause ?? error });
  }
  if (failed.length === 0) return;
  yield `\n# ${failed.length} failed:\n`;
  for (const { name, at, error } of failed) {
    yield `# FAILED ${name} (${at})\n`;
    for (const line of inspect(error, { depth: 3 }).split('\n').slice(0, 30)) yield `#   ${line}\n`;
  }
}
