import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ViewsCliError } from './errors.js';
import { viewNamePattern } from './view-statement.js';

/** The `.sql` files of a folder: file name without `.sql` → text. Other files and sub-folders are ignored. */
export async function readViewFiles(dir: string): Promise<Map<string, string>> {
  const info = await stat(dir).catch(() => null);
  if (!info?.isDirectory()) throw new ViewsCliError('VIEWS_DIR_NOT_FOUND', `folder '${dir}' does not exist`);
  const files = new Map<string, string>();
  const entries = await readdir(dir, { withFileTypes: true }).catch((error: Error) => {
    throw new ViewsCliError('VIEWS_FILE_ERROR', `cannot read folder '${dir}': ${error.message}`);
  });
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!entry.isFile() || !entry.name.endsWith('.sql')) continue;
    const path = join(dir, entry.name);
    const text = await readFile(path, 'utf8').catch((error: Error) => {
      throw new ViewsCliError('VIEWS_FILE_ERROR', `cannot read '${path}': ${error.message}`);
    });
    files.set(entry.name.slice(0, -'.sql'.length), text);
  }
  return files;
}

/** What pull did with one definition. */
export type PullOutcome = 'new' | 'updated' | 'unchanged' | 'skipped';

/**
 * Writes `<dir>/<name>.sql` with the exact text and a trailing newline, creating the folder when
 * needed. Never deletes; skips a name that is not a safe file name.
 */
export async function writeViewFile(dir: string, name: string, definitionSql: string): Promise<PullOutcome> {
  if (!viewNamePattern.test(name)) return 'skipped';
  const path = join(dir, `${name}.sql`);
  const text = `${definitionSql}\n`;
  try {
    await mkdir(dir, { recursive: true });
    const previous = await readFile(path, 'utf8').catch(() => null);
    if (previous === text) return 'unchanged';
    await writeFile(path, text, 'utf8');
    return previous === null ? 'new' : 'updated';
  } catch (error) {
    throw new ViewsCliError('VIEWS_FILE_ERROR', `cannot write '${path}': ${(error as Error).message}`);
  }
}
