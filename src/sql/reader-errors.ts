// What an error tells a key that is not an admin. DuckDB's messages quote the SQL it was binding
// or running and name the files it read; for a view set those are Orrery's own statements (file
// lists, the audience filter) and paths in the server's folders. A non-admin sees object keys
// instead of paths, context lines only when they quote its own statement, and no internal SQL.

/** Words of Orrery's set-up SQL that a statement of the caller's own would not hold. */
const internalMarkers = ['read_parquet', 'filename = true', 'temp view', 'temp macro', 'temp table', '__list_'];

/** A DuckDB context block: a blank line, `LINE n: <text>`, and the caret line under it. */
const contextBlock = /\n\s*\nLINE \d+: (.*)(\n *\^)?/g;

/** The error as a non-admin may see it (the same object, its message rewritten). */
export function readerError(error: unknown, statementText: string, folders: readonly string[]): unknown {
  if (!(error instanceof Error)) return error;
  let message = error.message;
  for (const folder of folders.map((f) => f.replace(/\/+$/, '')).filter((f) => f !== '')) {
    message = message.replaceAll(`${folder}/`, '').replaceAll(folder, '<server folder>');
  }
  message = message.replace(contextBlock, (block, line: string) => {
    const quoted = line.replace(/^\.\.\./, '').replace(/\.\.\.$/, '');
    return statementText.includes(quoted) ? block : '';
  });
  const own = statementText.toLowerCase();
  if (internalMarkers.some((marker) => message.toLowerCase().includes(marker) && !own.includes(marker))) {
    message =
      'the statement failed inside a view set (details are withheld from keys that are not admins: they show internal SQL)';
  }
  error.message = message;
  return error;
}
