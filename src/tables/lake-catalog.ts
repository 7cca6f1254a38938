import type { MetadataStore } from '../metadata/index.js';
import { stripComments } from './series-statements.js';

/**
 * The DuckLake catalog series tables live in, as the engine attaches it. The name is Orrery's
 * own: statements never name it (see `namesLakeInternals`); series tables reach queries as
 * views in the user catalog, filtered for the caller.
 */
export const lakeCatalog = '__orrery_lake';

/** The Postgres schema DuckLake keeps its catalog tables in, next to Orrery's metadata. */
export const lakeMetadataSchema = 'ducklake';

const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** Makes the Postgres schema DuckLake writes its catalog into; idempotent, safe for servers starting together. */
export async function prepareLakeMetadata(metadata: MetadataStore): Promise<void> {
  await metadata.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('orrery_ducklake_schema', 0))`);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${lakeMetadataSchema}`);
  });
}

/**
 * The statement that attaches the DuckLake catalog (in Postgres) with its data files under
 * `dataPath`; the engine runs it at start-up, before its configuration is locked.
 */
export function attachLakeSql(connectionString: string, dataPath: string): string {
  return (
    `ATTACH ${quoteLiteral(`ducklake:postgres:${connectionString}`)} AS ${lakeCatalog} ` +
    `(DATA_PATH ${quoteLiteral(dataPath.endsWith('/') ? dataPath : `${dataPath}/`)}, METADATA_SCHEMA ${quoteLiteral(lakeMetadataSchema)})`
  );
}

/**
 * True when statement text names DuckLake's internals: the attached catalogs (the lake, an ingest's stream and
 * DuckLake's own metadata database), DuckLake's table functions, or the postgres extension's
 * functions, which would reach Orrery's Postgres directly. Checked on the raw text, before
 * any parse, for every key: a literal or identifier naming them anywhere is refused.
 */
export function namesLakeInternals(text: string): string | null {
  const match = /(__orrery_lake|__orrery_ingest\w*|__ducklake_metadata\w*|\bducklake_\w*|\bpostgres_\w*)/i.exec(text);
  return match ? match[1] : null;
}

/**
 * True for ATTACH and DETACH, refused for every key: the databases an engine sees are the ones
 * Orrery attached at start-up (an attached file inside the lake would be written by DuckDB, and
 * a detached lake would stop series tables for everyone).
 */
export function attachesDatabases(text: string): boolean {
  return /^(ATTACH|DETACH)\b/i.test(stripComments(text));
}
