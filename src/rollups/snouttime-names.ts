// The spec's statements run as written: they call `snouttime.create_rollup(...)`, read
// `snouttime.jobs` and cast to `regclass`. DuckDB's snouttime catalog holds only the sketch functions
// and first/last (views/sketch-functions.ts), and DuckDB has no type regclass, so the parse tree is rewritten before anything else reads it: the `snouttime.` qualifier is
// dropped from functions (but those of the snouttime catalog: the sketches, first and last) and
// relations, `jobs` becomes Orrery's `rollup_jobs`, and a cast to
// regclass (a relation's name) becomes a cast to text.

import { snouttimeCatalogFunctions } from '../views/index.js';

type Node = Record<string, unknown>;

/** The name the refresh jobs table is read under (`snouttime.jobs` in the spec). */
export const jobsRelation = 'rollup_jobs';

const prefix = 'snouttime';

/** Rewrites a json_serialize_sql tree in place; true when it changed anything. */
export function snouttimeNames(tree: { statements: Node[] }): boolean {
  let changed = false;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (
      node.class === 'FUNCTION' &&
      node.schema === prefix &&
      node.catalog === '' &&
      !snouttimeCatalogFunctions.has(String(node.function_name).toLowerCase())
    ) {
      node.schema = '';
      changed = true;
    } else if (node.type === 'BASE_TABLE' && node.schema_name === prefix && node.catalog_name === '') {
      node.schema_name = '';
      if (String(node.table_name).toLowerCase() === 'jobs') node.table_name = jobsRelation;
      changed = true;
    } else if (node.type === 'TABLE_FUNCTION') {
      const fn = node.function as Node | undefined;
      if (fn && fn.schema === prefix && fn.catalog === '') {
        fn.schema = '';
        changed = true;
      }
    } else if (node.class === 'CAST') {
      const type = node.cast_type as { id?: string; type_info?: { name?: string; schema?: string } | null } | undefined;
      if (type?.id === 'UNBOUND' && type.type_info?.name?.toLowerCase() === 'regclass') {
        node.cast_type = { id: 'VARCHAR', type_info: null };
        changed = true;
      }
    }
    for (const child of Object.values(node)) visit(child);
  };
  visit(tree.statements);
  return changed;
}
