import { queryShape, varyingFunctions, type FunctionDescription } from '../engine/index.js';
import { clockMacro, snouttimeCatalog } from '../views/index.js';

// The scalar and aggregate functions a key that is not an admin may call. A function is in
// when it computes from its arguments alone: DuckDB marks those CONSISTENT. Functions whose
// result depends on something else are out unless listed below as harmless (a clock, a random
// source), because what they depend on is the engine's state: storage statistics (stats),
// settings and their folders (current_setting), sequences, logs, the plans of other SQL text.
// Macros, DuckDB's and Orrery's own (compatibility functions made at start-up), are in when
// their body reads no relation and calls only functions that are in, so adding an Orrery
// function is adding its macro: it is judged by the same rule. A function Orrery registers
// otherwise (a UDF) is in when it is registered CONSISTENT, or listed in harmlessVolatile.

/** Not CONSISTENT, yet harmless: they read a clock, a random source or the caller's own statement. */
const harmlessVolatile = new Set([
  ...[...varyingFunctions].flatMap(([name, kind]) => (kind === 'clock' ? [name] : [])),
  'random',
  'setseed',
  'uuid',
  'uuidv4',
  'uuidv7',
  'gen_random_uuid',
  'error',
  'current_database',
  'current_schema',
  'current_schemas',
  'current_query',
]);

/** CONSISTENT by DuckDB's account, but they read the engine's state rather than their arguments. */
const engineState = new Set(['current_setting', 'getvariable', 'json_serialize_plan']);

/** Names the parser produces for syntax (`SELECT unnest(list)`), not listed among DuckDB's scalar functions. */
const syntaxForms = ['unnest', 'unlist'];

const callable = new Set(['scalar', 'aggregate', 'macro']);

/** Functions of the default search path (DuckDB's `main` schema and the user catalog's; the snouttime catalog's schema is main too). */
const onSearchPath = (f: FunctionDescription): boolean => f.schema === 'main' && callable.has(f.type);

/** How a statement names a function: `snouttime.<name>` for those of the snouttime catalog. */
const nameOf = (f: FunctionDescription): string =>
  f.catalog === snouttimeCatalog ? `${snouttimeCatalog}.${f.name.toLowerCase()}` : f.name.toLowerCase();

/**
 * The names a non-admin may call, lower case (`snouttime.<name>` for the spec's prefixed names):
 * every overload of each passes the rule above.
 */
export function readerFunctionNames(functions: readonly FunctionDescription[]): ReadonlySet<string> {
  const overloads = new Map<string, FunctionDescription[]>();
  for (const f of functions.filter(onSearchPath)) {
    const name = nameOf(f);
    overloads.set(name, [...(overloads.get(name) ?? []), f]);
  }
  // Orrery's clock reads DuckDB's clock or the statement's fixed clock, a variable only the server sets (getvariable
  // is engine state: any other variable's value stays out).
  const allowed = new Set<string>([...syntaxForms, clockMacro]);
  const pure = (f: FunctionDescription): boolean =>
    f.type !== 'macro' &&
    (harmlessVolatile.has(f.name.toLowerCase()) ||
      (f.stability === 'CONSISTENT' && !engineState.has(f.name.toLowerCase())));
  for (const [name, list] of overloads) if (list.every(pure)) allowed.add(name);
  // A macro may call other macros: admit them until nothing changes.
  for (let changed = true; changed;) {
    changed = false;
    for (const [name, list] of overloads) {
      if (allowed.has(name) || list.some((f) => f.type !== 'macro' && !pure(f))) continue;
      // A macro shadowing a built-in of its name (Orrery's now() calls system.main.now()) may call it.
      const builtIn = list.some((f) => f.type !== 'macro');
      const callable = builtIn ? new Set([...allowed, name]) : allowed;
      if (!list.every((f) => f.type !== 'macro' || macroIsPure(f, callable))) continue;
      allowed.add(name);
      changed = true;
    }
  }
  return allowed;
}

function macroIsPure(macro: FunctionDescription, allowed: ReadonlySet<string>): boolean {
  if (!macro.macroTree) return false;
  const shape = queryShape(macro.macroTree);
  return (
    shape.relations.length === 0 &&
    shape.tableFunctions.length === 0 &&
    shape.catalogListings.length === 0 &&
    [...shape.functions].every((name) => allowed.has(name.toLowerCase()))
  );
}
