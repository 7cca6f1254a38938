// Skipping partitions by the indexes installed on a view set (issue 13), before any of their files is
// opened: a statement that reads one view set once, from its own FROM, and compares an indexed
// expression with constants in its WHERE (=, IN, <, <=, >, >=, BETWEEN, ANDed) or searches it for a
// constant text (ILIKE, LIKE, contains, starts_with, ends_with: a text index)
// does not read a partition whose statistics show none of its rows can pass. The comparisons are
// DuckDB's own, run over the statistics cast back to the indexed type, so a partition is skipped only
// when the statement's WHERE would drop every one of its rows: answers never change. Audience
// filtering is untouched (it filters the rows of the partitions that remain).
import { nanosecondTimestamps, type DuckDBEngine, type QueryShape } from '../engine/index.js';
import {
  installedIndexes,
  mayContain,
  mayHold,
  partitionStatistics,
  searchedTrigrams,
  type InstalledIndex,
} from '../resources/index.js';
import { callNode, castNode, expressionKey } from '../rollups/index.js';
import { passesRowsThrough, quoteLiteral, type ViewSet } from '../views/index.js';
import type { MetadataQueries } from '../metadata/index.js';

export type Node = Record<string, unknown>;
export type Tree = { statements: Node[] };

/** One statement as the readers of installed resources see it: its parse tree and shape, and where to look. */
export interface Statement {
  readonly db: MetadataQueries;
  readonly engine: DuckDBEngine;
  readonly tree: Tree;
  readonly shape: QueryShape;
  readonly viewOf: (name: string) => ViewSet | undefined;
}

/** What pruning did for one view set: for the provenance of an admin's result. */
export interface PartitionsRead {
  readonly table: string;
  readonly partitions: number;
  readonly skipped: number;
  /** The index entries that decided, by key. */
  readonly indexes: string[];
}

/** A WHERE conjunct an index can decide: the indexed side and the conjunct with it on the left. */
interface Restriction {
  readonly expression: Node;
  /** `=`, `<`, `<=`, `>`, `>=` (COMPARE_* types), `between` or `in`, over constants. */
  readonly op: string;
  readonly constants: Node[];
  readonly conjunct: Node;
}

/** A WHERE conjunct a text index can decide: a substring search of the indexed side, by the trigrams a match holds. */
interface Search {
  readonly expression: Node;
  readonly trigrams: string[];
}

/** The functions (and LIKE's, ILIKE's operators) true only of a value holding their constant's text, or a match of it. */
const substringSearches = new Set(['~~', '~~*', 'contains', 'starts_with', 'ends_with', 'prefix', 'suffix']);

function searchOf(conjunct: Node): Search | null {
  if (
    conjunct.class !== 'FUNCTION' ||
    conjunct.schema !== '' ||
    !substringSearches.has(conjunct.function_name as string)
  )
    return null;
  const [subject, searched, ...rest] = conjunct.children as Node[];
  const value = searched?.class === 'CONSTANT' ? (searched.value as Node) : null;
  if (rest.length > 0 || value?.is_null !== false || (value.type as Node).id !== 'VARCHAR' || isConstant(subject))
    return null;
  const trigrams = searchedTrigrams(String(value.value));
  return trigrams.length > 0 ? { expression: subject, trigrams } : null;
}

const flipped: Record<string, string> = {
  COMPARE_EQUAL: 'COMPARE_EQUAL',
  COMPARE_LESSTHAN: 'COMPARE_GREATERTHAN',
  COMPARE_LESSTHANOREQUALTO: 'COMPARE_GREATERTHANOREQUALTO',
  COMPARE_GREATERTHAN: 'COMPARE_LESSTHAN',
  COMPARE_GREATERTHANOREQUALTO: 'COMPARE_LESSTHANOREQUALTO',
};

/** A literal, or casts of one: the same value whenever it is evaluated (no now(), no random()). */
const isConstant = (node: Node | undefined): boolean =>
  node?.class === 'CONSTANT' || (node?.class === 'CAST' && isConstant(node.child as Node));

function conjuncts(node: Node): Node[] {
  return node.class === 'CONJUNCTION' && node.type === 'CONJUNCTION_AND'
    ? (node.children as Node[]).flatMap(conjuncts)
    : [node];
}

function restrictionOf(conjunct: Node): Restriction | null {
  if (conjunct.class === 'COMPARISON' && (conjunct.type as string) in flipped) {
    const [left, right] = [conjunct.left as Node, conjunct.right as Node];
    if (isConstant(right) && !isConstant(left))
      return { expression: left, op: conjunct.type as string, constants: [right], conjunct };
    if (isConstant(left) && !isConstant(right))
      return { expression: right, op: flipped[conjunct.type as string], constants: [left], conjunct };
    return null;
  }
  if (conjunct.class === 'BETWEEN') {
    const bounds = [conjunct.lower as Node, conjunct.upper as Node];
    return bounds.every(isConstant) && !isConstant(conjunct.input as Node)
      ? { expression: conjunct.input as Node, op: 'between', constants: bounds, conjunct }
      : null;
  }
  if (conjunct.class === 'OPERATOR' && conjunct.type === 'COMPARE_IN') {
    const [first, ...rest] = conjunct.children as Node[];
    return rest.every(isConstant) && !isConstant(first)
      ? { expression: first, op: 'in', constants: rest, conjunct }
      : null;
  }
  return null;
}

/**
 * The SELECT node of a statement that reads a view set's rows as its partitions hold them: one SELECT
 * whose FROM is the set alone (no join, sample or time travel), the set named nowhere else in the
 * statement (every reference reads the same partitions), and a merge query that passes rows through
 * (a merging set's rows are not its partitions' rows). With the name its columns are qualified by.
 */
export function readsAlone(
  tree: Tree,
  shape: QueryShape,
  view: ViewSet,
  viewOf: (name: string) => ViewSet | undefined,
): { node: Node; qualifier: string } | null {
  if (tree.statements.length !== 1 || !passesRowsThrough(view)) return null;
  const node = tree.statements[0].node as Node | undefined;
  const from = node?.from_table as Node | undefined;
  if (node?.type !== 'SELECT_NODE' || node.sample || from?.type !== 'BASE_TABLE') return null;
  if (from.catalog_name !== '' || from.schema_name !== '' || from.sample || from.at_clause) return null;
  const name = String(from.table_name);
  const ctes = ((node.cte_map as Node | undefined)?.map as Array<{ key: string }> | undefined) ?? [];
  if (viewOf(name) !== view || ctes.some((c) => c.key.toLowerCase() === name.toLowerCase())) return null;
  if (shape.relations.filter((r) => !r.cte && viewOf(r.name) === view).length !== 1) return null;
  const alias = typeof from.alias === 'string' ? from.alias : '';
  return { node, qualifier: (alias || name).toLowerCase() };
}

/** The restrictions and searches a statement's WHERE puts on a view set's rows, when it reads them alone (see readsAlone). */
function restrictionsOn(
  tree: Tree,
  shape: QueryShape,
  view: ViewSet,
  viewOf: (name: string) => ViewSet | undefined,
): { qualifier: string; restrictions: Restriction[]; searches: Search[] } | null {
  const alone = readsAlone(tree, shape, view, viewOf);
  if (!alone?.node.where_clause) return null;
  const all = conjuncts(alone.node.where_clause as Node);
  const restrictions = all.map(restrictionOf).filter((r) => r !== null);
  const searches = all.map(searchOf).filter((s) => s !== null);
  return { qualifier: alone.qualifier, restrictions, searches };
}

const columnRef = (name: string): Node => ({
  class: 'COLUMN_REF',
  type: 'COLUMN_REF',
  alias: '',
  column_names: [name],
});
const compare = (type: string, left: Node, right: Node): Node => ({
  class: 'COMPARISON',
  type,
  alias: '',
  left,
  right,
});
const junction = (type: 'CONJUNCTION_AND' | 'CONJUNCTION_OR', children: Node[]): Node =>
  children.length === 1 ? children[0] : { class: 'CONJUNCTION', type, alias: '', children };

const [minRef, maxRef, valueRef] = ['__orr_min', '__orr_max', '__orr_value'].map(columnRef);

/** Whether a partition whose values lie in [min, max] may hold a row passing the restriction. */
function rangeMeets(r: Restriction): Node {
  const within = (c: Node) =>
    junction('CONJUNCTION_AND', [
      compare('COMPARE_LESSTHANOREQUALTO', minRef, c),
      compare('COMPARE_GREATERTHANOREQUALTO', maxRef, c),
    ]);
  switch (r.op) {
    case 'COMPARE_EQUAL':
      return within(r.constants[0]);
    case 'COMPARE_LESSTHAN':
    case 'COMPARE_LESSTHANOREQUALTO':
      return compare(r.op, minRef, r.constants[0]);
    case 'COMPARE_GREATERTHAN':
    case 'COMPARE_GREATERTHANOREQUALTO':
      return compare(r.op, maxRef, r.constants[0]);
    case 'between':
      return junction('CONJUNCTION_AND', [
        compare('COMPARE_GREATERTHANOREQUALTO', maxRef, r.constants[0]),
        compare('COMPARE_LESSTHANOREQUALTO', minRef, r.constants[1]),
      ]);
    default:
      return junction('CONJUNCTION_OR', r.constants.map(within));
  }
}

/** The restriction itself over one of a partition's distinct values. */
function valueMeets(r: Restriction): Node {
  switch (r.conjunct.class) {
    case 'COMPARISON':
      return compare(r.op, valueRef, r.constants[0]);
    case 'BETWEEN':
      return { ...r.conjunct, input: valueRef };
    default:
      return { ...r.conjunct, children: [valueRef, ...r.constants] };
  }
}

/** Types whose text (the statistics) casts back to the same value whatever the session's settings. */
const exactText =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\)|VARCHAR|BOOLEAN|DATE|TIMESTAMP|TIMESTAMP_NS|TIMESTAMP_MS|TIMESTAMP_S|UUID)$/;

const integerTypes = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;

/** Types a bloom filter serves: equal values of them have one hash (no -0.0 and 0.0, no collations). */
const hashedTypes =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|VARCHAR|BOOLEAN|DATE|TIMESTAMP|TIMESTAMP_NS|TIMESTAMP_MS|TIMESTAMP_S|UUID)$/;

const isNull = (c: Node): boolean =>
  c.class === 'CONSTANT' ? (c.value as Node).is_null === true : c.class === 'CAST' && isNull(c.child as Node);

/** What statements compute again and again, bounded: kept while fewer than 1000, then started over. */
const conditions = new Map<string, string | null>();
const hashes = new Map<string, bigint[] | null>();
function remember<T>(cache: Map<string, T>, key: string, value: T): void {
  if (cache.size >= 1000) cache.clear();
  cache.set(key, value);
}

/** The json_serialize_sql form of each index's expression, parsed once. */
const parsedExpressions = new Map<string, Node | null>();

export async function expressionTree(engine: DuckDBEngine, expression: string): Promise<Node | null> {
  if (!parsedExpressions.has(expression)) {
    const tree = await engine.parseSelect(`SELECT ${expression}`).catch(() => null);
    const list = (tree?.statements[0]?.node as Node | undefined)?.select_list as Node[] | undefined;
    parsedExpressions.set(expression, list?.length === 1 ? list[0] : null);
  }
  return parsedExpressions.get(expression)!;
}

/** `->>` is DuckDB's spelling of json_extract_string: both read one index. */
function sameSpelling(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sameSpelling);
  if (value === null || typeof value !== 'object') return value;
  const out = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sameSpelling(v)])) as Node;
  if (out.class === 'FUNCTION' && out.function_name === '->>') {
    out.function_name = 'json_extract_string';
    out.is_operator = false;
  }
  return out;
}

/** An expression as compared with an installed resource's (no alias or position, the table's qualifier dropped). */
export const keyOf = (node: Node, qualifiers: ReadonlySet<string>): string =>
  expressionKey(sameSpelling(node), qualifiers);

/**
 * Prunes the partitions of the view sets one statement reads and remembers what it skipped. One per
 * statement; `keep` is called with each set's partition object keys.
 */
export class PartitionPruning {
  readonly reads: PartitionsRead[] = [];

  private readonly db: MetadataQueries;
  private readonly engine: DuckDBEngine;

  constructor(private readonly statement: Statement) {
    ({ db: this.db, engine: this.engine } = statement);
  }

  /** The partitions (object keys) of `view` the statement must read, in their order. */
  async keep(view: ViewSet, files: readonly string[]): Promise<readonly string[]> {
    const { tree, shape, viewOf } = this.statement;
    const on = files.length > 0 ? restrictionsOn(tree, shape, view, viewOf) : null;
    if (!on || on.restrictions.length + on.searches.length === 0) return files;
    const qualifiers = new Set([on.qualifier]);
    const skipped = new Set<string>();
    const used: string[] = [];
    for (const index of await installedIndexes(this.db, [view.name])) {
      const indexed = await expressionTree(this.engine, index.expression);
      if (!indexed) continue;
      const key = keyOf(indexed, new Set());
      const remaining = files.filter((f) => !skipped.has(f));
      let kept: Set<string> | null;
      if (index.kind === 'text') {
        const searches = on.searches.filter((s) => keyOf(s.expression, qualifiers) === key);
        if (searches.length === 0) continue;
        kept = await this.containing(index, searches, remaining);
      } else {
        const applicable = on.restrictions.filter((r) => keyOf(r.expression, qualifiers) === key);
        if (applicable.length === 0 || !exactText.test(index.valueType)) continue;
        kept = await this.kept(index, applicable, remaining);
      }
      if (!kept) continue;
      const before = skipped.size;
      for (const file of remaining) if (!kept.has(file)) skipped.add(file);
      if (skipped.size > before) used.push(index.entryKey);
    }
    if (used.length === 0) return files;
    this.reads.push({ table: view.name, partitions: files.length, skipped: skipped.size, indexes: used });
    return files.filter((f) => !skipped.has(f));
  }

  /**
   * The files that may hold a passing row, by one index: those without statistics, and those whose
   * statistics meet every restriction. Null when DuckDB cannot compare them (the statement then
   * reads every partition and reports its own error, if any).
   */
  private async kept(index: InstalledIndex, restrictions: Restriction[], files: string[]): Promise<Set<string> | null> {
    const stats = await partitionStatistics(this.db, [index.hash], files);
    const kept = new Set(files);
    if (stats.length === 0) return kept;
    const rows: string[] = [];
    for (const s of stats) {
      kept.delete(s.filePath);
      const [file, min, max] = [s.filePath, s.min, s.max].map((v) => (v === null ? 'NULL::VARCHAR' : quoteLiteral(v)));
      if (s.distinct === null || index.kind !== 'set')
        rows.push(`(${file}, false, true, NULL::VARCHAR, ${min}, ${max})`);
      else
        for (const value of s.distinct)
          rows.push(
            `(${file}, true, false, ${value === null ? 'NULL::VARCHAR' : quoteLiteral(value)}, ${min}, ${max})`,
          );
    }
    const type = index.valueType;
    const relation =
      `SELECT __orr_file, __orr_listed, __orr_unlisted, CAST(__orr_value AS ${type}) AS __orr_value, ` +
      `CAST(__orr_min AS ${type}) AS __orr_min, CAST(__orr_max AS ${type}) AS __orr_max ` +
      `FROM (VALUES ${rows.join(', ')}) AS s(__orr_file, __orr_listed, __orr_unlisted, __orr_value, __orr_min, __orr_max)`;
    const meets = junction('CONJUNCTION_OR', [
      junction('CONJUNCTION_AND', [columnRef('__orr_listed'), ...restrictions.map(valueMeets)]),
      junction('CONJUNCTION_AND', [columnRef('__orr_unlisted'), ...restrictions.map(rangeMeets)]),
    ]);
    try {
      const condition = await this.condition(meets);
      if (condition === null) return null;
      for (const [file] of await this.engine.values(`SELECT DISTINCT __orr_file FROM (${relation}) ${condition}`))
        kept.add(String(file));
    } catch {
      return null;
    }
    if (index.kind !== 'bloom_filter') return kept;
    for (const r of restrictions.filter((r) => r.op === 'COMPARE_EQUAL' || r.op === 'in')) {
      const hashes = await this.valueHashes(r.constants, index.valueType);
      if (!hashes) continue;
      for (const { filePath, bloom } of stats)
        if (bloom && kept.has(filePath) && !hashes.some((h) => mayHold(bloom, h))) kept.delete(filePath);
    }
    return kept;
  }

  /** The files that may hold a value matching every search, by a text index: those without one, and those whose trigrams hold the searches'. */
  private async containing(index: InstalledIndex, searches: Search[], files: string[]): Promise<Set<string>> {
    const kept = new Set(files);
    for (const { filePath, bloom } of await partitionStatistics(this.db, [index.hash], files))
      if (bloom && !searches.every((s) => mayContain(bloom, s.trigrams))) kept.delete(filePath);
    return kept;
  }

  /**
   * `WHERE <meets>` as DuckDB writes it (the statement's constants as it reads them, timestamps as
   * nanoseconds), kept per condition: a dashboard's repeated statement costs no parse again.
   */
  private async condition(meets: Node): Promise<string | null> {
    const key = JSON.stringify(meets);
    if (!conditions.has(key)) {
      const skeleton = 'SELECT DISTINCT __orr_file FROM __orr_stats';
      const statement = (await this.engine.parseSelect(skeleton))!;
      (statement.statements[0].node as Node).where_clause = structuredClone(meets);
      nanosecondTimestamps(statement);
      const sql = await this.engine.deparse(statement);
      remember(conditions, key, sql.startsWith(`${skeleton} WHERE `) ? sql.slice(skeleton.length + 1) : null);
    }
    return conditions.get(key)!;
  }

  /**
   * DuckDB's hash() of each constant as a value of the indexed type, which is what a bloom filter
   * holds; null unless each constant is one the statement's comparison casts to that type (a string
   * literal, an integer literal against an integer column, a cast to exactly that type), so equal
   * values hash alike. A NULL constant equals nothing and has no hash.
   */
  private async valueHashes(constants: readonly Node[], type: string): Promise<bigint[] | null> {
    const key = JSON.stringify([type, constants]);
    if (!hashes.has(key)) remember(hashes, key, await this.hashesOf(constants, type));
    return hashes.get(key)!;
  }

  private async hashesOf(constants: readonly Node[], type: string): Promise<bigint[] | null> {
    if (!hashedTypes.test(type)) return null;
    const tree = (await this.engine.parseSelect('SELECT 1'))!;
    const values = structuredClone(constants).filter((c) => !isNull(c));
    nanosecondTimestamps({ statements: [{ node: { select_list: values } }] });
    const castsAlike = (c: Node): boolean => {
      if (c.class === 'CAST') return (c.cast_type as Node).id === type && (c.cast_type as Node).type_info === null;
      const id = ((c.value as Node).type as Node).id as string;
      return id === 'VARCHAR' || (integerTypes.test(type) && integerTypes.test(id));
    };
    if (!values.every(castsAlike)) return null;
    if (values.length === 0) return [];
    const node = tree.statements[0].node as Node;
    node.select_list = values.map((c) => callNode('hash', [castNode(c, { id: type, type_info: null })]));
    try {
      const [row] = await this.engine.values(await this.engine.deparse(tree));
      return row.map((h) => BigInt(h as bigint));
    } catch {
      return null;
    }
  }
}
