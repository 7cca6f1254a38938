// The statements that write series tables, recognised by their head: the verb and the table
// they name. DuckDB's parse tree covers SELECT only, and these statements are passed on to DuckDB
// with only their target changed (to the table in the DuckLake catalog), so the head is all
// Orrery needs to read; everything after it is DuckDB's to parse.

import { seriesStatementError } from './errors.js';

export type SeriesStatement =
  | {
      readonly kind: 'create';
      readonly table: string;
      readonly ifNotExists: boolean;
      readonly columns: string;
      readonly timeColumn?: string;
    }
  | { readonly kind: 'drop'; readonly table: string; readonly ifExists: boolean }
  | { readonly kind: 'alter'; readonly table: string; readonly action: string }
  | { readonly kind: 'insert'; readonly table: string; readonly columns?: readonly string[]; readonly body: string }
  | { readonly kind: 'update'; readonly table: string; readonly rest: string }
  | { readonly kind: 'delete'; readonly table: string; readonly rest: string }
  | { readonly kind: 'truncate'; readonly table: string };

const identifier = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
/** A table name, optionally qualified with the user catalog's schema (`main.t`, `orrery.main.t`). */
const tableName = String.raw`((?:(?:"orrery"|orrery)\s*\.\s*)?(?:(?:"main"|main)\s*\.\s*)?${identifier})`;

const patterns: Array<[RegExp, (m: RegExpExecArray) => SeriesStatement | null]> = [
  [
    new RegExp(String.raw`^CREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?${tableName}\s*\(([\s\S]*)$`, 'i'),
    (m) => createStatement(m[2], Boolean(m[1]), m[3]),
  ],
  [
    new RegExp(String.raw`^DROP\s+TABLE\s+(IF\s+EXISTS\s+)?${tableName}$`, 'i'),
    (m) => ({ kind: 'drop', table: lastPart(m[2]), ifExists: Boolean(m[1]) }),
  ],
  [
    new RegExp(String.raw`^ALTER\s+TABLE\s+${tableName}\s+((?:ADD|DROP|RENAME)\b[\s\S]*)$`, 'i'),
    (m) => ({ kind: 'alter', table: lastPart(m[1]), action: m[2] }),
  ],
  [
    new RegExp(String.raw`^INSERT\s+INTO\s+${tableName}\s*([\s\S]*)$`, 'i'),
    (m) => insertStatement(lastPart(m[1]), m[2]),
  ],
  [
    new RegExp(String.raw`^UPDATE\s+${tableName}\s+(SET\b[\s\S]*)$`, 'i'),
    (m) => ({ kind: 'update', table: lastPart(m[1]), rest: m[2] }),
  ],
  [
    new RegExp(String.raw`^DELETE\s+FROM\s+${tableName}((?:\s+(?:WHERE|USING)\b[\s\S]*)?)$`, 'i'),
    (m) => ({ kind: 'delete', table: lastPart(m[1]), rest: m[2] }),
  ],
  [
    new RegExp(String.raw`^TRUNCATE\s+(?:TABLE\s+)?${tableName}$`, 'i'),
    (m) => ({ kind: 'truncate', table: lastPart(m[1]) }),
  ],
];

/** The series-table statement a text is, or null when it is none of them. */
export function parseSeriesStatement(text: string): SeriesStatement | null {
  const statement = stripComments(text);
  for (const [pattern, build] of patterns) {
    const match = pattern.exec(statement);
    if (match) return build(match);
  }
  return null;
}

/** Leading comments, surrounding blanks and one trailing `;` removed. */
export function stripComments(text: string): string {
  let rest = text;
  for (;;) {
    rest = rest.trimStart();
    if (rest.startsWith('--')) rest = rest.slice(rest.indexOf('\n') === -1 ? rest.length : rest.indexOf('\n') + 1);
    else if (rest.startsWith('/*') && rest.includes('*/')) rest = rest.slice(rest.indexOf('*/') + 2);
    else break;
  }
  return rest.trimEnd().replace(/;$/, '').trimEnd();
}

/** The unquoted table name: the last part of a qualified name. */
function lastPart(qualified: string): string {
  const parts = splitIdentifiers(qualified.replace(/\s+/g, ''), '.');
  return unquote(parts[parts.length - 1]);
}

export function unquote(name: string): string {
  return name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name.toLowerCase();
}

function createStatement(name: string, ifNotExists: boolean, afterParen: string): SeriesStatement | null {
  const close = matchingParen(afterParen);
  if (close < 0) return null;
  const columns = afterParen.slice(0, close);
  const tail = afterParen.slice(close + 1).trim();
  if (tail === '') return { kind: 'create', table: lastPart(name), ifNotExists, columns };
  const withMatch = /^WITH\s*\(([\s\S]*)\)$/i.exec(tail);
  if (!withMatch) return null;
  let timeColumn: string | undefined;
  for (const option of splitTopLevel(withMatch[1])) {
    const m = /^\s*([A-Za-z_]\w*)\s*=\s*'((?:[^']|'')*)'\s*$/.exec(option);
    if (!m)
      throw seriesStatementError(
        `CREATE TABLE ${lastPart(name)}: cannot read the option '${option.trim()}' (write time_column = 'column')`,
      );
    if (m[1].toLowerCase() !== 'time_column') {
      throw seriesStatementError(
        `CREATE TABLE ${lastPart(name)}: unknown option '${m[1]}' (the only option is time_column)`,
      );
    }
    timeColumn = m[2].replaceAll("''", "'");
  }
  return { kind: 'create', table: lastPart(name), ifNotExists, columns, timeColumn };
}

function insertStatement(table: string, rest: string): SeriesStatement {
  const trimmed = rest.trim();
  if (trimmed.startsWith('(') && !/^\(\s*(SELECT|WITH|VALUES|FROM)\b/i.test(trimmed)) {
    const close = matchingParen(trimmed.slice(1));
    if (close >= 0) {
      const columns = splitTopLevel(trimmed.slice(1, close + 1)).map((c) => unquote(c.trim()));
      return { kind: 'insert', table, columns, body: trimmed.slice(close + 2).trim() };
    }
  }
  return { kind: 'insert', table, body: trimmed };
}

/** Index of the `)` closing an already opened parenthesis, skipping quoted text; -1 when none. */
function matchingParen(text: string): number {
  let depth = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) return -1;
      i = end;
    } else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i;
  }
  return -1;
}

/** Splits on commas outside parentheses and quotes. */
export function splitTopLevel(text: string): string[] {
  return splitIdentifiers(text, ',');
}

function splitIdentifiers(text: string, separator: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      i = end < 0 ? text.length : end;
    } else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === separator && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
