import { FlightSqlError } from '../flight/index.js';
import type { QueryShape } from '../engine/index.js';

// What a key that is not an admin may put in a SELECT. The engine's sandbox keeps DuckDB
// away from files outside the lake; this keeps callers away from the lake's files
// themselves, so the only way to rows is through the audience-filtered view sets.

/** Table functions that compute rather than read anything. */
const harmlessTableFunctions = new Set(['range', 'generate_series', 'unnest', 'repeat', 'generate_subscripts']);

/** Schemas a relation may be qualified with. */
const visibleCatalogs = new Set(['', 'orrery', 'temp']);
const visibleSchemas = new Set(['', 'main']);

const denied = (message: string): FlightSqlError => new FlightSqlError('PERMISSION_DENIED', `permission denied: ${message}`);

/**
 * Refuses what a non-admin SELECT may not do: several statements, table functions that read
 * files or run SQL text (read_parquet, query, ...), relations that name files (replacement
 * scans) or internal relations, and qualified names outside the user catalog.
 */
export function checkReaderQuery(shape: QueryShape, allowedTableFunctions: ReadonlySet<string>): void {
  for (const call of shape.tableFunctions) {
    const name = call.name.toLowerCase();
    if (!harmlessTableFunctions.has(name) && !allowedTableFunctions.has(name)) {
      throw denied(`table function '${call.name}' is not available to this key`);
    }
  }
  for (const relation of shape.relations) {
    const qualified = [relation.catalog, relation.schema, relation.name].filter(Boolean).join('.');
    if (/[./\\]/.test(relation.name) || relation.name.includes(':')) {
      throw denied(`'${relation.name}' names a file; query the view sets instead`);
    }
    if (relation.name.startsWith('__')) throw denied(`relation '${qualified}' is internal`);
    if (!visibleCatalogs.has(relation.catalog.toLowerCase()) || !visibleSchemas.has(relation.schema.toLowerCase())) {
      throw denied(`relation '${qualified}' is outside the orrery catalog`);
    }
  }
}

/** One statement per call: leading comments and a trailing `;` are fine, a second statement is not. */
export function checkSingleStatement(shape: QueryShape): void {
  if (shape.statements > 1) {
    throw new FlightSqlError('INVALID_ARGUMENT', `one statement per call: this text holds ${shape.statements} statements`);
  }
}
