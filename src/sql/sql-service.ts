import type { Schema } from 'apache-arrow';
import type { Keyring, Principal } from '../auth/index.js';
import { StatementType, type DuckDBEngine, type RunOptions, type StatementDescription } from '../engine/index.js';
import {
  FlightSqlError,
  type CallContext,
  type DbSchemaInfo,
  type FlightSqlBackend,
  type PreparedStatementInfo,
  type QueryResult,
  type SqlInfoValues,
  type Statement,
  type TableInfo,
  type XdbcTypeInfo,
} from '../flight/index.js';
import { referencedViews, scopeOf, viewSetup, type Lakehouse } from './lakehouse-session.js';
import { queryShape } from './query-shape.js';
import { sqlInfo } from './sql-info-values.js';
import { checkReaderQuery, checkSingleStatement } from './statement-policy.js';
import { xdbcTypes } from './xdbc-types.js';

/** Lakehouse table functions any key may call. */
const readableTableFunctions: ReadonlySet<string> = new Set(['list_partitions', 'list_view_sets', 'view_instance', 'process_spans']);

/**
 * What statements mean in Orrery: keys decide who may run what, and statements run on the
 * DuckDB engine. This is the backend the Flight SQL front end talks to.
 */
export class SqlService implements FlightSqlBackend<Principal> {
  constructor(
    private readonly keyring: Keyring,
    private readonly engine: DuckDBEngine,
    private readonly serverVersion: string,
    private readonly lakehouse?: Lakehouse,
  ) {}

  async authenticateBasic(username: string, password: string): Promise<{ principal: Principal; token: string }> {
    const principal = this.keyring.byNameAndKey(username, password);
    if (!principal) throw new FlightSqlError('UNAUTHENTICATED', 'invalid user name or key');
    return { principal, token: password };
  }

  async authenticateBearer(token: string): Promise<Principal> {
    const principal = this.keyring.byKey(token);
    if (!principal) throw new FlightSqlError('UNAUTHENTICATED', 'invalid key');
    return principal;
  }

  async describeQuery(ctx: CallContext<Principal>, statement: Statement): Promise<Schema> {
    return (await this.plan(ctx, statement)).description.schema;
  }

  async executeQuery(ctx: CallContext<Principal>, statement: Statement): Promise<QueryResult> {
    const { options } = await this.plan(ctx, statement);
    return this.engine.query(statement.query, { ...options, signal: ctx.signal, limit: ctx.options.limit });
  }

  async executeUpdate(ctx: CallContext<Principal>, statement: Statement): Promise<number> {
    const { options } = await this.plan(ctx, statement);
    return this.engine.execute(statement.query, options);
  }

  async prepare(ctx: CallContext<Principal>, statement: Statement): Promise<PreparedStatementInfo> {
    const { description } = await this.plan(ctx, statement);
    return {
      datasetSchema: description.schema,
      parameterSchema: description.parameterSchema,
      isUpdate: !description.returnsRows,
    };
  }

  async getCatalogs(): Promise<string[]> {
    const tables = await this.engine.tables();
    return [...new Set(['orrery', ...tables.map((t) => t.catalog)])];
  }

  async getDbSchemas(): Promise<DbSchemaInfo[]> {
    return (await this.engine.schemas()).map((schema) => ({ catalog: 'orrery', schema }));
  }

  async getTables(_ctx: CallContext<Principal>, includeSchema: boolean): Promise<TableInfo[]> {
    const tables = await this.engine.tables();
    return Promise.all(
      tables.map(async (table) => ({
        catalog: table.catalog,
        schema: table.schema,
        name: table.name,
        type: table.type,
        arrowSchema: includeSchema ? await this.engine.tableSchema(table) : undefined,
      })),
    );
  }

  async getTableTypes(): Promise<string[]> {
    return ['TABLE', 'VIEW'];
  }

  async getXdbcTypeInfo(): Promise<XdbcTypeInfo[]> {
    return xdbcTypes;
  }

  sqlInfo(): SqlInfoValues {
    return sqlInfo(this.serverVersion);
  }

  /**
   * Works out how a statement runs for this caller: refuses what the key may not do, and
   * sets up the view sets the statement reads, scoped to the caller's audiences.
   */
  private async plan(ctx: CallContext<Principal>, statement: Statement): Promise<{ description: StatementDescription; options: RunOptions }> {
    const { principal } = ctx;
    const tree = await this.engine.parseSelect(statement.query);
    const shape = tree ? queryShape(tree) : null;
    if (shape) checkSingleStatement(shape);
    if (!principal.admin) {
      if (!shape) throw this.selectOnly(principal, await this.engine.describe(statement.query));
      checkReaderQuery(shape, readableTableFunctions);
    }
    const views = shape && this.lakehouse ? referencedViews(shape, this.lakehouse) : [];
    const setup =
      views.length > 0 && this.lakehouse
        ? await viewSetup(this.lakehouse, views, scopeOf(principal), { begin: ctx.options.rangeBegin, end: ctx.options.rangeEnd })
        : [];
    const options: RunOptions = { parameters: statement.parameters, preserveDictionary: ctx.options.preserveDictionary, setup };
    const description = await this.engine.describe(statement.query, options);
    if (!principal.admin && description.statementType !== StatementType.SELECT) throw this.selectOnly(principal, description);
    return { description, options };
  }

  private selectOnly(principal: Principal, description: StatementDescription): FlightSqlError {
    const kind = StatementType[description.statementType];
    return new FlightSqlError('PERMISSION_DENIED', `permission denied: key '${principal.name}' may only run SELECT statements (this is ${kind})`);
  }
}
