import { parseDelta } from '../views/index.js';
import { SqlLexer, type SqlToken } from '../sql-text/index.js';
import { clip, DdlError, invalidValue, syntax, unsupported } from './ddl-errors.js';

// CREATE [OR REPLACE] MATERIALIZED VIEW <name> WITH (opt = value, ...) and
// DROP MATERIALIZED VIEW [IF EXISTS] <name>, optionally behind EXPLAIN (a dry run).
// The shared SQL tokenizer (sql-text/) feeds a recursive-descent reader. Until the words [EXPLAIN] CREATE
// [OR REPLACE] MATERIALIZED or [EXPLAIN] DROP MATERIALIZED have been read, the text may be
// any SQL, so nothing is reported and the statement goes on to DuckDB; after them it is ours,
// and every problem is a DdlError (INVALID_ARGUMENT) naming it.

/** A materialized-view DDL statement; `text` is the statement exactly as sent. */
export type DdlStatement =
  | {
      kind: 'create';
      orReplace: boolean;
      name: string;
      options: MaterializedViewOptions;
      explain: boolean;
      text: string;
    }
  | { kind: 'drop'; ifExists: boolean; name: string; explain: boolean; text: string };

/** The WITH options of CREATE MATERIALIZED VIEW, defaults applied. */
export interface MaterializedViewOptions {
  extractQuery: string;
  countSrcQuery: string;
  mergePartitionsQuery: string;
  updateGroup: number;
  /** From min_time_column / max_time_column, else from time_column. */
  minTimeColumn: string;
  maxTimeColumn: string;
  /** time_column as given, when given. */
  timeColumn?: string;
  /** '<n> <unit>' as given (default '1 day'), and its width in seconds. */
  sourcePartitionDelta: string;
  sourceDeltaSeconds: number;
  /** '<n> <unit>' as given (default: the source delta), and its width in seconds. */
  mergePartitionDelta: string;
  mergeDeltaSeconds: number;
  /** merge_sort_order split on commas, each name trimmed. */
  mergeSortOrder?: string[];
}

type OptionKind = 'query' | 'integer' | 'column' | 'delta' | 'list';
const optionKinds = {
  extract_query: 'query',
  count_src_query: 'query',
  merge_partitions_query: 'query',
  update_group: 'integer',
  time_column: 'column',
  min_time_column: 'column',
  max_time_column: 'column',
  source_partition_delta: 'delta',
  merge_partition_delta: 'delta',
  merge_sort_order: 'list',
} as const satisfies Record<string, OptionKind>;
type OptionName = keyof typeof optionKinds;
const optionNames = Object.keys(optionKinds) as OptionName[];

/** update_group is stored as a Postgres integer. */
const maxUpdateGroup = 2147483647;
const namePattern = /^[a-z_][a-z0-9_]{0,254}$/;

const isKeyword = (token: SqlToken, keyword: string): boolean =>
  token.kind === 'word' && token.value.toUpperCase() === keyword;
const isPunct = (token: SqlToken, char: string): boolean => token.kind === 'punct' && token.value === char;

/** A token as a message shows it: `end of statement`, `')'`, `AS`, `'1 week'`. */
function describe(token: SqlToken): string {
  if (token.kind === 'end') return 'end of statement';
  return token.kind === 'punct' ? `'${token.raw}'` : clip(token.raw);
}

/**
 * Parses a CREATE [OR REPLACE] MATERIALIZED VIEW or DROP MATERIALIZED VIEW [IF EXISTS]
 * statement, optionally behind EXPLAIN. Returns null when the text is some other statement
 * (it goes on to DuckDB); throws a DdlError (INVALID_ARGUMENT) naming the problem when it is
 * one of these but malformed.
 *
 * @example
 * parseDdl('DROP MATERIALIZED VIEW IF EXISTS my_stats;')
 * // { kind: 'drop', ifExists: true, name: 'my_stats', explain: false, text: 'DROP MATERIALIZED VIEW IF EXISTS my_stats;' }
 * parseDdl('SELECT 1') // null
 */
export function parseDdl(text: string): DdlStatement | null {
  const lexer = new SqlLexer(text, syntax);
  let head: Head | null;
  try {
    head = readHead(lexer);
  } catch (error) {
    if (error instanceof DdlError) return null; // not ours (yet): DuckDB reports what is wrong
    throw error;
  }
  if (head === null) return null;
  const { kind, orReplace, explain } = head;
  expectView(lexer);
  if (kind === 'drop') {
    const ifExists = isKeyword(lexer.peek(), 'IF') && isKeyword(lexer.peek(1), 'EXISTS');
    if (ifExists) {
      lexer.next();
      lexer.next();
    }
    const name = readName(lexer, ifExists ? 'IF EXISTS' : 'MATERIALIZED VIEW');
    finish(lexer, kind, `after view name '${name}'`);
    return { kind, ifExists, name, explain, text };
  }
  if (isKeyword(lexer.peek(), 'IF') && isKeyword(lexer.peek(1), 'NOT')) {
    const at = lexer.at(lexer.peek().start);
    throw unsupported(`IF NOT EXISTS is not supported by CREATE MATERIALIZED VIEW (use CREATE OR REPLACE) at ${at}`);
  }
  const name = readName(lexer, 'MATERIALIZED VIEW');
  const withToken = lexer.next();
  if (isKeyword(withToken, 'AS')) throw asUnsupported(lexer, withToken);
  if (!isKeyword(withToken, 'WITH')) {
    throw syntax(
      `expected WITH (...) after view name '${name}', found ${describe(withToken)} at ${lexer.at(withToken.start)}`,
    );
  }
  const options = readOptions(lexer);
  finish(lexer, kind, 'after WITH (...)');
  return { kind, orReplace, name, options, explain, text };
}

/** What the words before VIEW say. */
interface Head {
  readonly kind: 'create' | 'drop';
  readonly orReplace: boolean;
  readonly explain: boolean;
}

/** [EXPLAIN] CREATE [OR REPLACE] MATERIALIZED | [EXPLAIN] DROP MATERIALIZED; null for any other statement. */
function readHead(lexer: SqlLexer): Head | null {
  const accept = (keyword: string): boolean => isKeyword(lexer.peek(), keyword) && lexer.next() !== undefined;
  const explain = accept('EXPLAIN');
  const kind = accept('CREATE') ? 'create' : accept('DROP') ? 'drop' : null;
  if (kind === null) return null;
  const orReplace = kind === 'create' && accept('OR');
  if (orReplace && !accept('REPLACE')) return null;
  return accept('MATERIALIZED') ? { kind, orReplace, explain } : null;
}

function expectView(lexer: SqlLexer): void {
  const token = lexer.next();
  if (!isKeyword(token, 'VIEW')) {
    throw syntax(`expected VIEW after MATERIALIZED, found ${describe(token)} at ${lexer.at(token.start)}`);
  }
}

function asUnsupported(lexer: SqlLexer, token: SqlToken): DdlError {
  return unsupported(
    `CREATE MATERIALIZED VIEW requires WITH (extract_query = ..., count_src_query = ..., merge_partitions_query = ..., ` +
      `update_group = ..., time_column = ...): AS <query> is not supported at ${lexer.at(token.start)}`,
  );
}

/** A view name: an identifier (folded to lower case) or a "quoted identifier" (taken as is). */
function readName(lexer: SqlLexer, after: string): string {
  const token = lexer.next();
  if (token.kind !== 'word' && token.kind !== 'ident') {
    throw syntax(`expected a view name after ${after}, found ${describe(token)} at ${lexer.at(token.start)}`);
  }
  const name = token.kind === 'word' ? token.value.toLowerCase() : token.value;
  if (isPunct(lexer.peek(), '.')) {
    throw unsupported(
      `view name '${clip(name)}.…' is qualified: a view set takes an unqualified name at ${lexer.at(token.start)}`,
    );
  }
  const invalid = (rule: string): DdlError =>
    new DdlError('DDL_INVALID_NAME', `invalid view name '${clip(name)}': ${rule}`);
  if (name.length > 255) throw invalid('a name is at most 255 characters long');
  if (!namePattern.test(name)) throw invalid(`a name must match ${namePattern.source}`);
  if (name.startsWith('__')) throw invalid("names starting with '__' are reserved");
  if (name === 'source') throw invalid("'source' is reserved for the {source} placeholder of merge queries");
  return name;
}

/** The end of the statement: nothing, or one `;` followed by nothing but whitespace and comments. */
function finish(lexer: SqlLexer, kind: Head['kind'], after: string): void {
  const token = lexer.next();
  if (token.kind === 'end') return;
  if (isPunct(token, ';')) {
    const rest = lexer.restOffset();
    if (rest < lexer.text.length) {
      throw new DdlError(
        'DDL_MULTIPLE_STATEMENTS',
        `one statement per call: text follows the ';' at ${lexer.at(rest)}`,
      );
    }
    return;
  }
  if (kind === 'create' && isKeyword(token, 'AS')) throw asUnsupported(lexer, token);
  if (kind === 'drop' && isKeyword(token, 'CASCADE')) {
    throw unsupported(`CASCADE is not supported: drop the views that read this one first at ${lexer.at(token.start)}`);
  }
  throw syntax(`unexpected ${describe(token)} ${after} at ${lexer.at(token.start)}`);
}

/** `( opt = value [, ...] )` after WITH, checked and with defaults applied. */
function readOptions(lexer: SqlLexer): MaterializedViewOptions {
  const open = lexer.next();
  if (!isPunct(open, '(')) throw syntax(`expected '(' after WITH, found ${describe(open)} at ${lexer.at(open.start)}`);
  const next = (): SqlToken => {
    const token = lexer.next();
    if (token.kind === 'end')
      throw syntax(`unterminated WITH (...) list: the '(' at ${lexer.at(open.start)} is never closed`);
    return token;
  };
  const given = new Map<OptionName, string>();
  if (isPunct(lexer.peek(), ')')) lexer.next();
  else {
    for (let separator = ','; separator === ',';) {
      const key = next();
      if (key.kind !== 'word')
        throw syntax(`expected an option name, found ${describe(key)} at ${lexer.at(key.start)}`);
      const option = key.value.toLowerCase() as OptionName;
      if (!Object.hasOwn(optionKinds, option)) {
        throw new DdlError(
          'DDL_UNKNOWN_OPTION',
          `unknown option '${clip(key.value)}' at ${lexer.at(key.start)}; known options: ${optionNames.join(', ')}`,
        );
      }
      if (given.has(option)) {
        throw new DdlError('DDL_REPEATED_OPTION', `option '${option}' is given twice, again at ${lexer.at(key.start)}`);
      }
      const equals = next();
      if (!isPunct(equals, '=')) {
        throw syntax(`expected '=' after option '${option}', found ${describe(equals)} at ${lexer.at(equals.start)}`);
      }
      let value = next();
      if ((isPunct(value, '-') || isPunct(value, '+')) && lexer.peek().kind === 'word') {
        const number = lexer.next();
        value = { kind: 'word', raw: value.raw + number.raw, value: value.value + number.value, start: value.start };
      }
      given.set(option, checkValue(option, value, lexer.at(value.start)));
      const after = next();
      separator = after.value;
      if (!isPunct(after, ',') && !isPunct(after, ')')) {
        throw syntax(
          `expected ',' or ')' after option '${option}', found ${describe(after)} at ${lexer.at(after.start)}`,
        );
      }
    }
  }
  return withDefaults(given);
}

/** An option's value checked against the option's kind: a literal's content, or an integer's digits. */
function checkValue(option: OptionName, token: SqlToken, at: string): string {
  const kind: OptionKind = optionKinds[option];
  if (token.kind === 'punct')
    throw syntax(`expected a value for option '${option}', found ${describe(token)} at ${at}`);
  if (kind === 'integer') {
    if (token.kind !== 'word' || !/^[0-9]+$/.test(token.value)) {
      throw invalidValue(
        `option '${option}' must be a non-negative integer literal, found ${describe(token)} at ${at}`,
      );
    }
    if (Number(token.value) > maxUpdateGroup) {
      throw invalidValue(`option '${option}' must be at most ${maxUpdateGroup}, found ${describe(token)} at ${at}`);
    }
    return token.value;
  }
  if (token.kind !== 'string') {
    throw invalidValue(
      `option '${option}' takes a quoted string ('...' or $$...$$), found ${describe(token)} at ${at}`,
    );
  }
  const value = token.value;
  if (value.trim() === '') throw invalidValue(`option '${option}' must not be empty at ${at}`);
  if (kind === 'delta' && parseDelta(value) === null) {
    throw invalidValue(
      `option '${option}' must be '<n> <unit>' with n > 0 and unit second(s), minute(s), hour(s) or day(s), ` +
        `found '${clip(value)}' at ${at}`,
    );
  }
  if (kind === 'list' && sortOrder(value).includes('')) {
    throw invalidValue(`option '${option}' has an empty column name in '${clip(value)}' at ${at}`);
  }
  return value;
}

const sortOrder = (value: string): string[] => value.split(',').map((item) => item.trim());

function withDefaults(given: Map<OptionName, string>): MaterializedViewOptions {
  const missing = (['extract_query', 'count_src_query', 'merge_partitions_query', 'update_group'] as const)
    .filter((option) => !given.has(option))
    .map((option) => `'${option}'`);
  if (!given.has('time_column') && !(given.has('min_time_column') && given.has('max_time_column'))) {
    missing.push("'time_column' (or both 'min_time_column' and 'max_time_column')");
  }
  if (missing.length > 0) {
    throw new DdlError(
      'DDL_MISSING_OPTION',
      `missing required option${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`,
    );
  }
  const get = (option: OptionName): string => given.get(option) ?? '';
  const timeColumn = given.get('time_column');
  const sourceDelta = given.get('source_partition_delta') ?? '1 day';
  const mergeDelta = given.get('merge_partition_delta') ?? sourceDelta;
  const options: MaterializedViewOptions = {
    extractQuery: get('extract_query'),
    countSrcQuery: get('count_src_query'),
    mergePartitionsQuery: get('merge_partitions_query'),
    updateGroup: Number(get('update_group')),
    minTimeColumn: given.get('min_time_column') ?? timeColumn ?? '',
    maxTimeColumn: given.get('max_time_column') ?? timeColumn ?? '',
    sourcePartitionDelta: sourceDelta,
    sourceDeltaSeconds: parseDelta(sourceDelta) ?? 0,
    mergePartitionDelta: mergeDelta,
    mergeDeltaSeconds: parseDelta(mergeDelta) ?? 0,
  };
  if (timeColumn !== undefined) options.timeColumn = timeColumn;
  if (given.has('merge_sort_order')) options.mergeSortOrder = sortOrder(get('merge_sort_order'));
  return options;
}
