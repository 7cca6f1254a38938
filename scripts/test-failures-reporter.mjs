// A node:test reporter that prints, after everything else, each failed test with its file and its error: CI keeps
// only the tail of a run's output, and a failure 2,000 tests up is otherwise out of sight.
import { inspect } from 'node:util';

export default async function* failures(source) {
  const failed = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const error = event.data.details?.error;
    // A suite fails because a test in it failed: that test is listed already.
    if (error?.failureType === 'subtestsFailed') continue;
    failed.push({ name: event.data.name, at: `${event.data.file}:${event.data.line}`, error: error?.cause ?? error });
  }
  if (failed.length === 0) return;
  yield `\n# ${failed.length} failed:\n`;
  for (const { name, at, error } of failed) {
    yield `# FAILED ${name} (${at})\n`;
    for (const line of inspect(error, { depth: 3 }).split('\n').slice(0, 30)) yield `#   ${line}\n`;
  }
}
