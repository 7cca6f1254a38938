import type { OrreryError } from '../errors/index.js';
import { sqlErrors } from './errors.js';
import {
  isColumnsListing,
  isTablesListing,
  isTablesShow,
  type FunctionCall,
  type QueryShape,
  type RelationRef,
} from '../engine/index.js';
import { snouttimeCatalog } from '../views/index.js';
import { statementWords } from '../sql-text/index.js';

// What a key that is not an admin may put in a SELECT. The engine's sandbox keeps DuckDB
// away from files outside the lake; this keeps callers away from the lake's files
// themselves, so the only way to rows is through the audience-filtered view sets.

/** Table functions that compute rather than read anything. */
const harmlessTableFunctions = new Set(['range', 'generate_series', 'unnest', 'repeat', 'generate_subscripts']);

/** Qualifiers a relation or a function may be written with. */
const visibleCatalogs = new Set(['', 'orrery', 'temp']);
const functionCatalogs = new Set(['', 'orrery', 'system']);
const visibleSchemas = new Set(['', 'main']);

/**
 * The name a function call is judged by: its own on the search path, `snouttime.<name>` under the
 * spec's prefix (`snouttime.percentile`, `snouttime.main.percentile`), undefined elsewhere.
 */
function readerName(call: FunctionCall): string | undefined {
  const [catalog, schema, name] = [call.catalog, call.schema, call.name].map((part) => part.toLowerCase());
  if (functionCatalogs.has(catalog) && visibleSchemas.has(schema)) return name;
  const snouttime =
    (catalog === '' && schema === snouttimeCatalog) || (catalog === snouttimeCatalog && visibleSchemas.has(schema));
  return snouttime ? `${snouttimeCatalog}.${name}` : undefined;
}

/** What a non-admin may name: table functions, scalar and aggregate functions, relations. */
export interface ReaderCatalog {
  readonly tableFunctions: ReadonlySet<string>;
  readonly functions: ReadonlySet<string>;
  /** True when the relation, as written, is a view set or a table or view of the user catalog. */
  readable(relation: RelationRef): Promise<boolean>;
}

const denied = (message: string): OrreryError => sqlErrors.error('RELATION_DENIED', `permission denied: ${message}`);

/**
 * Refuses what a non-admin SELECT may not do: table functions that read files, metadata or SQL
 * text (read_parquet, parquet_metadata, duckdb_views, query, ...), functions that read the
 * engine's state (stats, current_setting, ...), relations that name files (replacement scans),
 * internal relations or anything but view sets and the user catalog's tables (DuckDB's own
 * catalog views such as pg_views or duckdb_views), and SHOW listings of the catalog.
 */
export async function checkReaderQuery(shape: QueryShape, catalog: ReaderCatalog): Promise<void> {
  for (const call of shape.tableFunctions) {
    const name = call.name.toLowerCase();
    if (!harmlessTableFunctions.has(name) && !catalog.tableFunctions.has(name)) {
      throw denied(`table function '${call.name}' is not available to this key`);
    }
  }
  for (const call of shape.functionCalls) {
    const qualified = [call.catalog, call.schema, call.name].filter(Boolean).join('.');
    const name = readerName(call);
    if (name === undefined || !catalog.functions.has(name)) {
      throw denied(`function '${qualified}' does not exist or is not available to this key`);
    }
  }
  // SHOW TABLES, information_schema.tables and information_schema.columns are answered from what the key can query.
  if (shape.catalogListings.some((listing) => !isTablesShow(listing)))
    throw denied("SHOW lists the engine's catalog; SHOW TABLES and list_view_sets() list what this key can query");
  for (const relation of shape.relations) {
    if (relation.cte || isTablesListing(relation) || isColumnsListing(relation)) continue;
    const qualified = [relation.catalog, relation.schema, relation.name].filter(Boolean).join('.');
    if (/[./\\]/.test(relation.name) || relation.name.includes(':')) {
      throw denied(`'${relation.name}' names a file; query the view sets instead`);
    }
    if (relation.name.startsWith('__')) throw denied(`relation '${qualified}' is internal`);
    if (!visibleCatalogs.has(relation.catalog.toLowerCase()) || !visibleSchemas.has(relation.schema.toLowerCase())) {
      throw denied(`relation '${qualified}' is outside the orrery catalog`);
    }
    if (!(await catalog.readable(relation)))
      throw denied(`relation '${qualified}' does not exist or is not available to this key`);
  }
}

/** One statement per call: leading comments and a trailing `;` are fine, a second statement is not. */
export function checkSingleStatement(shape: QueryShape): void {
  if (shape.statements > 1) {
    throw sqlErrors.error(
      'MULTIPLE_STATEMENTS',
      `one statement per call: this text holds ${shape.statements} statements`,
    );
  }
}

/**
 * True for CREATE SECRET and DROP SECRET (any OR REPLACE, PERSISTENT/TEMPORARY, IF [NOT] EXISTS),
 * refused for every key. DuckDB's secrets are instance-wide: one made by a statement, or a narrower
 * scope than Orrery's, would sign the lake's reads with other credentials or send them to another
 * endpoint, and dropping Orrery's would cut every engine off the lake.
 */
export function changesSecrets(text: string): boolean {
  const words = statementWords(text);
  if (!words) return false;
  let i = words.first;
  if (words.word(i) !== 'create' && words.word(i) !== 'drop') return false;
  i++;
  for (const optional of [['or', 'replace'], ['persistent'], ['temporary'], ['temp']]) {
    if (optional.every((word, k) => words.word(i + k) === word)) i += optional.length;
  }
  return words.word(i) === 'secret';
}

/** Table functions that read files (DuckDB's readers and their metadata functions start read_ or parquet_). */
const fileTableFunctions = /^(read_\w+|parquet_\w+|glob|sniff_csv)$/;

/**
 * Why an admin's statement would read or write the lake's files directly, or null. The sandbox
 * lets DuckDB reach the lake folder (view sets read their partition files there), so an admin's
 * read_parquet could read series tables' DuckLake files (rows deleted since the last compaction
 * among them) and payloads, and COPY ... TO could overwrite a partition file. Admins query the
 * view sets and series tables instead. Read from the tokens, so literals and comments never
 * count; a SELECT's relations are checked too (fileRelation).
 */
export function adminFileAccess(text: string): string | null {
  const words = statementWords(text);
  if (!words) return null;
  const { first, word } = words;
  if (word(first) === 'copy') return 'COPY reads or writes files';
  if (word(first) === 'export' && word(first + 1) === 'database') return 'EXPORT DATABASE writes files';
  for (let i = 0; i < words.length; i++) {
    if (fileTableFunctions.test(word(i)) && words.called(i)) return `${word(i)}() reads files`;
  }
  return null;
}

/** Why a SELECT's relations read a file (a replacement scan: FROM 'file.parquet'), or null. */
export function fileRelation(shape: QueryShape): string | null {
  const file = shape.relations.find((r) => !r.cte && (/[./\\]/.test(r.name) || r.name.includes(':')));
  return file ? `'${file.name}' names a file` : null;
}
