// The tables resources can name, as a server lists them: list_view_sets() (every view set and
// series table with its columns) and list_view_set_definitions() (why a stored definition did not
// load), plus the publication's own `views/*.sql` files for `<views file>#<view set>` tables.
import { builtinViewSets, type ColumnSpec } from '../views/index.js';
import { summarizeStatement } from '../views-cli/index.js';
import type { ResolveTable, TableResolution } from './validation.js';

/** What the server reports of one view set. */
export interface ServerViewSet {
  readonly name: string;
  readonly columns: readonly ColumnSpec[];
  /** Why its stored definition did not load; null when it loaded (or it is built in). */
  readonly loadError: string | null;
}

/** `name TYPE, name STRUCT(a INT, b VARCHAR), …` (list_view_sets()'s schema) as columns. */
export function parseSchemaText(text: string): ColumnSpec[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote) {
      if (char === quote) quote = null;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === '(') depth++;
    else if (char === ')') depth--;
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const match = /^("(?:[^"]|"")+"|\S+)\s+([\s\S]+)$/.exec(part);
      if (!match) return { name: part, type: 'VARCHAR' };
      const name = match[1].startsWith('"') ? match[1].slice(1, -1).replace(/""/g, '"') : match[1];
      return { name, type: match[2] };
    });
}

/** A table resolver over the server's view sets and the publication's views files. */
export function tableResolver(
  viewSets: readonly ServerViewSet[],
  viewFiles: ReadonlyMap<string, string>,
): ResolveTable {
  const byName = new Map(viewSets.map((v) => [v.name.toLowerCase(), v]));
  const fromServer = (name: string, where: string): TableResolution => {
    const set = byName.get(name.toLowerCase());
    if (!set) return { problem: `view set '${name}'${where} does not exist on the server` };
    if (set.loadError !== null) return { problem: `the view of '${name}' does not compile: ${set.loadError}` };
    // The server lists columns alone: a built-in set's series are known here.
    const series = builtinViewSets.find((v) => v.name === set.name)?.series;
    return { physical: set.name, columns: set.columns, ...(series ? { series } : {}) };
  };
  return (table) => {
    const hash = table.indexOf('#');
    if (hash < 0) {
      if (table.endsWith('.sql')) return { problem: `table '${table}' names a views file; write ${table}#<view set>` };
      return fromServer(table, '');
    }
    const file = table.slice(0, hash);
    const alias = table.slice(hash + 1);
    const text = viewFiles.get(file);
    if (text === undefined) return { problem: `views file '${file}' does not exist in the publication` };
    let defined: string;
    try {
      defined = summarizeStatement(text).name;
    } catch (error) {
      return { problem: `the view of ${file} does not compile: ${file} ${(error as Error).message}` };
    }
    if (defined.toLowerCase() !== alias.toLowerCase())
      return { problem: `${file} defines view set '${defined}', not '${alias}'` };
    return fromServer(alias, ` (of ${file})`);
  };
}
