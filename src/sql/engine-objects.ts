// An admin's DDL runs in the engine's own catalogs, where every statement of every key binds its names: the
// macros Orrery makes at start-up (now() as a TIMESTAMP_NS, date_bin, the sketches), DuckDB's functions, the
// static tables' views. A macro of the default schema shadows a function of DuckDB's for every statement
// (`CREATE MACRO sum(x) AS 42` answers 42 for every reader's sum, a rollup's merge included), and dropping or
// replacing one of Orrery's (`DROP MACRO now`) changes what every other reader's statement means. A TEMP
// object is the statement's connection's alone, closed after it (only SELECTs give a connection back), and
// DuckDB itself refuses to drop a catalog's `main` schema (`DROP SCHEMA memory.main CASCADE`). The rollups' kept
// tails, each an in-memory database of its own, are refused by name (lake-catalog.ts).
import type { StartupObjects } from '../engine/index.js';
import { tokenize, type SqlToken } from '../sql-text/index.js';

const kinds = new Set(['macro', 'function', 'table', 'view', 'sequence', 'type', 'index', 'schema']);

/**
 * Why a statement would create, replace, drop or alter a function or relation the engine had at start-up, or
 * shadow one of its functions with a macro of the default schema; null when it does not (or is not DDL).
 */
export function changesStartupObject(text: string, objects: StartupObjects): string | null {
  let tokens: SqlToken[];
  try {
    tokens = tokenize(text);
  } catch {
    return null; // DuckDB's parser refuses it
  }
  let i = 0;
  const word = (): string => {
    const token = tokens[i];
    return token && (token.kind === 'word' || token.kind === 'ident') ? token.value.toLowerCase() : '';
  };
  const verb = word();
  if (!['create', 'drop', 'alter'].includes(verb)) return null;
  i++;
  const replace = verb === 'create' && word() === 'or';
  if (replace) i += 2;
  if (word() === 'temp' || word() === 'temporary') return null;
  if (word() === 'persistent') i++;
  const kind: string[] = [];
  while (kinds.has(word())) kind.push(tokens[i++].value.toLowerCase());
  while (['if', 'not', 'exists'].includes(word())) i++;
  const parts = [word()];
  while (tokens[i + 1]?.raw === '.' && tokens[i + 2]) {
    i += 2;
    parts.push(word());
  }
  const name = parts.at(-1)!;
  // `db.s.f` outside `main` is in a schema of its own, which no statement reads by the bare name. `x.f` may be
  // catalog x's default schema (`main`), so it is checked as `main` is (a refused `main.sum` would otherwise pass).
  const schema = parts.length === 3 ? parts[1] : parts.length === 2 ? null : 'main';
  if (kind.length === 0 || kind.includes('schema') || name === '' || (schema !== null && schema !== 'main'))
    return null;
  const isFunction = kind.includes('macro') || kind.includes('function');
  if (isFunction && objects.functions.has(name))
    return verb === 'create' && !replace
      ? `a macro named ${name} would stand for the function ${name} in every statement`
      : `${name} is a function every statement reads`;
  if (!isFunction && (verb !== 'create' || replace) && objects.relations.has(name))
    return `${name} is a relation Orrery made for every statement`;
  return null;
}
