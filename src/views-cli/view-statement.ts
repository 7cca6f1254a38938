// Reading the few things the CLI needs from a CREATE MATERIALIZED VIEW statement's text: where it
// starts (after leading comments), the view name, update_group, and whether a second statement
// follows. Query texts inside quotes are skipped whole, never looked into (sql-text/ tokenizes).
import { SqlLexer, tokenize, type SqlToken } from '../sql-text/index.js';

/** A view set name, as the server accepts it. */
export const viewNamePattern = /^[a-z_][a-z0-9_]{0,254}$/;

/** The index of the first character that is neither whitespace nor part of a comment. */
export function statementStart(sql: string): number {
  return new SqlLexer(sql, unreadable).restOffset();
}

const unreadable = (message: string): Error => new Error(`cannot be read: ${message}`);

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
  const tokens = tokenize(sql, unreadable);
  const words = tokens.slice(0, 5).map((t) => (t.kind === 'word' ? t.value.toUpperCase() : ''));
  const orReplace = words[1] === 'OR' && words[2] === 'REPLACE';
  const head = orReplace ? 3 : 1;
  if (tokens.length === 0) throw new Error('holds no statement');
  if (words[0] !== 'CREATE' || words[head] !== 'MATERIALIZED' || words[head + 1] !== 'VIEW') {
    throw new Error('is not a CREATE [OR REPLACE] MATERIALIZED VIEW statement');
  }
  const nameToken = tokens[head + 2];
  if (!nameToken || (nameToken.kind !== 'word' && nameToken.kind !== 'ident')) {
    throw new Error('names no view after MATERIALIZED VIEW');
  }
  const semicolon = tokens.findIndex((t) => t.kind === 'punct' && t.value === ';');
  if (semicolon >= 0 && semicolon < tokens.length - 1)
    throw new Error('holds more than one statement (one CREATE statement per file)');
  return { name: nameToken.value, orReplace, updateGroup: readUpdateGroup(tokens) };
}

function readUpdateGroup(tokens: readonly SqlToken[]): number | null {
  for (let i = 0; i + 2 < tokens.length; i++) {
    if (tokens[i].kind === 'word' && tokens[i].value.toLowerCase() === 'update_group' && tokens[i + 1].value === '=') {
      const value = tokens[i + 2];
      const number = value.kind === 'word' || value.kind === 'string' ? Number(value.value.trim()) : NaN;
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
