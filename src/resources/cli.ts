// `orrery resources …`: resources files checked against a running server through Flight SQL.
import { FlightClientError, FlightSqlClient } from '../client/index.js';
import { parseSchemaText, tableResolver, type ServerViewSet } from './catalog.js';
import { parseResourcesArgs, resourcesUsage, type ResourcesArgs } from './cli-args.js';
import type { Diagnostic } from './declarations.js';
import { ResourcesCliError, resourcesExitStatus } from './errors.js';
import { ExpressionAnalyzer } from './expressions.js';
import { readPublicationFolder } from './files.js';
import { validateResources, type ValidationResult } from './validation.js';

/** Where commands print: results to `out`, problems to `err`. */
export interface ResourcesIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  out(line: string): void;
  err(line: string): void;
}

/** Runs `orrery resources <argv…>` and resolves with the exit status; never rejects. */
export async function runResourcesCli(argv: readonly string[], io: ResourcesIo): Promise<number> {
  let client: FlightSqlClient | undefined;
  try {
    const args = parseResourcesArgs(argv, io.env);
    if (args.command === 'help') {
      io.out(resourcesUsage);
      return resourcesExitStatus.ok;
    }
    client = new FlightSqlClient({ address: args.server, tls: args.tls, apiKey: args.key });
    return await validateCommand(args, client, io);
  } catch (error) {
    io.err(`orrery resources: ${error instanceof Error ? error.message : String(error)}`);
    if (error instanceof ResourcesCliError) {
      if (error.code === 'RESOURCES_USAGE') io.err("run 'orrery resources help' for usage");
      return error.exitStatus;
    }
    return resourcesExitStatus.failed;
  } finally {
    client?.close();
  }
}

/** The view sets a server lists, with the load error of each stored definition. */
export async function serverViewSets(client: FlightSqlClient): Promise<ServerViewSet[]> {
  const query = async (sql: string) => {
    try {
      return (await client.query(sql)).toArray() as Array<Record<string, unknown>>;
    } catch (error) {
      const hint =
        error instanceof FlightClientError && error.status === 'UNAUTHENTICATED'
          ? ' (pass --key or set ORRERY_API_KEY)'
          : '';
      throw new ResourcesCliError(
        'RESOURCES_SERVER_ERROR',
        `cannot list the view sets of ${client.options.address}: ${(error as Error).message}${hint}`,
      );
    }
  };
  const sets = await query('SELECT view_set_name, schema FROM list_view_sets()');
  const definitions = await query('SELECT view_set_name, load_error FROM list_view_set_definitions()');
  const loadErrors = new Map(definitions.map((d) => [String(d.view_set_name), d.load_error as string | null]));
  const listed = sets.map((s) => ({
    name: String(s.view_set_name),
    columns: parseSchemaText(String(s.schema)),
    loadError: loadErrors.get(String(s.view_set_name)) ?? null,
  }));
  // A stored definition that did not load has no view set, yet its name is known: report why.
  for (const [name, loadError] of loadErrors) {
    if (loadError !== null && !listed.some((s) => s.name === name)) listed.push({ name, columns: [], loadError });
  }
  return listed;
}

/** Validates a publication folder against a server's view sets. */
export async function validateFolder(dir: string, viewSets: readonly ServerViewSet[]): Promise<ValidationResult> {
  const folder = await readPublicationFolder(dir);
  const analyzer = await ExpressionAnalyzer.open();
  try {
    const result = await validateResources(folder.resources, tableResolver(viewSets, folder.views), analyzer);
    return { diagnostics: [...folder.diagnostics, ...result.diagnostics], entries: result.entries };
  } finally {
    analyzer.close();
  }
}

/** One diagnostic as a compiler prints it. */
export const diagnosticLine = (d: Diagnostic): string =>
  `${d.file}: ${d.entry === null ? '' : `${d.entry}: `}${d.severity}: ${d.message}`;

async function validateCommand(args: ResourcesArgs, client: FlightSqlClient, io: ResourcesIo): Promise<number> {
  const result = await validateFolder(args.dir!, await serverViewSets(client));
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  const warnings = result.diagnostics.length - errors.length;
  for (const diagnostic of sortDiagnostics(result.diagnostics)) {
    if (diagnostic.severity === 'error') io.err(diagnosticLine(diagnostic));
    else io.out(diagnosticLine(diagnostic));
  }
  io.out(
    `${result.entries.length} valid entr${result.entries.length === 1 ? 'y' : 'ies'}, ${errors.length} error(s), ${warnings} warning(s).`,
  );
  const mismatches = args.online ? await validateOnline(client, args.online.windowSeconds, io) : 0;
  return errors.length > 0 || mismatches > 0 ? resourcesExitStatus.invalid : resourcesExitStatus.ok;
}

/** validate --online: the server's validate_rollups, one line per rollup; answers the number of mismatches. */
async function validateOnline(client: FlightSqlClient, windowSeconds: number, io: ResourcesIo): Promise<number> {
  const rows = (
    await client.query(
      `SELECT rollup, status, CAST(window_from AS VARCHAR) AS window_from, CAST(window_to AS VARCHAR) AS window_to, buckets, detail FROM validate_rollups('${windowSeconds} seconds')`,
    )
  ).toArray() as Array<{
    rollup: string;
    status: string;
    window_from: string | null;
    window_to: string | null;
    buckets: bigint;
    detail: string | null;
  }>;
  for (const r of rows) {
    if (r.status === 'ok')
      io.out(`rollup ${r.rollup}: ok (${r.buckets} buckets from ${r.window_from} to ${r.window_to})`);
    else if (r.status === 'skipped') io.out(`rollup ${r.rollup}: skipped: ${r.detail}`);
    else io.err(`rollup ${r.rollup}: error: mismatch from ${r.window_from} to ${r.window_to}: ${r.detail}`);
  }
  const mismatches = rows.filter((r) => r.status === 'mismatch').length;
  io.out(`${rows.length} rollup(s) checked online, ${mismatches} mismatch(es).`);
  return mismatches;
}

/** By file, then in the order found. */
const sortDiagnostics = (diagnostics: readonly Diagnostic[]): Diagnostic[] =>
  diagnostics
    .map((d, i) => ({ d, i }))
    .sort((a, b) => (a.d.file < b.d.file ? -1 : a.d.file > b.d.file ? 1 : a.i - b.i))
    .map(({ d }) => d);
