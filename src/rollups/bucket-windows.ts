// A statement that reads a rollup within a window (`FROM r WHERE bucket >= now() - INTERVAL 1 DAY`) reads none of
// its pending buckets outside it: the view's rows of such a bucket are aggregated from the source's rows of it, a
// scan of the DuckLake table that the statement's WHERE then drops whole. Set up with them, the statement binds
// that table (a DuckLake transaction, its catalog read from Postgres, its plan never kept) for no row. So the
// view a statement reads a rollup through leaves out the pending buckets that the conditions on `bucket` of the
// SELECTs reading it are all false for (and its stored rows of them, as always). Each bucket's rows share its
// `bucket`, so a condition on `bucket` alone keeps all of them or none.
// - One view serves every reference to the rollup and every run of the statement: a bucket is left out only when
//   each reference's WHERE, in each run (a row of bound parameters), drops it (an OR of them).
// - A reference is the FROM of its SELECT, or one side of its joins (inner, left, right, full, cross, natural),
//   its `bucket` then named with its qualifier (`r.bucket`). A comparison with NULL is not true, so a row of the
//   rollup the WHERE drops is in no row of the SELECT, nor is a row left without a match because one is gone (its
//   columns of the rollup are NULL there). Not an ASOF join (the nearest match would change), nor a positional one
//   (the pairs would shift), nor a semi or anti join (the rows the rollup's side keeps or drops would change).
// - The conditions are evaluated at set-up: literals, parameters ($1) bound for the run (their values), and bounds
//   written with the clock that never fall as the clock rises (now() - INTERVAL 1 DAY, date_trunc('day', now()))
//   where the set-up's value leaves out no bucket the run's keeps. A statement that runs in a transaction begun
//   after its set-up has a now() no earlier than the set-up's: such a lower bound is no higher at set-up than at
//   the run. One in a client's transaction has the now() of its BEGIN, no later than the set-up's: there an upper
//   bound is. (A statement whose now() was fixed, by partition pruning, reads it as a literal already.)
//   Outside a client's transaction, a statement whose now() may be fixed (see PartitionPruning's fixedClock) has
//   its conditions read with that value instead, every bound with the clock then a constant: one that holds only
//   with that value (an upper bound, an equality) is kept when the statement is then run with it, which the set-up
//   asks for when it leaves out a bucket (fixesClock).
// - BETWEEN is its two bounds. Anything else on `bucket` is left to the WHERE.
import { trend, withClock } from './constant-trends.js';
import { conjuncts } from './query-rewrite.js';
import { replaced, some, type Node } from './tree.js';

/** The conditions a statement's WHERE puts on a rollup's `bucket`, its columns qualified by `qualifier`. */
export interface BucketConditions {
  readonly qualifier: string;
  readonly conditions: readonly Node[];
  /** Some of them hold only with the statement's clock fixed to the value they were read with (see above). */
  readonly fixesClock: boolean;
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

/** At most this many references times runs narrow a rollup's pending buckets (each is a query at set-up). */
const maxAlternatives = 64;

const joinTypes = new Set(['INNER', 'LEFT', 'RIGHT', 'FULL']);
const joinRefTypes = new Set(['REGULAR', 'CROSS', 'NATURAL']);

/**
 * For each rollup of `names` (lower-case) whose every reference a SELECT reads (see above), none of them through
 * a CTE of its name: for each reference and each run, the conjuncts of its SELECT's WHERE on its `bucket` alone
 * whose value at set-up is theirs at the run (see above), bound parameters written as their values. A bucket the
 * conjuncts of one of them keep is kept. `risingClock`: the statement's now() is no earlier than now (it runs in a
 * transaction of its own, begun after its set-up); otherwise it is no later (a client's transaction). `runs`: for
 * each run of the statement, `$n`'s value in it as a constant, by n. `clock`: the constant the statement's now()
 * may be fixed to (see above).
 */
export function bucketConditions(
  statements: readonly Node[],
  names: ReadonlySet<string>,
  risingClock: boolean,
  runs: ReadonlyArray<ReadonlyMap<string, Node>> = [new Map()],
  clock?: Node,
): Map<string, BucketConditions[]> {
  const out = new Map<string, BucketConditions[]>();
  if (statements.length !== 1) return out;
  const references = new Map<string, Node[]>();
  // The SELECT reading each table reference, and whether it reads it through a join.
  const readers = new Map<Node, { select: Node; joined: boolean }>();
  const ctes = new Set<string>();
  const readFrom = (from: Node, select: Node, joined: boolean): void => {
    if (from.type === 'BASE_TABLE') readers.set(from, { select, joined });
    else if (from.type === 'JOIN' && joinTypes.has(String(from.join_type)) && joinRefTypes.has(String(from.ref_type)))
      for (const side of [from.left, from.right] as Node[]) readFrom(side, select, true);
  };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    const node = value as Node;
    if (node.type === 'BASE_TABLE') {
      const name = String(node.table_name).toLowerCase();
      references.set(name, [...(references.get(name) ?? []), node]);
    }
    if (node.type === 'SELECT_NODE' && node.from_table) readFrom(node.from_table as Node, node, false);
    for (const { key } of ((node.cte_map as Node | undefined)?.map as Array<{ key: string }> | undefined) ?? [])
      ctes.add(key.toLowerCase());
    Object.values(node).forEach(visit);
  };
  visit(statements);
  for (const name of names) {
    const found = references.get(name) ?? [];
    if (ctes.has(name) || found.length * runs.length > maxAlternatives) continue;
    const alternatives = found.flatMap((from) => runs.map((run) => readerConditions(from, readers.get(from), run)));
    if (alternatives.length > 0 && alternatives.every((a) => a !== null)) out.set(name, alternatives);
  }
  return out;

  /** One reference's conditions in one run, or null when it has none the set-up can read. */
  function readerConditions(
    from: Node,
    reader: { select: Node; joined: boolean } | undefined,
    parameters: ReadonlyMap<string, Node>,
  ): BucketConditions | null {
    if (!reader || from.catalog_name !== '' || from.at_clause || from.sample) return null;
    if (!['', 'main'].includes(String(from.schema_name).toLowerCase())) return null;
    if ((from.column_name_alias as unknown[] | undefined)?.length) return null;
    const name = String(from.table_name).toLowerCase();
    const qualifier = (typeof from.alias === 'string' && from.alias ? from.alias : name).toLowerCase();
    // Beside a join's other relations, an unqualified `bucket` may be theirs (or their USING column).
    const isBucket = (n: Node): boolean => {
      const parts = n.class === 'COLUMN_REF' ? (n.column_names as string[]).map((p) => p.toLowerCase()) : [];
      return (
        parts.at(-1) === 'bucket' &&
        ((parts.length === 1 && !reader.joined) || (parts.length === 2 && parts[0] === qualifier))
      );
    };
    const readsBucketAlone = (n: Node): boolean =>
      some(n, isBucket) && !some(n, (c) => (c.class === 'COLUMN_REF' && !isBucket(c)) || c.class === 'SUBQUERY');
    // A copy with each bound parameter replaced by its value; an unbound one stays, and no trend() takes it.
    const bound = (conjunct: Node): Node =>
      replaced(conjunct, (n) => (n.class === 'PARAMETER' ? parameters.get(String(n.identifier)) : undefined));
    const fixed = (n: Node | undefined): boolean => n !== undefined && trend(n) === 'constant';
    // The bounds the clock's direction lets a rising one stand for (see above).
    const clocked = risingClock ? lowerOps : upperOps;
    /** Whether the set-up may read a condition: with the clock as it is, or only with it fixed (null: neither). */
    const reading = (c: Node): 'live' | 'fixed' | null => {
      if (!readsBucketAlone(c)) return null;
      const read = (sound: (n: Node, op: string) => boolean): boolean => {
        if (c.class === 'COMPARISON' && String(c.type) in flipped) {
          const [left, right] = [c.left as Node, c.right as Node];
          const [op, bound] = isBucket(left) ? [String(c.type), right] : [flipped[String(c.type)], left];
          return isBucket(isBucket(left) ? left : right) && sound(bound, op);
        }
        if (c.class === 'OPERATOR' && c.type === 'COMPARE_IN') {
          const [input, ...values] = c.children as Node[];
          return isBucket(input) && values.every((v) => sound(v, 'COMPARE_EQUAL'));
        }
        return false;
      };
      if (read((n, op) => fixed(n) || (clocked.has(op) && trend(n) === 'rising'))) return 'live';
      return clock && read((n) => fixed(n) || trend(n) === 'rising') ? 'fixed' : null;
    };
    const kept = conjuncts((reader.select.where_clause as Node | null) ?? null)
      .map(bound)
      .flatMap((c) => (c.class === 'BETWEEN' && isBucket(c.input as Node) ? betweenBounds(c) : [c]))
      .map((c) => ({ c, how: reading(c) }))
      .filter(({ how }) => how !== null);
    // With a clock to fix, every condition reads it: a bound read with the live clock would be later than the run's.
    const conditions = kept.map(({ c }) => (clock ? withClock([c], clock)[0] : c));
    const fixesClock = kept.some(({ how }) => how === 'fixed');
    return conditions.length > 0 ? { qualifier, conditions, fixesClock } : null;
  }
}

/** `x BETWEEN a AND b` as its two bounds, `x >= a` and `x <= b`, which together hold for the rows it holds for. */
const betweenBounds = (between: Node): Node[] =>
  (
    [
      ['COMPARE_GREATERTHANOREQUALTO', between.lower],
      ['COMPARE_LESSTHANOREQUALTO', between.upper],
    ] as const
  ).map(([type, bound]) => ({ class: 'COMPARISON', type, alias: '', left: between.input, right: bound }));
