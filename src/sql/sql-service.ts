import type { Schema } from 'apache-arrow';
import type { Keyring, Principal } from '../auth/index.js';
import { StatementType, type DuckDBEngine, type StatementDescription } from '../engine/index.js';
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
import { sqlInfo } from './sql-info-values.js';
import { xdbcTypes } from './xdbc-types.js';

/** Statements a non-admin key may run: reads only. */
const readOnlyStatements = new Set([StatementType.SELECT, StatementType.EXPLAIN]);

/**
 * What statements mean in Orrery: keys decide who may run what, and statements run on the
 * DuckDB engine. This is the backend the Flight SQL front end talks to.
 */
export class SqlService implements FlightSqlBackend<Principal> {
  constructor(
    private readonly keyring: Keyring,
    private readonly engine: DuckDBEngine,
    private readonly serverVersion: string,
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
    return (await this.authorize(ctx, statement)).schema;
  }

  async executeQuery(ctx: CallContext<Principal>, statement: Statement): Promise<QueryResult> {
    await this.authorize(ctx, statement);
    return this.engine.query(statement.query, {
      parameters: statement.parameters,
      signal: ctx.signal,
      limit: ctx.options.limit,
      preserveDictionary: ctx.options.preserveDictionary,
    });
  }

  async executeUpdate(ctx: CallContext<Principal>, statement: Statement): Promise<number> {
    await this.authorize(ctx, statement);
    return this.engine.execute(statement.query, { parameters: statement.parameters });
  }

  async prepare(ctx: CallContext<Principal>, statement: Statement): Promise<PreparedStatementInfo> {
    const description = await this.authorize(ctx, statement);
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

  /** Describes a statement and refuses it when the key may not run it. */
  private async authorize(ctx: CallContext<Principal>, statement: Statement): Promise<StatementDescription> {
    const description = await this.engine.describe(statement.query, statement.parameters, ctx.options.preserveDictionary);
    if (!ctx.principal.admin && !readOnlyStatements.has(description.statementType)) {
      throw new FlightSqlError(
        'PERMISSION_DENIED',
        `permission denied: key '${ctx.principal.name}' may only run SELECT statements (this is ${StatementType[description.statementType]})`,
      );
    }
    return description;
  }
}
