// The sqllogictest-style case format of test/sql/*.test (described in test/sql/README.md): parsing a
// file into records, and rendering an Arrow table as the text rows a `query` record expects.
import { DataType, type Table, type Vector } from 'apache-arrow';

/** Who runs a statement: a key of the test server, or `anonymous` (no key at all). */
export type CaseUser = 'admin' | 'reader' | 'team_x' | 'anonymous';
export const caseUsers: readonly CaseUser[] = ['admin', 'reader', 'team_x', 'anonymous'];

/** The Flight SQL call a statement goes through. */
export type CasePath = 'query' | 'update' | 'prepared';
const casePaths: readonly CasePath[] = ['query', 'update', 'prepared'];

/** A condition a record may run under (`onlyif native` / `skipif native`): the server uses the native Arrow exporter. */
export type CaseCondition = 'native';

interface RecordBase {
  /** 1-based line of the record's first line in its file. */
  readonly line: number;
  readonly user: CaseUser;
  /** `onlyif native`: run only when the condition holds; `skipif native`: only when it does not. */
  readonly only?: { readonly condition: CaseCondition; readonly holds: boolean };
}

export type CaseRecord =
  | (RecordBase & { kind: 'statement ok'; sql: string; path: CasePath })
  | (RecordBase & { kind: 'statement error'; sql: string; path: CasePath; status: string; message: string })
  | (RecordBase & {
      kind: 'query';
      sql: string;
      path: CasePath;
      types: string;
      rowsort: boolean;
      /** `query <types> names`: the column names, the first line after `----`. */
      names?: string[];
      rows: string[];
    })
  | (RecordBase & { kind: 'ingest'; exe: string; count: number; pods?: number });

export interface CaseFile {
  readonly name: string;
  readonly description: string;
  /** Settings the file's server starts with (`setting NAME VALUE` lines). */
  readonly settings: Record<string, string>;
  readonly records: readonly CaseRecord[];
}

/** gRPC status names a `statement error` may expect. */
export const grpcStatusNames = [
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

/** A mistake in a case file, reported with its file and line. */
export class CaseFileError extends Error {}

/** `${NAME}` in a case's SQL, expected text or setting: replaced when the case runs. */
const variable = /\$\{([A-Z_]+)\}/g;

/**
 * Parses a case file. `${NAME}` may name one of `variables` (substituted when the file runs, by
 * {@link substitute}); any other name is an error, so a typo cannot silently become part of the SQL.
 */
export function parseCaseFile(file: string, text: string, variables: readonly string[]): CaseFile {
  const lines = text.split('\n').map((l) => l.replace(/\r$/, ''));
  const fail = (line: number, message: string): never => {
    throw new CaseFileError(`${file}:${line}: ${message}`);
  };
  const checked = (value: string, line: number): string => {
    for (const [, name] of value.matchAll(variable))
      if (!variables.includes(name)) fail(line, `unknown variable \${${name}}`);
    return value;
  };
  const header = (key: string): string => {
    const found = lines.find((l) => l.startsWith(`# ${key}:`));
    return found ? found.slice(key.length + 3).trim() : fail(1, `the file must start with a '# ${key}:' header`);
  };
  const name = header('name');
  if (name !== file) fail(1, `'# name: ${name}' does not match the file's path ${file}`);
  const description = header('description');

  const settings: Record<string, string> = {};
  const records: CaseRecord[] = [];
  let user: CaseUser = 'admin';
  let only: RecordBase['only'];
  let i = 0;
  /** Lines from i up to a blank line or a `----` separator (not consumed). */
  const block = (): string[] => {
    const out: string[] = [];
    while (i < lines.length && lines[i].trim() !== '' && lines[i] !== '----') out.push(lines[i++]);
    return out;
  };
  /** Lines after a `----` up to a blank line (or the end of the file). */
  const expected = (): string[] => {
    i++; // the separator
    const out: string[] = [];
    while (i < lines.length && lines[i] !== '') out.push(lines[i++]);
    return out;
  };
  const takePath = (words: string[], line: number): CasePath => {
    const at = words.indexOf('via');
    if (at < 0) return 'query';
    const path = words[at + 1] as CasePath;
    if (!casePaths.includes(path)) fail(line, `'via' takes one of ${casePaths.join(', ')}`);
    words.splice(at, 2);
    return path;
  };

  while (i < lines.length) {
    const raw = lines[i];
    const line = i + 1;
    if (raw.trim() === '' || raw.startsWith('#')) {
      i++;
      continue;
    }
    const words = raw.trim().split(/\s+/);
    i++;
    if (only && !['statement', 'query'].includes(words[0]))
      fail(line, `'${only.holds ? 'onlyif' : 'skipif'}' must be followed by a statement or a query`);
    switch (words[0]) {
      case 'onlyif':
      case 'skipif': {
        if (words.length !== 2 || words[1] !== 'native') fail(line, `'${words[0]}' takes a condition: native`);
        only = { condition: 'native', holds: words[0] === 'onlyif' };
        break;
      }
      case 'user': {
        if (words.length !== 2 || !caseUsers.includes(words[1] as CaseUser))
          fail(line, `'user' takes one of ${caseUsers.join(', ')}`);
        user = words[1] as CaseUser;
        break;
      }
      case 'setting': {
        if (records.length > 0)
          fail(line, "'setting' lines come before the first record: they configure the server the file starts");
        if (words.length < 3) fail(line, "'setting' takes a name and a value");
        settings[words[1]] = checked(raw.trim().split(/\s+/).slice(2).join(' '), line);
        break;
      }
      case 'ingest': {
        // ingest logs <exe> <count> [pods <n>]: <count> OTLP log records of a process named <exe>, sent with the
        // current user's key; with `pods <n>`, record i has the attribute pod = pod-<i % n>.
        const count = Number(words[3]);
        const pods = words.length === 6 && words[4] === 'pods' ? Number(words[5]) : undefined;
        if (
          (words.length !== 4 && pods === undefined) ||
          words[1] !== 'logs' ||
          !Number.isInteger(count) ||
          count < 1 ||
          (pods !== undefined && (!Number.isInteger(pods) || pods < 1))
        )
          fail(line, "'ingest' reads: ingest logs <exe> <count> [pods <n>]");
        if (user === 'anonymous') fail(line, "'ingest' needs a key: set 'user' first");
        records.push({ kind: 'ingest', line, user, exe: words[2], count, ...(pods === undefined ? {} : { pods }) });
        break;
      }
      case 'statement': {
        const when = only ? { only } : {};
        only = undefined;
        const path = takePath(words, line);
        const sql = checked(block().join('\n'), line);
        if (sql === '') fail(line, 'the statement has no SQL');
        if (words[1] === 'ok' && words.length === 2) {
          if (lines[i] === '----') fail(i + 1, "'statement ok' expects no result: use 'query' to check rows");
          records.push({ kind: 'statement ok', line, user, ...when, sql, path });
        } else if (words[1] === 'error' && words.length === 3) {
          if (!grpcStatusNames.includes(words[2]))
            fail(line, `'${words[2]}' is not a gRPC status name (${grpcStatusNames.join(', ')})`);
          if (lines[i] !== '----')
            fail(i + 1, "'statement error' needs '----' and the exact error message after the SQL");
          // A blank line inside a message (DuckDB's 'LINE 1:' context follows one) is written '(empty)'.
          const message = checked(
            expected()
              .map((l) => (l === '(empty)' ? '' : l))
              .join('\n'),
            line,
          );
          if (message === '') fail(line, "'statement error' needs the exact error message after '----'");
          records.push({ kind: 'statement error', line, user, ...when, sql, path, status: words[2], message });
        } else {
          fail(
            line,
            "a statement reads 'statement ok' or 'statement error <gRPC status>', optionally followed by 'via <path>'",
          );
        }
        break;
      }
      case 'query': {
        const when = only ? { only } : {};
        only = undefined;
        const path = takePath(words, line);
        const types = words[1] ?? '';
        const options = words.slice(2);
        if (
          !/^[IRT]+$/.test(types) ||
          options.some((o) => o !== 'rowsort' && o !== 'names') ||
          new Set(options).size !== options.length
        ) {
          fail(line, "a query reads 'query <column types: I, R or T per column> [rowsort] [names]'");
        }
        const sql = checked(block().join('\n'), line);
        if (sql === '') fail(line, 'the query has no SQL');
        if (lines[i] !== '----') fail(i + 1, "a query needs '----' and its expected rows after the SQL");
        const rows = expected().map((r) => checked(r, line));
        // With `names`, the first line is the column names, tab-separated.
        let names: string[] | undefined;
        if (options.includes('names')) {
          names = rows.shift()?.split('\t') ?? [];
          if (names.length !== types.length)
            fail(line, `'names' needs the first line after '----' to name each of the ${types.length} columns`);
        }
        const rowsort = options.includes('rowsort');
        records.push({
          kind: 'query',
          line,
          user,
          ...when,
          sql,
          path,
          types,
          rowsort,
          ...(names ? { names } : {}),
          rows,
        });
        break;
      }
      default:
        fail(line, `unknown record '${words[0]}' (statement, query, user, setting, ingest, onlyif, skipif)`);
    }
  }
  if (only) fail(lines.length, `'${only.holds ? 'onlyif' : 'skipif'}' at the end of the file applies to nothing`);
  return { name, description, settings, records };
}

/** `text` with each `${NAME}` replaced by its value. */
export function substitute(text: string, values: Readonly<Record<string, string>>): string {
  return text.replace(variable, (whole, name: string) => values[name] ?? whole);
}

/** The letter a column of this Arrow type must be declared with. */
export function typeLetter(type: DataType): 'I' | 'R' | 'T' {
  if (DataType.isInt(type)) return 'I';
  if (DataType.isFloat(type) || DataType.isDecimal(type)) return 'R';
  return 'T';
}

/** The rows of a table as the case format writes them: columns joined by a tab, NULL, (empty), ISO times. */
export function renderRows(table: Table): string[] {
  const columns = table.schema.fields.map((field, c) => renderColumn(field.type, table.getChildAt(c)!));
  return Array.from({ length: table.numRows }, (_, r) => columns.map((column) => column[r]).join('\t'));
}

function renderColumn(type: DataType, vector: Vector): string[] {
  // Arrow's getters round timestamps to milliseconds and give decimals as words: read the raw values.
  if (DataType.isTimestamp(type))
    return rawValues(vector, 1, (values) => renderTimestamp(type.unit, values[0] as bigint));
  if (DataType.isDecimal(type)) return rawValues(vector, 4, (words) => renderDecimal(words, type.scale));
  if (DataType.isDate(type))
    return [...vector].map((ms) => (ms === null ? 'NULL' : new Date(ms as number).toISOString().slice(0, 10)));
  return [...vector].map(renderValue);
}

/** Each value of a column as its `stride` raw elements (NULL for nulls), rendered. */
function rawValues(vector: Vector, stride: number, render: (values: ArrayLike<number | bigint>) => string): string[] {
  const out: string[] = [];
  for (const data of vector.data) {
    const values = data.values as ArrayLike<number | bigint> & {
      subarray(begin: number, end: number): ArrayLike<number | bigint>;
    };
    for (let j = 0; j < data.length; j++)
      out.push(data.getValid(j) ? render(values.subarray(j * stride, (j + 1) * stride)) : 'NULL');
  }
  return out;
}

/** A 128-bit two's complement decimal (four little-endian 32-bit words) with its scale, e.g. 12.50. */
function renderDecimal(words: ArrayLike<number | bigint>, scale: number): string {
  let unscaled = 0n;
  for (let w = 3; w >= 0; w--) unscaled = (unscaled << 32n) | BigInt(Number(words[w]) >>> 0);
  if (unscaled >= 1n << 127n) unscaled -= 1n << 128n;
  const sign = unscaled < 0n ? '-' : '';
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  return scale === 0 ? `${sign}${digits}` : `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Nanoseconds (or the type's unit) since the epoch as `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, the fraction without trailing zeros. */
function renderTimestamp(unit: number, raw: bigint): string {
  const perSecond = [1n, 1_000n, 1_000_000n, 1_000_000_000n][unit];
  const seconds = raw / perSecond - (raw % perSecond < 0n ? 1n : 0n);
  const fraction = raw - seconds * perSecond;
  const base = new Date(Number(seconds) * 1000).toISOString().slice(0, 19);
  const digits = String(perSecond).length - 1;
  const fractionText = digits === 0 ? '' : String(fraction).padStart(digits, '0').replace(/0+$/, '');
  return `${base}${fractionText ? `.${fractionText}` : ''}Z`;
}

function renderValue(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (value === '') return '(empty)';
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean') return String(value);
  const json = (value as { toJSON?: () => unknown }).toJSON?.() ?? value;
  return JSON.stringify(json, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}
