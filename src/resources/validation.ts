// Validation of a publication's resources files (database-resources.md, Validation): every error
// and warning of the spec, reported under the file's path and the entry key. Errors stop a
// publication; a warning says the database cannot install the entry (and why) or how a name is read.
import { createHash } from 'node:crypto';
import type { ColumnSpec } from '../views/index.js';
import type {
  ColumnEntry,
  Diagnostic,
  IndexEntry,
  ProjectionEntry,
  ResourceEntry,
  ResourcesFile,
  RollupEntry,
} from './declarations.js';
import type { ExpressionAnalyzer, ExpressionFacts } from './expressions.js';

/** A view table resolved to its physical table (the view set whose partitions hold its rows). */
export type TableResolution = Resolved | { readonly problem: string };

/** Resolves an entry's `table` (a view set name, or `<views file>#<view set>`). */
export type ResolveTable = (table: string) => TableResolution;

/** An entry that passed validation, with what installing it needs. */
export type ValidEntry = ResourceEntry & {
  readonly physical: string;
  /** Why the database cannot install it (a warning was given); null when it can. */
  readonly unsupported: string | null;
} & (
    | {
        readonly kind: 'column';
        /** The stored column's name (`__orr_<hash>`) and type. */
        readonly storedName: string;
        readonly storedType: string | null;
        readonly canonical: string;
        /** DuckDB's type of the expression over the table: queries read the stored column in its place only when it is stored as this type. */
        readonly expressionType: string | null;
        /** An existing column of the table that computes the same expression, which satisfies the entry. */
        readonly satisfiedBy: string | null;
      }
    | {
        readonly kind: 'index';
        /**
         * The SQL it reads when its column names a column entry of its file: that entry's expression.
         * Absent for a physical column, so the hash of an index on one stays; a changed expression changes
         * the hash (its statistics are of other values), so publish installs it anew and retires the old one.
         */
        readonly indexedExpression?: string;
      }
    | {
        readonly kind: 'projection';
        /**
         * The physical columns it sorts by, when its order_by names a column entry: the column that computes
         * it, or its stored column. Absent otherwise, so the hash of a projection by columns stays; a changed
         * expression changes the hash (its copies are sorted by another column).
         */
        readonly sortedBy?: readonly string[];
      }
    | {
        readonly kind: 'rollup';
        /** The shape of the rollups its `from` chain reads (grain, dimensions, measures), so a changed source gives a new hash. */
        readonly fromShape: string | null;
      }
  );

export interface ValidationResult {
  readonly diagnostics: readonly Diagnostic[];
  readonly entries: readonly ValidEntry[];
}

/** The stored column's name: `__orr_` and 16 hex digits of the expression's canonical form and type. */
export function storedColumnName(canonical: string, type: string): string {
  return `__orr_${createHash('sha256').update(`${canonical}\u0000${type.toUpperCase()}`).digest('hex').slice(0, 16)}`;
}

/** Validates every file of a publication against the tables `resolve` knows. */
export async function validateResources(
  files: readonly ResourcesFile[],
  resolve: ResolveTable,
  analyzer: ExpressionAnalyzer,
): Promise<ValidationResult> {
  const diagnostics: Diagnostic[] = files.flatMap((f) => f.diagnostics);
  const entries: ValidEntry[] = [];
  const storedExpressions = new Map<string, string>();
  for (const file of files) {
    const checker = new FileChecker(file, resolve, analyzer, diagnostics, storedExpressions);
    entries.push(...(await checker.run()));
  }
  return { diagnostics, entries };
}

class FileChecker {
  private readonly tables = new Map<string, TableResolution>();
  private readonly byKey: Map<string, ResourceEntry>;
  private readonly measures = new Map<string, string>();

  constructor(
    private readonly file: ResourcesFile,
    private readonly resolve: ResolveTable,
    private readonly analyzer: ExpressionAnalyzer,
    private readonly diagnostics: Diagnostic[],
    /** `<physical table>\u0000<canonical expression>` → the first entry storing it (`file: key`). */
    private readonly storedExpressions: Map<string, string>,
  ) {
    this.byKey = new Map(file.entries.map((e) => [e.key, e]));
    for (const entry of file.entries) {
      if (entry.kind === 'rollup') for (const m of entry.measures) this.measures.set(m.name.toLowerCase(), entry.key);
    }
  }

  async run(): Promise<ValidEntry[]> {
    const valid: ValidEntry[] = [];
    for (const entry of this.file.entries) {
      const before = this.errorCount();
      const table = await this.table(entry);
      if (!('physical' in table)) {
        this.error(entry, table.problem);
        continue;
      }
      const unsupported = await this.check(entry, table);
      if (this.errorCount() > before) continue;
      if (entry.kind === 'column') valid.push({ ...entry, physical: table.physical, ...(unsupported as ColumnFacts) });
      else if (entry.kind === 'rollup')
        valid.push({
          ...entry,
          physical: table.physical,
          unsupported: unsupported as string | null,
          fromShape: this.fromShape(entry),
        });
      else valid.push({ ...entry, physical: table.physical, unsupported: unsupported as string | null });
    }
    return valid.map((entry) =>
      entry.kind === 'projection'
        ? this.withSortedBy(entry, valid)
        : entry.kind === 'index'
          ? this.withIndexedExpression(entry, valid)
          : entry,
    );
  }

  /** An index with the expression it reads, when its column names a column entry (see indexedExpression). */
  private withIndexedExpression(entry: ValidEntry & { kind: 'index' }, valid: readonly ValidEntry[]): ValidEntry {
    const { columns } = this.tables.get(entry.table) as Resolved;
    // A name of both is read as the table's column (nameType warns).
    if (columns.some((c) => c.name.toLowerCase() === entry.column.toLowerCase())) return entry;
    const column = valid.find((e) => e.key === entry.column);
    return column?.kind === 'column' ? { ...entry, indexedExpression: column.expression } : entry;
  }

  /** A projection with the physical columns it sorts by, when its order_by names a column entry (see sortedBy). */
  private withSortedBy(entry: ValidEntry & { kind: 'projection' }, valid: readonly ValidEntry[]): ValidEntry {
    const { columns } = this.tables.get(entry.table) as Resolved;
    const sortedBy = entry.orderBy.map((name) => {
      // A name of both is read as the table's column (nameType warns).
      if (columns.some((c) => c.name.toLowerCase() === name.toLowerCase())) return name;
      const column = valid.find((e) => e.key === name);
      return column?.kind === 'column' ? (column.satisfiedBy ?? column.storedName) : name;
    });
    return sortedBy.some((name, i) => name !== entry.orderBy[i]) ? { ...entry, sortedBy } : entry;
  }

  private errorCount(): number {
    return this.diagnostics.filter((d) => d.severity === 'error').length;
  }

  private error(entry: ResourceEntry, message: string): void {
    this.diagnostics.push({ file: this.file.path, entry: entry.key, severity: 'error', message });
  }

  private warn(entry: ResourceEntry, message: string): void {
    this.diagnostics.push({ file: this.file.path, entry: entry.key, severity: 'warning', message });
  }

  private cannotInstall(entry: ResourceEntry, reason: string): string {
    this.warn(entry, `cannot be installed: ${reason}`);
    return reason;
  }

  private async table(entry: ResourceEntry): Promise<TableResolution> {
    const known = this.tables.get(entry.table);
    if (known) return known;
    let resolution = this.resolve(entry.table);
    if ('physical' in resolution) {
      const problem = await this.analyzer.defineTable(resolution.physical, resolution.columns);
      if (problem) resolution = { problem: `the columns of ${resolution.physical} cannot be read: ${problem}` };
    }
    this.tables.set(entry.table, resolution);
    return resolution;
  }

  private check(entry: ResourceEntry, table: Resolved): Promise<ColumnFacts | string | null> {
    switch (entry.kind) {
      case 'column':
        return this.checkColumn(entry, table);
      case 'index':
        return Promise.resolve(this.checkIndex(entry, table));
      case 'projection':
        return Promise.resolve(this.checkProjection(entry, table));
      case 'rollup':
        return this.checkRollup(entry, table);
    }
  }

  private async checkColumn(entry: ColumnEntry, table: Resolved): Promise<ColumnFacts> {
    const facts = await this.analyzer.analyze(table.physical, entry.expression);
    const physical = new Set(table.columns.map((c) => c.name.toLowerCase()));
    const fallback: ColumnFacts = {
      unsupported: null,
      storedName: '',
      storedType: null,
      canonical: '',
      expressionType: null,
      satisfiedBy: null,
    };
    const what = `expression '${entry.expression}'`;
    if (facts.qualified.length > 0) {
      this.error(entry, `${what} uses a qualified name (${facts.qualified[0]}); name the table's columns alone`);
      return fallback;
    }
    for (const name of facts.columns) {
      if (physical.has(name)) continue;
      const other = this.byKey.get(name);
      if (this.measures.has(name)) {
        this.error(entry, `${what} reads '${name}', a measure of rollup '${this.measures.get(name)}'`);
        return fallback;
      }
      if (other) {
        this.error(entry, `${what} reads '${name}', another resource entry; read the table's columns`);
        return fallback;
      }
    }
    if (facts.window) {
      this.error(entry, `${what} calls a window function; a stored column is a row expression`);
      return fallback;
    }
    if (facts.problem) {
      this.error(entry, `${what} ${facts.problem}`);
      return fallback;
    }
    if (facts.aggregate) {
      this.error(entry, `${what} calls an aggregate function; a stored column is a row expression`);
      return fallback;
    }
    const key = `${table.physical}\u0000${facts.canonical}`;
    const first = this.storedExpressions.get(key);
    if (first) {
      this.error(entry, `stores the same expression on ${table.physical} as ${first}`);
      return fallback;
    }
    this.storedExpressions.set(key, `${this.file.path}: ${entry.key}`);
    const satisfiedBy = facts.root === 'column' ? facts.columns[0] : null;
    const inferred = facts.root === 'property' || facts.root === 'string' ? 'VARCHAR' : null;
    const storedType = entry.type ?? inferred;
    let unsupported: string | null = null;
    if (storedType === null && satisfiedBy === null) {
      unsupported = this.cannotInstall(
        entry,
        `declare "type" for ${what} (${facts.type}); only JSON property reads, string literals and string functions are stored as VARCHAR without it`,
      );
    } else if (entry.type !== null) {
      const cast = await this.analyzer.analyze(table.physical, `CAST((${entry.expression}) AS ${entry.type})`);
      if (cast.problem) this.error(entry, `type '${entry.type}' cannot hold ${what}: ${cast.problem}`);
    }
    return {
      unsupported,
      storedName: storedType === null ? '' : storedColumnName(facts.canonical, storedType),
      storedType,
      canonical: facts.canonical,
      expressionType: facts.type,
      satisfiedBy,
    };
  }

  /**
   * Resolves a name an index, projection or rollup reads: a column entry of this file on the same
   * physical table, or a column of the table. Returns its type, or null after reporting an error.
   */
  private nameType(entry: ResourceEntry, field: string, name: string, table: Resolved): string | null | undefined {
    const lower = name.toLowerCase();
    const column = table.columns.find((c) => c.name.toLowerCase() === lower);
    const other = this.byKey.get(name);
    if (this.measures.has(lower) && !column) {
      this.error(entry, `${field} '${name}' is a measure of rollup '${this.measures.get(lower)}', not a column`);
      return undefined;
    }
    if (other && other.kind === 'column') {
      if (column) {
        this.warn(
          entry,
          `${field} '${name}' names both column entry '${name}' and the column ${name} of ${table.physical}; it is read as the column`,
        );
        return column.type;
      }
      const target = this.tables.get(other.table);
      const otherPhysical = target && 'physical' in target ? target.physical : null;
      if (otherPhysical !== null && otherPhysical !== table.physical) {
        this.error(entry, `${field} '${name}' is a column entry of ${otherPhysical}, not of ${table.physical}`);
        return undefined;
      }
      return other.type ?? 'VARCHAR';
    }
    if (column) return column.type;
    if (other) {
      this.error(entry, `${field} '${name}' is a ${other.kind} entry, not a column`);
      return undefined;
    }
    this.error(entry, `${field} '${name}' is neither a column entry of this file nor a column of ${table.physical}`);
    return undefined;
  }

  private checkIndex(entry: IndexEntry, table: Resolved): string | null {
    const type = this.nameType(entry, 'index.column', entry.column, table);
    if (type === undefined) return null;
    if (entry.indexKind === 'text') {
      if (type !== null && !/^(VARCHAR|JSON)$/i.test(type))
        return this.cannotInstall(entry, `a text index needs a text column; ${entry.column} is ${type}`);
      const earlier = this.file.entries.find(
        (e) => e.kind === 'index' && e.indexKind === 'text' && e.column === entry.column && e.table === entry.table,
      );
      if (earlier && earlier.key !== entry.key)
        return this.cannotInstall(entry, `${entry.column} already has text index '${earlier.key}' (one per column)`);
    }
    return null;
  }

  private checkProjection(entry: ProjectionEntry, table: Resolved): string | null {
    for (const name of entry.orderBy) this.nameType(entry, 'projection.order_by', name, table);
    for (const name of entry.columns ?? []) this.nameType(entry, 'projection.columns', name, table);
    return null;
  }

  private async checkRollup(entry: RollupEntry, table: Resolved): Promise<string | null> {
    for (const name of entry.dimensions) this.nameType(entry, 'rollup dimension', name, table);
    let unsupported: string | null = null;
    for (const measure of entry.measures) {
      const facts = await this.analyzer.analyze(table.physical, measure.expression);
      const what = `measure '${measure.name}' (${measure.expression})`;
      const entryRead = facts.columns.find((c) => this.byKey.has(c) && !table.columns.some((t) => t.name === c));
      // Matched in the text: ClickHouse's parametric quantilesIfOrNull(0.5)(x, c) does not parse in DuckDB.
      const refused = /\b(countIfOrNull|uniqIfOrNull|quantilesIfOrNull)\s*\(/i
        .exec(measure.expression)?.[1]
        .toLowerCase();
      // The spec's maxMap and minMap (per-key extremes of a map) are ClickHouse's; DuckDB has no such aggregate to bind.
      const map = /\b((?:max|min)Map(?:If)?)\s*\(/i.exec(measure.expression)?.[1];
      if (entryRead) {
        this.error(entry, `${what} reads '${entryRead}', a resource entry; measures read the table's columns`);
      } else if (refused) {
        this.error(entry, `${what} ${orNullAfterIf.get(refused)!}`);
      } else if (facts.clock) {
        this.error(entry, `${what} ${facts.clock}`);
      } else if (map && facts.problem) {
        unsupported ??= `${what}: ${map} has no DuckDB aggregate, and Orrery stores no per-key state; add the map's key to dimensions and store ${map.slice(0, 3).toLowerCase()}(value) instead`;
      } else if (facts.problem) {
        this.error(entry, `${what} ${facts.problem}`);
      } else if (facts.window) {
        this.error(entry, `${what} calls a window function`);
      } else if (!facts.aggregate) {
        this.error(entry, `${what} is a row scalar; a measure aggregates (count(*), sum(x), …)`);
      } else {
        unsupported ??= storableProblem(facts) ?? seriesProblem(what, facts, entry.dimensions, table);
      }
    }
    if (unsupported) this.cannotInstall(entry, unsupported);
    if (entry.grainSeconds > 0 && 86_400 % entry.grainSeconds !== 0) {
      unsupported ??= this.cannotInstall(entry, `grain ${entry.grain} does not divide the bucket ladder (one day)`);
    }
    if (entry.from !== null) unsupported = this.checkFrom(entry) ?? unsupported;
    return unsupported;
  }

  /** The grain, dimensions and measures of every rollup of the `from` chain, as JSON; null without `from`. */
  private fromShape(entry: RollupEntry): string | null {
    const chain: unknown[] = [];
    const seen = new Set<string>();
    for (let at = entry.from === null ? undefined : this.byKey.get(entry.from); at?.kind === 'rollup';) {
      if (seen.has(at.key)) break;
      seen.add(at.key);
      chain.push([at.grain, at.dimensions, at.measures]);
      at = at.from === null ? undefined : this.byKey.get(at.from);
    }
    return entry.from === null ? null : JSON.stringify(chain);
  }

  private checkFrom(entry: RollupEntry): string | null {
    const source = this.byKey.get(entry.from!);
    if (!source || source.kind !== 'rollup') {
      this.error(entry, `from: '${entry.from}' is not a rollup of this file`);
      return null;
    }
    const seen = new Set([entry.key]);
    for (let at: ResourceEntry | undefined = source; at?.kind === 'rollup' && at.from !== null;) {
      if (seen.has(at.key) || at.from === entry.key) {
        this.error(entry, `from: '${entry.from}' forms a cycle (${[...seen, at.key, at.from].join(' → ')})`);
        return null;
      }
      seen.add(at.key);
      at = this.byKey.get(at.from);
    }
    if (source.grainSeconds > 0 && entry.grainSeconds % source.grainSeconds !== 0) {
      this.error(entry, `from: '${entry.from}': its grain ${source.grain} does not divide ${entry.grain}`);
      return null;
    }
    if (source.table !== entry.table) {
      this.error(entry, `from: '${entry.from}' is a rollup of ${source.table}, not ${entry.table}`);
      return null;
    }
    const missingDimension = entry.dimensions.find((d) => !source.dimensions.includes(d));
    if (missingDimension)
      return this.cannotInstall(entry, `from: '${entry.from}' does not store dimension ${missingDimension}`);
    const stored = new Set(source.measures.map((m) => m.expression.replace(/\s+/g, '').toLowerCase()));
    const missing = entry.measures.find((m) => !stored.has(m.expression.replace(/\s+/g, '').toLowerCase()));
    if (missing) return this.cannotInstall(entry, `from: '${entry.from}' does not store measure ${missing.name}`);
    return null;
  }
}

type Resolved = {
  readonly physical: string;
  readonly columns: readonly ColumnSpec[];
  /** The table's per-series columns and series key (ViewSet.series). */
  readonly series?: { readonly key: readonly string[]; readonly values: readonly string[] };
};
type ColumnFacts = {
  readonly unsupported: string | null;
  readonly storedName: string;
  readonly storedType: string | null;
  readonly canonical: string;
  readonly expressionType: string | null;
  readonly satisfiedBy: string | null;
};

/**
 * Why a measure mixes series (database-resources.md, rollup: "a per-series measure needs dimensions the rollup
 * lacks"), or null: an aggregate call reads a per-series column (a metric's value) while a column of the series key
 * (its name) is neither a dimension of the rollup nor pinned by the call's FILTER (WHERE name = '…'). Counting points
 * or testing for a value (count(value), value IS NULL) reads no value and mixes nothing.
 */
function seriesProblem(
  what: string,
  facts: ExpressionFacts,
  dimensions: readonly string[],
  table: Resolved,
): string | null {
  if (!table.series) return null;
  const values = new Set(table.series.values.map((v) => v.toLowerCase()));
  const kept = new Set(dimensions.map((d) => d.toLowerCase()));
  for (const call of facts.aggregateCalls) {
    const value = call.reads.find((c) => values.has(c));
    const key =
      value && table.series.key.find((k) => !kept.has(k.toLowerCase()) && !call.pinned.includes(k.toLowerCase()));
    if (key)
      return `${what} mixes series: ${value} is per ${table.series.key.join(', ')} of ${table.physical}, and ${call.function === 'count_star' ? 'count' : call.function}() reads it with ${key} neither a dimension nor pinned by its FILTER (WHERE ${key} = '…'); add ${key} to dimensions or pin it`;
  }
  return null;
}

/**
 * The spec's refused combinations (ClickHouse's names): OrNull after If is NULL only for a group with
 * no rows, never for one whose rows the filter all leaves out; what to write instead, in DuckDB.
 */
const orNullAfterIf = new Map(
  [
    ['countIfOrNull', 'countOrNullIf', 'nullif(count(*) FILTER (WHERE …), 0)'],
    ['uniqIfOrNull', 'uniqOrNullIf', 'nullif(approx_count_distinct(x) FILTER (WHERE …), 0)'],
    [
      'quantilesIfOrNull',
      'quantilesOrNullIf',
      'approx_quantile(x, [0.5, 0.99]) FILTER (WHERE …), NULL when no row matches',
    ],
  ].map(([name, instead, duckdb]) => [
    name.toLowerCase(),
    `is refused: ${name} is NULL only for a group with no rows, not for one whose rows the condition leaves out; use ${instead}, in DuckDB ${duckdb}`,
  ]),
);

/** Why an aggregate measure cannot be stored as a mergeable state, or null. */
function storableProblem(facts: ExpressionFacts): string | null {
  const exactDistinct = facts.distinctAggregates.find((f) => f !== 'min' && f !== 'max');
  if (exactDistinct) return `${exactDistinct}(DISTINCT …) is exact and cannot be stored; use approx_count_distinct`;
  const other = facts.functions.find((f) => unmergeable.has(f));
  return other ? `${other} cannot be stored (exact quantiles and lists are not mergeable; use approx_quantile)` : null;
}

/** Aggregates DuckDB has that a rollup cannot merge into buckets (exact quantiles, lists, moments). */
const unmergeable = new Set([
  'quantile',
  'quantile_cont',
  'quantile_disc',
  'median',
  'mode',
  'list',
  'array_agg',
  'string_agg',
  'group_concat',
  'histogram',
  'count_distinct',
  'stddev',
  'stddev_samp',
  'stddev_pop',
  'variance',
  'var_samp',
  'var_pop',
  'entropy',
  'kurtosis',
  'skewness',
  'mad',
  'reservoir_quantile',
]);
