// The entries of a `*.resources.json` file, as the spec lists them (database-resources.md, Entries),
// checked for shape: key syntax, one kind per entry, each kind's fields and their types.
import { parseJsonText } from './json-text.js';

export type ResourceKind = 'column' | 'index' | 'projection' | 'rollup';
export const resourceKinds: readonly ResourceKind[] = ['column', 'index', 'projection', 'rollup'];
export type IndexKind = 'bloom_filter' | 'minmax' | 'set' | 'text';
export const indexKinds: readonly IndexKind[] = ['bloom_filter', 'minmax', 'set', 'text'];

/** A problem found in a file, reported as a compiler does: file, entry, severity, message. */
export interface Diagnostic {
  readonly file: string;
  /** The entry key, or null for the file as a whole. */
  readonly entry: string | null;
  readonly severity: 'error' | 'warning';
  readonly message: string;
}

interface EntryBase {
  /** The key under `resources`. */
  readonly key: string;
  /** The file's path relative to the publication folder. */
  readonly file: string;
  /** `table` as written: a view set name, or `<views file>#<view set>`. */
  readonly table: string;
  /** Serve the revision before this entry's mutations and backfill finish. */
  readonly async: boolean;
}

export interface ColumnEntry extends EntryBase {
  readonly kind: 'column';
  readonly expression: string;
  readonly type: string | null;
}

export interface IndexEntry extends EntryBase {
  readonly kind: 'index';
  readonly column: string;
  readonly indexKind: IndexKind;
}

export interface ProjectionEntry extends EntryBase {
  readonly kind: 'projection';
  readonly orderBy: readonly string[];
  /** The columns it stores besides order_by; null: every ordinary column. */
  readonly columns: readonly string[] | null;
}

/** A named aggregate expression over the view set (`"requests": "count(*)"`). */
export interface Measure {
  readonly name: string;
  readonly expression: string;
}

export interface RollupEntry extends EntryBase {
  readonly kind: 'rollup';
  readonly grain: string;
  readonly grainSeconds: number;
  readonly dimensions: readonly string[];
  readonly measures: readonly Measure[];
  readonly retention: string | null;
  readonly retentionSeconds: number | null;
  /** A finer rollup entry of the same file this one is computed from. */
  readonly from: string | null;
}

export type ResourceEntry = ColumnEntry | IndexEntry | ProjectionEntry | RollupEntry;

/** One file: its entries that have a valid shape, and what was wrong with the others. */
export interface ResourcesFile {
  readonly path: string;
  readonly entries: readonly ResourceEntry[];
  readonly diagnostics: readonly Diagnostic[];
}

export const entryKeyPattern = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const namePattern = /^[A-Za-z_][A-Za-z0-9_]*$/;
const durationUnits: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

/** `1m`, `15m`, `1h`, `400d` in seconds; null when not `<positive integer><s|m|h|d>`. */
export function parseDuration(text: string): number | null {
  const match = /^([1-9]\d*)([smhd])$/.exec(text);
  return match ? Number(match[1]) * durationUnits[match[2]] : null;
}

const commonFields = ['table', 'async'];
const kindFields: Record<ResourceKind, readonly string[]> = {
  column: ['expression', 'type'],
  index: ['column', 'kind'],
  projection: ['order_by', 'columns'],
  rollup: ['grain', 'dimensions', 'measures', 'retention', 'from'],
};

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const describe = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value === 'object' ? 'an object' : typeof value;

/** Parses one file's text; every shape problem becomes an error diagnostic and drops its entry. */
export function parseResourcesFile(path: string, text: string): ResourcesFile {
  const diagnostics: Diagnostic[] = [];
  const error = (entry: string | null, message: string): void => {
    diagnostics.push({ file: path, entry, severity: 'error', message });
  };
  let document;
  try {
    document = parseJsonText(text);
  } catch (problem) {
    error(null, `not valid JSON: ${(problem as Error).message}`);
    return { path, entries: [], diagnostics };
  }
  for (const repeated of document.repeatedKeys) {
    const [top, key, ...rest] = repeated.split('.');
    if (top === 'resources' && rest.length === 0) error(key, `the key '${key}' appears twice in the file`);
    else error(null, `the key '${repeated}' appears twice in the file`);
  }
  const root = document.value;
  if (!isObject(root) || !isObject(root.resources)) {
    error(null, 'a resources file is an object with a "resources" object: {"resources": {"<key>": {...}}}');
    return { path, entries: [], diagnostics };
  }
  for (const field of Object.keys(root)) {
    if (field !== 'resources') error(null, `unknown field '${field}' (a resources file holds only "resources")`);
  }
  const entries: ResourceEntry[] = [];
  for (const [key, body] of Object.entries(root.resources)) {
    const problems: string[] = [];
    const entry = parseEntry(path, key, body, problems);
    for (const problem of problems) error(key, problem);
    if (entry && problems.length === 0) entries.push(entry);
  }
  return { path, entries, diagnostics };
}

function parseEntry(file: string, key: string, body: unknown, problems: string[]): ResourceEntry | null {
  if (!entryKeyPattern.test(key)) {
    problems.push(`the key '${key}' must start with a letter or _ and hold only letters, digits, _ or -`);
  }
  if (!isObject(body)) {
    problems.push(`an entry is an object with one kind (${resourceKinds.join(', ')}), not ${describe(body)}`);
    return null;
  }
  const kinds = Object.keys(body).filter((k): k is ResourceKind => resourceKinds.includes(k as ResourceKind));
  for (const field of Object.keys(body)) {
    if (!resourceKinds.includes(field as ResourceKind))
      problems.push(`unknown field '${field}': an entry holds one kind (${resourceKinds.join(', ')})`);
  }
  if (kinds.length !== 1) {
    if (kinds.length === 0) problems.push(`the entry has no kind (one of ${resourceKinds.join(', ')})`);
    else problems.push(`the entry has ${kinds.length} kinds (${kinds.join(', ')}); an entry has one kind`);
    return null;
  }
  const kind = kinds[0];
  const fields = body[kind];
  if (!isObject(fields)) {
    problems.push(`'${kind}' must be an object of fields, not ${describe(fields)}`);
    return null;
  }
  for (const field of Object.keys(fields)) {
    if (!commonFields.includes(field) && !kindFields[kind].includes(field)) {
      problems.push(`unknown ${kind} field '${field}' (${[...commonFields, ...kindFields[kind]].join(', ')})`);
    }
  }
  const string = (field: string, required: boolean): string | null => {
    const value = fields[field];
    if (value === undefined && !required) return null;
    if (typeof value !== 'string' || value.trim() === '') {
      problems.push(
        `${kind}.${field} must be a non-empty string${value === undefined ? '' : `, not ${describe(value)}`}`,
      );
      return null;
    }
    return value;
  };
  const names = (field: string, required: boolean): string[] | null => {
    const value = fields[field];
    if (value === undefined && !required) return null;
    if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string' && v !== '')) {
      problems.push(`${kind}.${field} must be a non-empty array of column names`);
      return null;
    }
    const strings = value as string[];
    for (const name of strings) {
      if (!namePattern.test(name)) problems.push(`${kind}.${field}: '${name}' is not a column name`);
    }
    const repeated = strings.filter((name, i) => strings.indexOf(name) !== i);
    if (repeated.length > 0) problems.push(`${kind}.${field} names '${repeated[0]}' twice`);
    return strings;
  };
  const table = string('table', true) ?? '';
  if (table && !/^[^#\s]+(#[A-Za-z_][A-Za-z0-9_]*)?$/.test(table)) {
    problems.push(`table '${table}' is neither a view set name nor <views file>#<view set>`);
  }
  if (fields.async !== undefined && typeof fields.async !== 'boolean')
    problems.push(`${kind}.async must be true or false, not ${describe(fields.async)}`);
  const base = { key, file, table, async: fields.async === true };
  switch (kind) {
    case 'column': {
      const expression = string('expression', true) ?? '';
      return { ...base, kind, expression, type: string('type', false) };
    }
    case 'index': {
      const column = string('column', true) ?? '';
      const indexKind = string('kind', true);
      if (indexKind !== null && !indexKinds.includes(indexKind as IndexKind))
        problems.push(`index.kind '${indexKind}' is not one of ${indexKinds.join(', ')}`);
      return { ...base, kind, column, indexKind: indexKind as IndexKind };
    }
    case 'projection':
      return { ...base, kind, orderBy: names('order_by', true) ?? [], columns: names('columns', false) };
    case 'rollup': {
      const grain = string('grain', true) ?? '';
      const grainSeconds = parseDuration(grain);
      if (grain && grainSeconds === null) problems.push(`rollup.grain '${grain}' is not a duration such as 1m or 1h`);
      const retention = string('retention', false);
      const retentionSeconds = retention === null ? null : parseDuration(retention);
      if (retention !== null && retentionSeconds === null)
        problems.push(`rollup.retention '${retention}' is not a duration such as 400d`);
      const measures: Measure[] = [];
      if (!isObject(fields.measures) || Object.keys(fields.measures).length === 0) {
        problems.push('rollup.measures is missing: an object of named aggregate expressions, {"requests": "count(*)"}');
      } else {
        for (const [name, expression] of Object.entries(fields.measures)) {
          if (!namePattern.test(name)) problems.push(`rollup measure name '${name}' is not a column name`);
          if (typeof expression !== 'string' || expression.trim() === '')
            problems.push(`rollup measure '${name}' is missing its aggregate expression`);
          else measures.push({ name, expression });
        }
      }
      const dimensions = fields.dimensions === undefined ? [] : (names('dimensions', true) ?? []);
      return {
        ...base,
        kind,
        grain,
        grainSeconds: grainSeconds ?? 0,
        dimensions,
        measures,
        retention,
        retentionSeconds,
        from: string('from', false),
      };
    }
  }
}
