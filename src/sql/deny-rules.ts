import type pg from 'pg';
import type { DuckDBEngine } from '../engine/index.js';
import { FlightSqlError } from '../flight/index.js';
import { quoteLiteral } from '../views/index.js';

// Query deny rules: DuckDB boolean expressions over a statement's attributes, stored in
// Postgres and checked before every statement, admins included. Each server rereads them
// every few seconds, so a rule takes effect everywhere within that delay.

/** The attributes a rule's expression can use. */
export interface QueryAttributes {
  /** The key's name. */
  readonly user_id: string;
  readonly sql: string;
  readonly admin: boolean;
  /** The `x-client-type` header, or ''. */
  readonly client: string;
}

export interface DenyRule {
  readonly ruleId: number;
  readonly matchExpr: string;
  readonly reason: string;
  readonly createdAt: string;
  readonly createdBy: string | null;
}

const attributesRelation = (a: QueryAttributes): string =>
  `(SELECT ${quoteLiteral(a.user_id)}::VARCHAR AS user_id, ${quoteLiteral(a.sql)}::VARCHAR AS sql, ${a.admin} AS admin, ${quoteLiteral(
    a.client,
  )}::VARCHAR AS client)`;

export class DenyRules {
  private cache: { rules: DenyRule[]; at: number } | undefined;

  constructor(
    private readonly db: pg.Pool,
    private readonly engine: DuckDBEngine,
    private readonly refreshMs = 2000,
  ) {}

  /** Refuses a statement a rule matches: RESOURCE_EXHAUSTED naming the rule and its reason. */
  async check(attributes: QueryAttributes): Promise<void> {
    const rules = await this.rules();
    if (rules.length === 0) return;
    const columns = rules.map((r, i) => `coalesce((${r.matchExpr}), false) AS r${i}`).join(', ');
    const { batches } = await this.engine.query(`SELECT ${columns} FROM ${attributesRelation(attributes)}`);
    for await (const batch of batches) {
      rules.forEach((rule, i) => {
        if (batch.getChildAt(i)?.get(0) === true) {
          throw new FlightSqlError('RESOURCE_EXHAUSTED', `query denied by rule ${rule.ruleId}: ${rule.reason}`);
        }
      });
    }
  }

  /** Validates an expression (it must be a boolean over the attributes) and stores it. */
  async add(matchExpr: string, reason: string, createdBy: string): Promise<number> {
    await this.validate(matchExpr);
    const { rows } = await this.db.query<{ rule_id: string }>(
      'INSERT INTO query_deny_list (match_expr, reason, created_by) VALUES ($1, $2, $3) RETURNING rule_id',
      [matchExpr, reason, createdBy],
    );
    this.cache = undefined;
    return Number(rows[0].rule_id);
  }

  async remove(ruleId: number): Promise<boolean> {
    const { rowCount } = await this.db.query('DELETE FROM query_deny_list WHERE rule_id = $1', [ruleId]);
    this.cache = undefined;
    return rowCount === 1;
  }

  async list(): Promise<DenyRule[]> {
    const { rows } = await this.db.query<{ rule_id: string; match_expr: string; reason: string; created_at: Date; created_by: string | null }>(
      'SELECT rule_id, match_expr, reason, created_at, created_by FROM query_deny_list ORDER BY rule_id',
    );
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
      throw new FlightSqlError('INVALID_ARGUMENT', 'deny_queries: match_expr must be one boolean expression');
    }
    const probe = `SELECT (${matchExpr}) AS denied FROM ${attributesRelation({ user_id: '', sql: '', admin: false, client: '' })}`;
    const tree = await this.engine.parseSelect(probe).catch((error: Error) => {
      throw new FlightSqlError('INVALID_ARGUMENT', `deny_queries: match_expr does not parse: ${error.message}`);
    });
    if (!tree || tree.statements.length !== 1) throw new FlightSqlError('INVALID_ARGUMENT', 'deny_queries: match_expr must be one boolean expression');
    const description = await this.engine.describe(probe).catch((error: Error) => {
      throw new FlightSqlError('INVALID_ARGUMENT', `deny_queries: match_expr is not valid over (user_id, sql, admin, client): ${error.message}`);
    });
    const type = description.schema.fields[0]?.type;
    if (description.schema.fields.length !== 1 || String(type) !== 'Bool') {
      throw new FlightSqlError('INVALID_ARGUMENT', `deny_queries: match_expr must be a boolean expression, not ${String(type)}`);
    }
  }
}
