import type { MetadataStore } from '../metadata/index.js';
import type { DuckDBEngine } from '../engine/index.js';
import type { OrreryError } from '../errors/index.js';
import { sqlErrors } from './errors.js';
import { quoteLiteral } from '../views/index.js';

// Query deny rules: DuckDB boolean expressions over a statement's attributes, stored in
// Postgres and checked before every statement, admins included. Each server rereads them
// every few seconds, so a rule takes effect everywhere within that delay. Besides the text,
// a rule sees what the statement reads as DuckDB parsed it, so spelling a name another way
// (E'log\x5fentries', a quoted identifier, a comment inside it) does not evade a rule on it.

/** The attributes a rule's expression can use. */
export interface QueryAttributes {
  /** The key's name. */
  readonly user_id: string;
  readonly sql: string;
  readonly admin: boolean;
  /** The `x-client-type` header, or ''. */
  readonly client: string;
  /**
   * What a SELECT reads, from its parse tree, lower case: the relations it names (view sets,
   * tables; not CTEs) and the view sets its lakehouse functions read (view_instance's first
   * argument, spans for process_spans). Empty for other statements (DuckDB parses only SELECT).
   */
  readonly tables: readonly string[];
  /** Every function a SELECT calls, scalar, aggregate and table functions alike, lower case. */
  readonly functions: readonly string[];
}

export interface DenyRule {
  readonly ruleId: number;
  readonly matchExpr: string;
  readonly reason: string;
  readonly createdAt: string;
  readonly createdBy: string | null;
}

const list = (items: readonly string[]): string => `[${items.map(quoteLiteral).join(', ')}]::VARCHAR[]`;

const attributesRelation = (a: QueryAttributes): string =>
  `(SELECT ${quoteLiteral(a.user_id)}::VARCHAR AS user_id, ${quoteLiteral(a.sql)}::VARCHAR AS sql, ${a.admin} AS admin, ${quoteLiteral(
    a.client,
  )}::VARCHAR AS client, ${list(a.tables)} AS tables, ${list(a.functions)} AS functions)`;

const denied = (rule: DenyRule, note = ''): OrreryError =>
  sqlErrors.error('QUERY_DENIED', `query denied by rule ${rule.ruleId}: ${rule.reason}${note}`);

export class DenyRules {
  private cache: { rules: DenyRule[]; at: number } | undefined;

  constructor(
    private readonly db: Pick<MetadataStore, 'query' | 'transaction'>,
    private readonly engine: DuckDBEngine,
    private readonly refreshMs = 2000,
  ) {}

  /**
   * Refuses a statement a rule matches: RESOURCE_EXHAUSTED naming the rule and its reason. A rule
   * that fails on this statement (a cast of its text, say) refuses it too, and the error it
   * raised is not passed on: it would quote the check's own SQL, other rules included.
   */
  async check(statement: QueryAttributes | (() => Promise<QueryAttributes>)): Promise<void> {
    const rules = await this.rules();
    if (rules.length === 0) return;
    // Worked out only when some rule may match: what a statement reads can cost a parse and a catalog read.
    const refusal = await this.refusal(rules, typeof statement === 'function' ? await statement() : statement);
    if (refusal) throw refusal;
  }

  /**
   * Of several statements (their attributes, given as a function called once rules are found), which check
   * would refuse: for listings, which leave out what a key could not read.
   */
  async refused(statements: () => Promise<readonly QueryAttributes[]>): Promise<boolean[] | null> {
    const rules = await this.rules();
    if (rules.length === 0) return null;
    const refused: boolean[] = [];
    for (const attributes of await statements()) refused.push((await this.refusal(rules, attributes)) !== null);
    return refused;
  }

  /** The error refusing a statement, or null when no rule matches it. */
  private async refusal(rules: readonly DenyRule[], attributes: QueryAttributes): Promise<OrreryError | null> {
    const matches = await this.evaluate(rules, attributes).catch(() => null);
    if (matches) {
      const rule = rules.find((_, i) => matches[i]);
      return rule ? denied(rule) : null;
    }
    for (const rule of rules) {
      const match = await this.evaluate([rule], attributes).catch(() => null);
      if (!match) return denied(rule, ' (the rule could not be evaluated on this statement)');
      if (match[0]) return denied(rule);
    }
    return null;
  }

  /** Whether each rule matches, in one query. */
  private async evaluate(rules: readonly DenyRule[], attributes: QueryAttributes): Promise<boolean[]> {
    const columns = rules.map((r, i) => `coalesce((${r.matchExpr}), false) AS r${i}`).join(', ');
    // One row, read as values on a pooled connection: no Arrow result to build for it.
    const [row] = await this.engine.values(`SELECT ${columns} FROM ${attributesRelation(attributes)}`);
    return rules.map((_, i) => row?.[i] === true);
  }

  /**
   * Validates an expression (it must be a boolean over the attributes) and stores it, in a transaction: committed only
   * while the statement's client is there (checkLive), as is a removal.
   */
  async add(matchExpr: string, reason: string, createdBy: string): Promise<number> {
    await this.validate(matchExpr);
    const { rows } = await this.db.transaction((tx) =>
      tx.query<{ rule_id: string }>(
        'INSERT INTO query_deny_list (match_expr, reason, created_by) VALUES ($1, $2, $3) RETURNING rule_id',
        [matchExpr, reason, createdBy],
      ),
    );
    this.cache = undefined;
    return Number(rows[0].rule_id);
  }

  async remove(ruleId: number): Promise<boolean> {
    const { rowCount } = await this.db.transaction((tx) =>
      tx.query('DELETE FROM query_deny_list WHERE rule_id = $1', [ruleId]),
    );
    this.cache = undefined;
    return rowCount === 1;
  }

  async list(): Promise<DenyRule[]> {
    const { rows } = await this.db.query<{
      rule_id: string;
      match_expr: string;
      reason: string;
      created_at: Date;
      created_by: string | null;
    }>('SELECT rule_id, match_expr, reason, created_at, created_by FROM query_deny_list ORDER BY rule_id');
    return rows.map((r) => ({
      ruleId: Number(r.rule_id),
      matchExpr: r.match_expr,
      reason: r.reason,
      createdAt: r.created_at.toISOString(),
      createdBy: r.created_by,
    }));
  }

  private async rules(): Promise<DenyRule[]> {
    if (this.cache && Date.now() - this.cache.at < this.refreshMs) return this.cache.rules;
    const rules = await this.list();
    this.cache = { rules, at: Date.now() };
    return rules;
  }

  private async validate(matchExpr: string): Promise<void> {
    if (matchExpr.trim() === '' || matchExpr.includes(';')) {
      throw sqlErrors.error('DENY_RULE_INVALID', 'deny_queries: match_expr must be one boolean expression');
    }
    const probe = `SELECT (${matchExpr}) AS denied FROM ${attributesRelation({ user_id: '', sql: '', admin: false, client: '', tables: [], functions: [] })}`;
    const tree = await this.engine.parseSelect(probe).catch((error: Error) => {
      throw sqlErrors.error('DENY_RULE_INVALID', `deny_queries: match_expr does not parse: ${error.message}`);
    });
    if (!tree || tree.statements.length !== 1)
      throw sqlErrors.error('DENY_RULE_INVALID', 'deny_queries: match_expr must be one boolean expression');
    const description = await this.engine.describe(probe).catch((error: Error) => {
      throw sqlErrors.error(
        'DENY_RULE_INVALID',
        `deny_queries: match_expr is not valid over (user_id, sql, admin, client, tables, functions): ${error.message}`,
      );
    });
    const type = description.schema.fields[0]?.type;
    if (description.schema.fields.length !== 1 || String(type) !== 'Bool') {
      throw sqlErrors.error(
        'DENY_RULE_INVALID',
        `deny_queries: match_expr must be a boolean expression, not ${String(type)}`,
      );
    }
  }
}
