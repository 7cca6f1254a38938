// The one SQL tokenizer, for the DDL parser (sql/) and `orrery views` (views-cli/): words
// (identifiers, keywords and numbers, Unicode letters included), "quoted identifiers", 'string
// literals' and $tag$ dollar-quoted strings, and single punctuation characters; whitespace,
// `--` line comments and nested /* block */ comments are skipped. Literals are read whole, so
// nothing inside a query text is mistaken for the statement's own words.

import { SqlTextError } from './errors.js';

/** One token of SQL text. */
export interface SqlToken {
  readonly kind: 'word' | 'ident' | 'string' | 'punct' | 'end';
  /** The token's source text. */
  readonly raw: string;
  /** Its content: a literal's text without quotes, a quoted identifier's name. */
  readonly value: string;
  /** Offset of its first character in the text. */
  readonly start: number;
}

/** `line:column` (both 1-based) of an offset into `text`. */
export function positionOf(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text[i] === '\n') {
      line++;
      lineStart = i + 1;
    }
  }
  return `${line}:${offset - lineStart + 1}`;
}

const wordPattern = /[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*|[0-9][A-Za-z0-9_$.]*/y;
const dollarPattern = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

/** Splits SQL text into tokens on demand. */
export class SqlLexer {
  private pos = 0;
  private readonly ahead: SqlToken[] = [];

  /** `fail` makes the error thrown for text that cannot be tokenized (default: a {@link SqlTextError}). */
  constructor(
    readonly text: string,
    private readonly fail: (message: string) => Error = (message) => new SqlTextError(message),
  ) {}

  /** The token `n` places ahead, without consuming it. */
  peek(n = 0): SqlToken {
    while (this.ahead.length <= n) this.ahead.push(this.scan());
    return this.ahead[n];
  }

  next(): SqlToken {
    const token = this.peek();
    this.ahead.shift();
    return token;
  }

  /** Where the first character after any whitespace and comments is; the text's length when none. */
  restOffset(): number {
    return this.ahead[0]?.start ?? (this.skipBlank(), this.pos);
  }

  /** `line:column` of an offset into the text. */
  at(offset: number): string {
    return positionOf(this.text, offset);
  }

  private scan(): SqlToken {
    this.skipBlank();
    const { text } = this;
    const start = this.pos;
    const c = text[start];
    if (c === undefined) return { kind: 'end', raw: '', value: '', start };
    if (c === "'") return this.quoted("'", 'string', 'string literal');
    if (c === '"') return this.quoted('"', 'ident', 'quoted identifier');
    if (c === '$') {
      dollarPattern.lastIndex = start;
      const delimiter = dollarPattern.exec(text)?.[0];
      if (delimiter !== undefined) {
        const close = text.indexOf(delimiter, start + delimiter.length);
        if (close < 0)
          throw this.fail(`unterminated dollar-quoted string: ${delimiter} at ${this.at(start)} is never closed`);
        this.pos = close + delimiter.length;
        return {
          kind: 'string',
          raw: text.slice(start, this.pos),
          value: text.slice(start + delimiter.length, close),
          start,
        };
      }
    }
    wordPattern.lastIndex = start;
    const word = wordPattern.exec(text)?.[0];
    if (word !== undefined) {
      this.pos += word.length;
      return { kind: 'word', raw: word, value: word, start };
    }
    this.pos++;
    return { kind: 'punct', raw: c, value: c, start };
  }

  /** A '...' literal or "..." identifier; a doubled quote inside stands for one. */
  private quoted(quote: string, kind: 'string' | 'ident', what: string): SqlToken {
    const { text } = this;
    const start = this.pos;
    let value = '';
    for (let from = start + 1; ;) {
      const close = text.indexOf(quote, from);
      if (close < 0) throw this.fail(`unterminated ${what} starting at ${this.at(start)}`);
      value += text.slice(from, close);
      if (text[close + 1] !== quote) {
        this.pos = close + 1;
        return { kind, raw: text.slice(start, this.pos), value, start };
      }
      value += quote;
      from = close + 2;
    }
  }

  /** Skips whitespace, `--` line comments and (nested) block comments. */
  private skipBlank(): void {
    const { text } = this;
    for (;;) {
      if (/\s/.test(text[this.pos] ?? '')) {
        this.pos++;
      } else if (text.startsWith('--', this.pos)) {
        const newline = text.indexOf('\n', this.pos);
        this.pos = newline < 0 ? text.length : newline + 1;
      } else if (text.startsWith('/*', this.pos)) {
        const start = this.pos;
        let depth = 0;
        do {
          if (this.pos >= text.length) throw this.fail(`unterminated comment starting at ${this.at(start)}`);
          if (text.startsWith('/*', this.pos)) depth++;
          else if (text.startsWith('*/', this.pos)) depth--;
          else {
            this.pos++;
            continue;
          }
          this.pos += 2;
        } while (depth > 0);
      } else {
        return;
      }
    }
  }
}

/** Every token of `text`, up to (not including) the end. */
export function tokenize(text: string, fail?: (message: string) => Error): SqlToken[] {
  const lexer = new SqlLexer(text, fail);
  const tokens: SqlToken[] = [];
  for (let token = lexer.next(); token.kind !== 'end'; token = lexer.next()) tokens.push(token);
  return tokens;
}

/** A statement read as words, for checks that must ignore literals and comments. */
export interface StatementWords {
  /** How many tokens the statement has. */
  readonly length: number;
  /** The index of its first word, past opening parentheses: `(SELECT ...)`. */
  readonly first: number;
  /** The token at an index as a lower-case name ('' for a literal, punctuation or past the end). */
  readonly word: (index: number) => string;
  /** Whether the word at an index is called: `name(`. */
  readonly called: (index: number) => boolean;
}

/** A statement's words, or null when it does not tokenize (DuckDB's parser then refuses it). */
export function statementWords(text: string): StatementWords | null {
  let tokens: SqlToken[];
  try {
    tokens = tokenize(text);
  } catch {
    return null;
  }
  const word = (index: number): string => {
    const token = tokens[index];
    return token && (token.kind === 'word' || token.kind === 'ident') ? token.value.toLowerCase() : '';
  };
  let first = 0;
  while (tokens[first]?.kind === 'punct' && tokens[first].raw === '(') first++;
  return { length: tokens.length, first, word, called: (index) => tokens[index + 1]?.raw === '(' };
}
