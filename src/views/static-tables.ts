import { readdir } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { viewErrors } from './errors.js';
import { quoteIdentifier, quoteLiteral } from './view-session.js';

// MICROMEGAS_STATIC_TABLES_URL: a folder of CSV, JSON and Parquet files, each a read-only
// table named after its file, for queries and view definitions alike.

const readers: Record<string, string> = {
  '.csv': 'read_csv',
  '.tsv': 'read_csv',
  '.json': 'read_json',
  '.jsonl': 'read_json',
  '.ndjson': 'read_json',
  '.parquet': 'read_parquet',
};

export interface StaticTable {
  readonly name: string;
  readonly path: string;
  readonly reader: string;
}

/** The tables of a static tables folder (`file://` URL), sorted by name. */
export async function findStaticTables(
  url: string,
): Promise<{ folder: string; tables: StaticTable[]; skipped: string[] }> {
  const folder = fileURLToPath(url);
  let entries;
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch (error) {
    throw viewErrors.error(
      'STATIC_TABLES_UNREADABLE',
      `MICROMEGAS_STATIC_TABLES_URL: cannot read ${folder}: ${(error as Error).message}`,
    );
  }
  const tables: StaticTable[] = [];
  const skipped: string[] = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const extension = extname(entry.name).toLowerCase();
    const reader = readers[extension];
    const name = entry.name.slice(0, entry.name.length - extension.length);
    if (!reader || !/^[a-z_][a-z0-9_]{0,254}$/.test(name) || name.startsWith('__')) {
      skipped.push(entry.name);
      continue;
    }
    tables.push({ name, path: join(folder, entry.name), reader });
  }
  return { folder, tables: tables.sort((a, b) => a.name.localeCompare(b.name)), skipped };
}

/** Statements that expose each static table as a view of the user catalog. */
export function staticTableStatements(tables: readonly StaticTable[]): string[] {
  return tables.map(
    (t) => `CREATE OR REPLACE VIEW ${quoteIdentifier(t.name)} AS SELECT * FROM ${t.reader}(${quoteLiteral(t.path)})`,
  );
}
