// `orrery views`: materialized view sets as code, against a running server through Flight SQL.
// Imports the client component only; knows the server through list_view_set_definitions() and
// the CREATE / DROP MATERIALIZED VIEW statements (and their EXPLAIN).
import { FlightSqlClient } from '../client/index.js';
import { FlightDefinitionServer, type DefinitionServer } from './definition-server.js';
import { ViewsCliError, exitStatus } from './errors.js';
import { parseViewsArgs, viewsUsage, type ViewsArgs } from './views-args.js';
import { applyCommand, listCommand, planCommand, pullCommand, showCommand, type Output } from './views-commands.js';

export { ViewsCliError, exitStatus, type ViewsCliErrorCode } from './errors.js';
export { oneLine, textTable } from './text-table.js';
export { parseViewsArgs, viewsUsage, type ViewsArgs, type ViewsCommand } from './views-args.js';
export {
  changesInApplyOrder,
  computePlan,
  countActions,
  type PlanAction,
  type PlanEntry,
  type StoredDefinition,
  type ViewPlan,
} from './view-plan.js';
export {
  comparableDefinition,
  explainOf,
  summarizeStatement,
  withOrReplace,
  type StatementSummary,
} from './view-statement.js';
export {
  FlightDefinitionServer,
  definitionsFromTable,
  type DdlOutcome,
  type DefinitionServer,
} from './definition-server.js';
export {
  applyCommand,
  checkChanges,
  listCommand,
  planCommand,
  pullCommand,
  showCommand,
  type CheckedChange,
  type Output,
} from './views-commands.js';

/** What `runViewsCli` reads and writes besides the server. */
export interface ViewsCliIo extends Output {
  readonly env: Readonly<Record<string, string | undefined>>;
}

/**
 * Runs `orrery views <argv…>` and resolves with the exit status; never rejects: errors are
 * printed to `io.err` as `orrery views: <message>`.
 */
export async function runViewsCli(argv: readonly string[], io: ViewsCliIo): Promise<number> {
  let client: FlightSqlClient | undefined;
  try {
    const args = parseViewsArgs(argv, io.env);
    if (args.command === 'help') {
      io.out(viewsUsage);
      return exitStatus.ok;
    }
    client = new FlightSqlClient({ address: args.server, tls: args.tls, apiKey: args.key });
    return await runCommand(args, new FlightDefinitionServer(client), io);
  } catch (error) {
    if (!(error instanceof ViewsCliError)) {
      io.err(`orrery views: ${error instanceof Error ? error.message : String(error)}`);
      return exitStatus.failed;
    }
    io.err(`orrery views: ${error.message}`);
    if (error.code === 'VIEWS_USAGE') io.err("run 'orrery views help' for usage");
    return error.exitStatus;
  } finally {
    client?.close();
  }
}

function runCommand(args: ViewsArgs, server: DefinitionServer, output: Output): Promise<number> {
  switch (args.command) {
    case 'plan':
      return planCommand(server, args.dir!, args.prune, output);
    case 'apply':
      return applyCommand(server, args.dir!, args.prune, output);
    case 'pull':
      return pullCommand(server, args.dir!, output);
    case 'list':
      return listCommand(server, output);
    case 'show':
      return showCommand(server, args.name!, output);
    case 'help':
      output.out(viewsUsage);
      return Promise.resolve(exitStatus.ok);
  }
}
