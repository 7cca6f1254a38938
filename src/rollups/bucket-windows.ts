// A statement that reads a rollup within a window (`FROM r WHERE bucket >= now() - INTERVAL 1 DAY`) reads none of
// its pending buckets outside it: the view's rows of such a bucket are aggregated from the source's rows of it, a
// scan of the DuckLake table that the statement's WHERE then drops whole. Set up with them, the statement binds
// that table (a DuckLake transaction, its catalog read from Postgres, its plan never kept) for no row. So the
// view a statement reads a rollup through leaves out the pending buckets that the conditions on `bucket` of the
// one SELECT reading it are false for (and its stored rows of them, as always), when that SELECT alone reads the
// rollup. Each bucket's rows share its `bucket`, so a condition on `bucket` alone keeps all of them or none.
// The conditions are evaluated at set-up: literals, parameters ($1) bound for the run (their values), and bounds
// written with the clock that never fall as the clock rises (now() - INTERVAL 1 DAY, date_trunc('day', now()))
// where the set-up's value leaves out no bucket the run's keeps. A statement that runs in a transaction begun after
// its set-up has a now() no earlier than the set-up's: such a lower bound is no higher at set-up than at the run.
// One in a client's transaction has the now() of its BEGIN, no later than the set-up's: there an upper bound is.
// (A statement whose now() was fixed, by partition pruning, reads it as a literal already.) BETWEEN is its two
// bounds. Anything else on `bucket` is left to the WHERE.
import { trend } from './constant-trends.js';
import { conjuncts } from './query-rewrite.js';
import { replaced, some, type Node } from './tree.js';

/** The conditions a statement's WHERE puts on a rollup's `bucket`, its columns qualified by `qualifier`. */
export interface BucketConditions {
  readonly qualifier: string;
  readonly conditions: readonly Node[];
}

const lowerOps = new Set(['COMPARE_GREATERTHAN', 'COMPARE_GREATERTHANOREQUALTO']);
const upperOps = new Set(['COMPARE_LESSTHAN', 'COMPARE_LESSTHANOREQUALTO']);
const flipped: Record<string, string> = {
  COMPARE_GREATERTHAN: 'COMPARE_LESSTHAN',
  COMPARE_GREATERTHANOREQUALTO: 'COMPARE_LESSTHANOREQUALTO',
  COMPARE_LESSTHAN: 'COMPARE_GREATERTHAN',
  COMPARE_LESSTHANOREQUALTO: 'COMPARE_GREATERTHANOREQUALTO',
  COMPARE_EQUAL: 'COMPARE_EQUAL',
  COMPARE_NOTEQUAL: 'COMPARE_NOTEQUAL',
};

/**
 * For each rollup of `names` (lower-case) that one SELECT of the statement reads, as its FROM alone, and that
 * nothing else in it names (no other reference, no CTE of its name): the conjuncts of that SELECT's WHERE on its
 * `bucket` alone whose value at set-up is theirs at the run (see above), bound parameters written as their values.
 * `risingClock`: the statement's now() is no earlier than now (it runs in a transaction of its own, begun after
 * its set-up); otherwise it is no later (a client's transaction). `parameters`: `$n`'s value for the run as a
 * constant, by n.
 */
export function bucketConditions(
  statements: readonly Node[],
  names: ReadonlySet<string>,
  risingClock: boolean,
  parameters: ReadonlyMap<string, Node> = new Map(),
): Map<string, BucketConditions> {
  const out = new Map<string, BucketConditions>();
  if (statements.length !== 1) return out;
  // A copy with each bound parameter replaced by its value; an unbound one stays, and no trend() takes it.
  const bound = (conjunct: Node): Node =>
    replaced(conjunct, (n) => (n.class === 'PARAMETER' ? parameters.get(String(n.identifier)) : undefined));
  const references = new Map<string, Node[]>();
  const readers = new Map<Node, Node>();
  const ctes = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (node.type === 'BASE_TABLE') {
      const name = String(node.table_name).toLowerCase();
      references.set(name, [...(references.get(name) ?? []), node]);
    }
    if (node.type === 'SELECT_NODE' && node.from_table) readers.set(node.from_table as Node, node);
    for (const { key } of ((node.cte_map as Node | undefined)?.map as Array<{ key: string }> | undefined) ?? [])
      ctes.add(key.toLowerCase());
    Object.values(node).forEach(visit);
  };
  visit(statements);
  for (const name of names) {
    const [from, ...others] = references.get(name) ?? [];
    const select = from && readers.get(from);
    if (!select || others.length > 0 || ctes.has(name) || from.catalog_name !== '') continue;
    if (!['', 'main'].includes(String(from.schema_name).toLowerCase()) || from.at_clause || from.sample) continue;
    if ((from.column_name_alias as unknown[] | undefined)?.length) continue;
    const qualifier = (typeof from.alias === 'string' && from.alias ? from.alias : name).toLowerCase();
    const isBucket = (n: Node): boolean => {
      const parts = n.class === 'COLUMN_REF' ? (n.column_names as string[]).map((p) => p.toLowerCase()) : [];
      return parts.at(-1) === 'bucket' && (parts.length === 1 || (parts.length === 2 && parts[0] === qualifier));
    };
    const readsBucketAlone = (n: Node): boolean =>
      some(n, isBucket) && !some(n, (c) => (c.class === 'COLUMN_REF' && !isBucket(c)) || c.class === 'SUBQUERY');
    const fixed = (n: Node | undefined): boolean => n !== undefined && trend(n) === 'constant';
    // The bounds the clock's direction lets a rising one stand for (see above).
    const clocked = risingClock ? lowerOps : upperOps;
    const conditions = conjuncts((select.where_clause as Node | null) ?? null)
      .map(bound)
      .flatMap((c) => (c.class === 'BETWEEN' && isBucket(c.input as Node) ? betweenBounds(c) : [c]))
      .filter((c) => {
        if (!readsBucketAlone(c)) return false;
        if (c.class === 'COMPARISON' && String(c.type) in flipped) {
          const [left, right] = [c.left as Node, c.right as Node];
          const [op, bound] = isBucket(left) ? [String(c.type), right] : [flipped[String(c.type)], left];
          if (!isBucket(isBucket(left) ? left : right)) return false;
          return fixed(bound) || (clocked.has(op) && trend(bound) === 'rising');
        }
        if (c.class === 'OPERATOR' && c.type === 'COMPARE_IN') {
          const [input, ...values] = c.children as Node[];
          return isBucket(input) && values.every(fixed);
        }
        return false;
      });
    if (conditions.length > 0) out.set(name, { qualifier, conditions });
  }
  return out;
}

/** `x BETWEEN a AND b` as its two bounds, `x >= a` and `x <= b`, which together hold for the rows it holds for. */
const betweenBounds = (between: Node): Node[] =>
  (
    [
      ['COMPARE_GREATERTHANOREQUALTO', between.lower],
      ['COMPARE_LESSTHANOREQUALTO', between.upper],
    ] as const
  ).map(([type, bound]) => ({ class: 'COMPARISON', type, alias: '', left: between.input, right: bound }));
