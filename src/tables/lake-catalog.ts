import type { MetadataQueries, MetadataStore } from '../metadata/index.js';
import type { WrittenObjects } from '../resources/index.js';
import { statementWords } from '../sql-text/index.js';
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
 * What a change to the lake's tables writes in Postgres (a resource installer's `writes`): DuckLake's catalog tables
 * (`ducklake.<table>`), in its schema, where it also makes a table for the rows it inlines.
 */
export async function lakeCatalogWrites(db: MetadataQueries): Promise<WrittenObjects> {
  const { rows } = await db.query<{ t: string }>(
    `SELECT format('%I.%I', schemaname, tablename) AS t FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`,
    [lakeMetadataSchema],
  );
  return { tables: rows.map((r) => r.t), schemas: [lakeMetadataSchema] };
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
 * functions, which would reach Orrery's Postgres directly; or the rollups' kept tails (in-memory
 * tables of every audience's rows, src/rollups/tail-values.ts). Checked on the raw text, before
 * any parse, for every key: a literal or identifier naming them anywhere is refused.
 */
export function namesLakeInternals(text: string): string | null {
  const match =
    /(__orrery_lake|__orrery_ingest\w*|__orrery_tail\w*|__ducklake_metadata\w*|\bducklake_\w*|\bpostgres_\w*)/i.exec(
      text,
    );
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

/**
 * Functions that run SQL (or read memory) that the statement's text does not show, so the text
 * checks above cannot see what they reach: `query('SELECT * FROM __orr' || 'ery_lake...')`.
 */
const hiddenSqlFunctions = new Set([
  'query',
  'query_table',
  'json_execute_serialized_sql',
  'import_database',
  'arrow_scan',
  'arrow_scan_dumb',
]);

/**
 * Why a statement could reach what `namesLakeInternals` guards without naming it, or null:
 * it calls a function that runs SQL built at run time or read from files, runs IMPORT DATABASE
 * (which runs the SQL files of a folder), or changes the search path (`SET search_path =
 * '__orr' || 'ery_lake.main'`, USE), after which bare names resolve in DuckLake's catalogs.
 * Refused for every key; read from the tokens, so literals and comments never count.
 */
export function reachesLakeIndirectly(text: string): string | null {
  const words = statementWords(text);
  if (!words) return null; // DuckDB's parser refuses it
  const { first, word } = words;
  if (word(first) === 'use') return 'USE changes where names resolve; name tables in full instead';
  if (word(first) === 'import' && word(first + 1) === 'database')
    return 'IMPORT DATABASE runs the SQL files of a folder';
  if (word(first) === 'set' || word(first) === 'reset') {
    const name = ['session', 'local', 'global'].includes(word(first + 1)) ? word(first + 2) : word(first + 1);
    if (name === 'search_path' || name === 'schema') return `SET ${name} changes where names resolve`;
  }
  for (let i = 0; i < words.length; i++) {
    const name = word(i);
    if (hiddenSqlFunctions.has(name) && words.called(i)) {
      return `${name}() runs SQL that the statement's text does not show`;
    }
  }
  return null;
}
