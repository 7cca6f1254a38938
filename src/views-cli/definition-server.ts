import type { Table } from 'apache-arrow';
import { FlightClientError, type FlightSqlClient } from '../client/index.js';
import { ViewsCliError } from './errors.js';
import type { StoredDefinition } from './view-plan.js';

/** What a DDL statement (or its EXPLAIN) answered: the view set and what happened (or would). */
export interface DdlOutcome {
  readonly name: string;
  readonly action: string;
}

/** The server side of `orrery views`, so commands can run against a fake in tests. */
export interface DefinitionServer {
  /** `host:port`, for messages. */
  readonly address: string;
  /** Every stored definition (list_view_set_definitions()). */
  listDefinitions(): Promise<StoredDefinition[]>;
  /** Runs a CREATE / DROP MATERIALIZED VIEW statement or its EXPLAIN; rejects with a FlightClientError when refused. */
  execute(sql: string): Promise<DdlOutcome>;
}

/** The statuses the server refuses a definition with; any other error stops the command. */
const refusalStatuses = new Set([
  'INVALID_ARGUMENT',
  'FAILED_PRECONDITION',
  'PERMISSION_DENIED',
  'ALREADY_EXISTS',
  'NOT_FOUND',
]);

/** The refusal a statement got, or null when the error is not one (unreachable server, bad key, …). */
export function refusalOf(error: unknown): FlightClientError | null {
  return error instanceof FlightClientError && refusalStatuses.has(error.status) ? error : null;
}

/** The definitions query and the DDL statements, through a Flight SQL client. */
export class FlightDefinitionServer implements DefinitionServer {
  constructor(private readonly client: FlightSqlClient) {}

  get address(): string {
    return this.client.options.address;
  }

  async listDefinitions(): Promise<StoredDefinition[]> {
    let table: Table;
    try {
      table = await this.client.query('SELECT * FROM list_view_set_definitions()');
    } catch (error) {
      throw serverError(error, `cannot list the view set definitions of ${this.address}`);
    }
    return definitionsFromTable(table);
  }

  async execute(sql: string): Promise<DdlOutcome> {
    const table = await this.client.query(sql);
    const name = table.getChild('view_set_name')?.get(0);
    const action = table.getChild('action')?.get(0);
    if (table.numRows !== 1 || typeof name !== 'string' || typeof action !== 'string') {
      throw new ViewsCliError(
        'VIEWS_BAD_DEFINITIONS_RESULT',
        `the server answered ${table.numRows} row(s) without view_set_name and action to: ${firstLine(sql)}`,
      );
    }
    return { name, action };
  }
}

/** A ViewsCliError for a failed server call, with the client's readable message. */
export function serverError(error: unknown, what: string): ViewsCliError {
  if (error instanceof ViewsCliError) return error;
  const message = error instanceof Error ? error.message : String(error);
  const hint =
    error instanceof FlightClientError && error.status === 'UNAUTHENTICATED'
      ? ' (pass --key or set ORRERY_API_KEY)'
      : '';
  return new ViewsCliError('VIEWS_SERVER_ERROR', `${what}: ${message}${hint}`);
}

/** The rows of list_view_set_definitions(), sorted by (update_group, name). */
export function definitionsFromTable(table: Table): StoredDefinition[] {
  const column = (name: string, required: boolean) => {
    const vector = table.getChild(name);
    if (!vector && required) {
      throw new ViewsCliError(
        'VIEWS_BAD_DEFINITIONS_RESULT',
        `list_view_set_definitions() answered without a '${name}' column`,
      );
    }
    return (row: number): unknown => vector?.get(row) ?? null;
  };
  const name = column('view_set_name', true);
  const definitionSql = column('definition_sql', true);
  const updateGroup = column('update_group', true);
  const updatedAt = column('updated_at', false);
  const updatedBy = column('updated_by', false);
  const loadError = column('load_error', false);
  const definitions: StoredDefinition[] = [];
  for (let row = 0; row < table.numRows; row++) {
    definitions.push({
      name: String(name(row)),
      definitionSql: (definitionSql(row) as string | null) ?? '',
      updateGroup: Number(updateGroup(row)),
      updatedAt: isoTime(updatedAt(row)),
      updatedBy: nullableString(updatedBy(row)),
      loadError: nullableString(loadError(row)),
    });
  }
  return definitions.sort((a, b) => a.updateGroup - b.updateGroup || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

const nullableString = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value as string);

/** An Arrow timestamp (apache-arrow reads them as epoch milliseconds) as ISO 8601 UTC. */
function isoTime(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  const ms = Number(value);
  return Number.isFinite(ms) ? new Date(Math.floor(ms)).toISOString() : String(value as string);
}

const firstLine = (sql: string): string => sql.trim().split('\n')[0].slice(0, 120);
