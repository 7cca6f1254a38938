// Queries read stored columns (issue 13, database-resources.md "How queries read resources"): when a
// statement reads a view set alone from its FROM (see readsAlone) and every partition file it reads
// holds a stored column, each occurrence of the column's expression in the statement's own select,
// where, group by, having, qualify and order by is replaced by the column, which the session view of
// the set then reads beside its columns. Otherwise the expression is left as written (computed), so
// answers never depend on which files a backfill has reached. Left as written too: expressions
// inside subqueries and lambdas (their names may bind elsewhere), and every expression of a
// statement where a select alias shadows a column the expression reads. A statement that names a
// `__orr_` column, or the table as a value, reads no stored column (the names stay unbound, as
// without resources); a `*` over the table excludes the stored columns it reads.
import { columnsHeldByAll, recentColumns, type InstalledColumn } from '../resources/index.js';
import { levelParts } from '../rollups/index.js';
import type { ViewSet } from '../views/index.js';
import { selectItemName } from './item-names.js';
import { expressionTree, keyOf, readsAlone, type Node, type Statement } from './partition-pruning.js';

/** A stored column whose expression a statement holds: read in its place, or left as written and why. */
export interface StoredColumnUse {
  readonly table: string;
  readonly entry: string;
  readonly column: string;
  readonly use: 'substituted' | 'kept';
  readonly reason?: string;
}

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null;
const isExpression = (node: Node): boolean => typeof node.class === 'string';

/** Every expression node under a value (not descending into what `enter` refuses), parents first. */
function visit(value: unknown, each: (node: Node) => boolean): void {
  if (Array.isArray(value)) return value.forEach((v) => visit(v, each));
  if (!isNode(value)) return;
  if (isExpression(value) && !each(value)) return;
  for (const child of Object.values(value)) visit(child, each);
}

/** Why the statement cannot read stored columns of the table at all, or null. */
function refusal(node: Node, qualifiers: ReadonlySet<string>, tableName: string): string | null {
  let reason: string | null = null;
  visit(node, (n) => {
    if (n.class === 'COLUMN_REF') {
      const names = (n.column_names as string[]).map((x) => x.toLowerCase());
      if (names.some((x) => x.startsWith('__orr_'))) reason ??= 'the statement names a __orr_ column';
      if (names.length === 1 && (qualifiers.has(names[0]) || names[0] === tableName))
        reason ??= 'the statement reads the table as a value';
    }
    if (n.class === 'STAR' && (n.columns === true || n.expr !== null)) reason ??= 'the statement uses COLUMNS(…)';
    return true;
  });
  return reason;
}

/** Where one SELECT's own expressions read stored columns; one per statement. */
export class StoredColumnReads {
  readonly uses: StoredColumnUse[] = [];
  /** Whether the statement was rewritten (it must then be run as deparsed). */
  substituted = false;
  /** The expressions as written, by the node that reads the stored column in their place. */
  private readonly originals = new Map<Node, Node>();

  constructor(private readonly statement: Statement) {}

  /**
   * Rewrites the statement to read the stored columns of `view` that every one of `files` (the object
   * keys it reads) holds; answers the columns the set's session view must read.
   */
  async read(view: ViewSet, files: readonly string[]): Promise<string[]> {
    if (files.length === 0) return [];
    return this.readHeld(view, async () => ({
      held: await columnsHeldByAll(this.statement.db, view.name, files),
      why: 'not every partition read holds the column yet (backfill under way)',
    }));
  }

  /**
   * As read, for a table whose rows hold the stored columns `holding` answers (asked only when the statement holds
   * the expression of one), or why the others' are computed.
   */
  async readHeld(
    view: ViewSet,
    holding: () => Promise<{ readonly held: ReadonlySet<string>; readonly why: string }>,
  ): Promise<string[]> {
    const { db, engine, tree, shape, viewOf } = this.statement;
    const alone = readsAlone(tree, shape, view, viewOf);
    if (!alone) return [];
    const columns = await recentColumns(db, view.name);
    if (columns.length === 0) return [];
    const { node, qualifiers } = alone;
    const aliases = new Set(
      (node.select_list as Node[]).map((item) => String(item.alias).toLowerCase()).filter((a) => a !== ''),
    );
    // The columns whose expression the statement holds, with the key it is compared by.
    const found: Array<{ column: InstalledColumn; key: string; reads: string[] }> = [];
    for (const column of columns) {
      const stored = await expressionTree(engine, `(${column.expression})`);
      if (!stored) continue;
      const key = keyOf(stored, new Set());
      let holds = false;
      visit(levelParts(node), (n) => {
        holds ||= keyOf(n, qualifiers) === key;
        return !holds && n.class !== 'SUBQUERY' && n.class !== 'LAMBDA';
      });
      if (!holds) continue;
      const reads: string[] = [];
      visit(stored, (n) => {
        if (n.class === 'COLUMN_REF') reads.push((n.column_names as string[]).at(-1)!.toLowerCase());
        return true;
      });
      found.push({ column, key, reads });
    }
    if (found.length === 0) return [];
    const refused = refusal(node, qualifiers, String((node.from_table as Node).table_name).toLowerCase());
    const { held, why } = refused === null ? await holding() : { held: new Set<string>(), why: '' };
    const substituted: Array<{ column: InstalledColumn; key: string }> = [];
    for (const { column, key, reads } of found) {
      const shadow = reads.find((name) => aliases.has(name));
      const reason =
        refused ??
        (column.expressionType?.toUpperCase() !== column.storedType.toUpperCase()
          ? `stored as ${column.storedType}, the expression is ${column.expressionType ?? 'of another type'}`
          : shadow !== undefined
            ? `the select alias ${shadow} shadows the column the expression reads`
            : !held.has(column.name)
              ? why
              : null);
      this.uses.push({
        table: view.name,
        entry: column.entryKey,
        column: column.name,
        use: reason === null ? 'substituted' : 'kept',
        ...(reason === null ? {} : { reason }),
      });
      if (reason === null) substituted.push({ column, key });
    }
    if (substituted.length === 0) return [];
    await this.substitute(node, qualifiers, substituted);
    this.substituted = true;
    return substituted.map((s) => s.column.name);
  }

  private async substitute(
    node: Node,
    qualifiers: ReadonlySet<string>,
    columns: ReadonlyArray<{ column: InstalledColumn; key: string }>,
  ): Promise<void> {
    const byKey = new Map(columns.map((c) => [c.key, c.column.name]));
    const reads = (value: unknown): boolean => {
      let found = false;
      visit(value, (n) => {
        found ||= byKey.has(keyOf(n, qualifiers));
        return !found && n.class !== 'SUBQUERY' && n.class !== 'LAMBDA';
      });
      return found;
    };
    // An unaliased select item that changes keeps the name DuckDB gives it as written (its text).
    const items = node.select_list as Node[];
    const names: Array<string | null> = [];
    for (const item of items)
      names.push(
        item.alias === '' && item.class !== 'STAR' && reads(item)
          ? await selectItemName(this.statement.engine, item, this.statement.text)
          : null,
      );
    visit(levelParts(node), (n) => {
      const name = byKey.get(keyOf(n, qualifiers));
      if (name === undefined) return n.class !== 'SUBQUERY' && n.class !== 'LAMBDA';
      const alias = n.alias;
      this.originals.set(n, structuredClone(n));
      for (const field of Object.keys(n)) delete n[field];
      Object.assign(n, { class: 'COLUMN_REF', type: 'COLUMN_REF', alias, column_names: [name] });
      return false;
    });
    items.forEach((item, i) => {
      if (names[i] !== null) item.alias = names[i];
      // `*` over the table reads its columns, not the stored ones.
      if (item.class === 'STAR') item.exclude_list = [...(item.exclude_list as string[]), ...byKey.values()];
    });
  }

  /** The expression the statement wrote where `node` reads a stored column, if it does. */
  original(node: Node): Node | undefined {
    return this.originals.get(node);
  }

  /** The uses to report once the statement's levels were rewritten onto rollups: none of the tables whose stored columns no level reads. */
  reported(unread: readonly string[]): StoredColumnUse[] {
    return this.uses.filter((u) => !(u.use === 'substituted' && unread.includes(u.table)));
  }
}
