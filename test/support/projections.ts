// What the projection tests read: the projections a result's provenance names, and a copy's rows.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Table } from 'apache-arrow';

/** The projections an admin's result says it read, undefined when none. */
export const projectionsOf = (table: Table): unknown => {
  const text = table.schema.metadata.get('orrery.provenance');
  return text === undefined ? undefined : (JSON.parse(text) as { projections?: unknown }).projections;
};

/**
 * The rows of `query(file)` over a projection's copy, read from a local copy of the object: the lake may be
 * an S3 bucket, which this DuckDB has no extension for.
 */
export async function copyRows(bytes: Uint8Array, query: (file: string) => string): Promise<unknown[][]> {
  const file = join(mkdtempSync(join(tmpdir(), 'orrery-projection-copy-')), 'copy.parquet');
  writeFileSync(file, bytes);
  const duck = await DuckDBInstance.create(':memory:');
  const connection = await duck.connect();
  try {
    return (await connection.runAndReadAll(query(file))).getRows();
  } finally {
    connection.closeSync();
    duck.closeSync();
    rmSync(dirname(file), { recursive: true, force: true });
  }
}

/** Asserts which of the queries an admin's result says read the projection of log_entries (the others: none). */
export async function assertReads(
  admin: { query(sql: string): Promise<Table> },
  queries: ReadonlyArray<readonly [string, boolean]>,
  projection: string,
): Promise<void> {
  for (const [sql, reads] of queries)
    assert.deepEqual(
      projectionsOf(await admin.query(sql)),
      reads ? [{ table: 'log_entries', projection }] : undefined,
      sql,
    );
}
