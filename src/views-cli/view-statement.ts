// Reading the few things the CLI needs from a CREATE MATERIALIZED VIEW statement's text: where it
// starts (after leading comments), the view name, update_group, and whether a second statement
// follows. Query texts inside quotes are skipped whole, never looked into.

/** A view set name, as the server accepts it. */
export const viewNamePattern = /^[a-z_][a-z0-9_]{0,254}$/;

interface Token {
  readonly kind: 'word' | 'number' | 'string' | 'quoted_identifier' | 'symbol';
  readonly text: string;
  readonly start: number;
}

/** The index of the first character that is neither whitespace nor part of a comment. */
export function statementStart(sql: string): number {
  let i = 0;
  for (;;) {
    while (i < sql.length && /\s/.test(sql[i])) i++;
    if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else {
      return i;
    }
  }
}

/** The statement's tokens; strings (single-, dollar-quoted) and comments are skipped as wholes. */
function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  let i = statementStart(sql);
  while (i < sql.length) {
    const start = i;
    const rest = sql.slice(i);
    const dollar = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(rest);
    if (dollar) {
      const end = sql.indexOf(dollar[0], i + dollar[0].length);
      i = end < 0 ? sql.length : end + dollar[0].length;
      tokens.push({ kind: 'string', text: sql.slice(start + dollar[0].length, end < 0 ? sql.length : end), start });
    } else if (sql[i] === "'" || sql[i] === '"') {
      const quote = sql[i];
      let text = '';
      i++;
      while (i < sql.length) {
        if (sql[i] === quote && sql[i + 1] === quote) {
          text += quote;
          i += 2;
        } else if (sql[i] === quote) {
          i++;
          break;
        } else {
          text += sql[i++];
        }
      }
      tokens.push({ kind: quote === "'" ? 'string' : 'quoted_identifier', text, start });
    } else if (/^[A-Za-z_]/.test(rest)) {
      const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest)![0];
      tokens.push({ kind: 'word', text: word, start });
      i += word.length;
    } else if (/^[0-9]/.test(rest)) {
      const number = /^[0-9][0-9_.]*/.exec(rest)![0];
      tokens.push({ kind: 'number', text: number, start });
      i += number.length;
    } else {
      tokens.push({ kind: 'symbol', text: sql[i], start });
      i++;
    }
    i += statementStart(sql.slice(i));
  }
  return tokens;
}

/** What the CLI reads from one file's statement. */
export interface StatementSummary {
  /** The view set name the statement defines. */
  readonly name: string;
  /** Whether it already says CREATE OR REPLACE. */
  readonly orReplace: boolean;
  /** Its update_group option, when it has a readable one. */
  readonly updateGroup: number | null;
}

/** Reads a CREATE [OR REPLACE] MATERIALIZED VIEW statement; throws an Error naming what is wrong. */
export function summarizeStatement(sql: string): StatementSummary {
  const tokens = tokenize(sql);
  const words = tokens.slice(0, 5).map((t) => (t.kind === 'word' ? t.text.toUpperCase() : ''));
  const orReplace = words[1] === 'OR' && words[2] === 'REPLACE';
  const head = orReplace ? 3 : 1;
  if (tokens.length === 0) throw new Error('holds no statement');
  if (words[0] !== 'CREATE' || words[head] !== 'MATERIALIZED' || words[head + 1] !== 'VIEW') {
    throw new Error('is not a CREATE [OR REPLACE] MATERIALIZED VIEW statement');
  }
  const nameToken = tokens[head + 2];
  if (!nameToken || (nameToken.kind !== 'word' && nameToken.kind !== 'quoted_identifier')) {
    throw new Error('names no view after MATERIALIZED VIEW');
  }
  const semicolon = tokens.findIndex((t) => t.kind === 'symbol' && t.text === ';');
  if (semicolon >= 0 && semicolon < tokens.length - 1) throw new Error('holds more than one statement (one CREATE statement per file)');
  return { name: nameToken.text, orReplace, updateGroup: readUpdateGroup(tokens) };
}

function readUpdateGroup(tokens: readonly Token[]): number | null {
  for (let i = 0; i + 2 < tokens.length; i++) {
    if (tokens[i].kind === 'word' && tokens[i].text.toLowerCase() === 'update_group' && tokens[i + 1].text === '=') {
      const value = tokens[i + 2];
      const number = value.kind === 'number' || value.kind === 'string' ? Number(value.text.trim()) : NaN;
      return Number.isFinite(number) ? number : null;
    }
  }
  return null;
}

/** The text apply sends for a file: the file trimmed. */
export const statementText = (fileText: string): string => fileText.trim();

/** The statement with `CREATE` turned into `CREATE OR REPLACE` (unchanged when it already says so). */
export function withOrReplace(sql: string): string {
  const start = statementStart(sql);
  const header = /^CREATE(\s+OR\s+REPLACE)?(?=\s)/i.exec(sql.slice(start));
  if (!header || header[1]) return sql;
  return `${sql.slice(0, start)}${header[0]} OR REPLACE${sql.slice(start + header[0].length)}`;
}

/** `EXPLAIN` in front of the statement (after its leading comments). */
export function explainOf(sql: string): string {
  const start = statementStart(sql);
  return `${sql.slice(0, start)}EXPLAIN ${sql.slice(start)}`;
}

/**
 * The form two definitions are compared in: trimmed, without a trailing `;`, and with the
 * `CREATE [OR REPLACE] MATERIALIZED VIEW` keywords written `CREATE OR REPLACE MATERIALIZED VIEW`.
 */
export function comparableDefinition(sql: string): string {
  let text = sql.trim();
  if (text.endsWith(';')) text = text.slice(0, -1).trimEnd();
  const start = statementStart(text);
  const header = /^CREATE(\s+OR\s+REPLACE)?\s+MATERIALIZED\s+VIEW(?=\s)/i.exec(text.slice(start));
  if (!header) return text;
  return `${text.slice(0, start)}CREATE OR REPLACE MATERIALIZED VIEW${text.slice(start + header[0].length)}`;
}

/** The DROP statement apply sends for a stored definition without a file. */
export const dropStatement = (name: string): string => `DROP MATERIALIZED VIEW ${name}`;
