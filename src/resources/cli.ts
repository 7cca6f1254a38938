// `orrery resources …` and `orrery publish`: a publication folder checked and published through a
// running server's Flight SQL (list_view_sets(), publish_resources(), resource_ledger(), …).
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FlightClientError, FlightSqlClient } from '../client/index.js';
import { quoteLiteral } from '../views/index.js';
import { FlightDefinitionServer, applyCommand, oneLine, textTable } from '../views-cli/index.js';
import { parseSchemaText, tableResolver, type ServerViewSet } from './catalog.js';
import { parseResourcesArgs, resourcesUsage, type ResourcesArgs } from './cli-args.js';
import type { Diagnostic } from './declarations.js';
import { diagnosticText } from './diagnostics.js';
import { ResourcesCliError, resourcesExitStatus } from './errors.js';
import { ExpressionAnalyzer } from './expressions.js';
import { publicationOf, publishedTexts, readPublicationTexts } from './files.js';
import { validateResources, type ValidationResult } from './validation.js';

/** Where commands print: results to `out`, problems to `err`. */
export interface ResourcesIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  out(line: string): void;
  err(line: string): void;
}

/** Runs `orrery resources <argv…>` (or `orrery publish <argv…>`) and resolves with the exit status; never rejects. */
export async function runResourcesCli(
  argv: readonly string[],
  io: ResourcesIo,
  program: 'resources' | 'publish' = 'resources',
): Promise<number> {
  let client: FlightSqlClient | undefined;
  try {
    const args = parseResourcesArgs(argv, io.env, program);
    if (args.command === 'help') {
      io.out(resourcesUsage);
      return resourcesExitStatus.ok;
    }
    client = new FlightSqlClient({ address: args.server, tls: args.tls, apiKey: args.key });
    return await runCommand(args, client, io).catch((error: unknown) => {
      throw adminOnly(args, program, error);
    });
  } catch (error) {
    io.err(`orrery ${program}: ${error instanceof Error ? oneLine(error.message) : String(error)}`);
    if (error instanceof ResourcesCliError) {
      if (error.code === 'RESOURCES_USAGE') io.err(`run 'orrery ${program} help' for usage`);
      return error.exitStatus;
    }
    return resourcesExitStatus.failed;
  } finally {
    client?.close();
  }
}

function runCommand(args: ResourcesArgs, client: FlightSqlClient, io: ResourcesIo): Promise<number> {
  switch (args.command) {
    case 'validate':
      return validateCommand(args, client, io);
    case 'plan':
      return planCommand(args, client, io);
    case 'status':
      return statusCommand(client, io);
    case 'prune':
      return streamLines(client, `SELECT msg FROM prune_resources(${args.dryRun})`, io);
    case 'publish':
      return publishCommand(args, client, io);
    case 'help':
      io.out(resourcesUsage);
      return Promise.resolve(resourcesExitStatus.ok);
  }
}

/**
 * Why a command needs an admin key. The spec runs them with the operator's credentials; a plan is not cut down
 * to a reader's view sets, because its steps come from the ledger and the served publication, which span
 * every team's entries. What a reader may check, validate gives (the server's omissions included).
 */
function adminNeed(args: ResourcesArgs, program: 'resources' | 'publish'): string {
  if (program === 'publish')
    return args.dryRun
      ? 'its plan compares the files with the resource ledger and the served publication'
      : 'it installs resources and records the publication';
  switch (args.command) {
    case 'plan':
      return 'it compares the files with the resource ledger and the served publication';
    case 'status':
      return 'it prints the resource ledger';
    case 'prune':
      return 'it drops retired resources';
    default:
      return "--online compares rollups' stored rows with every audience's raw rows";
  }
}

/** A command the server refused for want of an admin key, said as such (see adminNeed); any other error as it is. */
function adminOnly(args: ResourcesArgs, program: 'resources' | 'publish', error: unknown): unknown {
  if (!(error instanceof ResourcesCliError) || error.code !== 'RESOURCES_ADMIN_ONLY') return error;
  const command = program === 'publish' ? `publish${args.dryRun ? ' --dry-run' : ''}` : `resources ${args.command}`;
  return new ResourcesCliError(
    'RESOURCES_ADMIN_ONLY',
    `'orrery ${command}' needs an admin key: ${adminNeed(args, program)} (${error.message}); pass an admin's key with --key or ORRERY_API_KEY, or run 'orrery resources validate --dir <folder>', which checks the files and what the server's plan would omit with any key`,
  );
}

const serverError = (client: FlightSqlClient, what: string, error: unknown): ResourcesCliError => {
  if (error instanceof ResourcesCliError) return error;
  const hint =
    error instanceof FlightClientError && error.status === 'UNAUTHENTICATED'
      ? ' (pass --key or set ORRERY_API_KEY)'
      : '';
  const message = error instanceof FlightClientError ? error.details : (error as Error).message;
  return new ResourcesCliError(
    // The key's own refusal alone: a server lacking the rights to install (RESOURCES_RIGHTS_MISSING) is another.
    error instanceof FlightClientError && error.errorCode === 'ADMIN_ONLY'
      ? 'RESOURCES_ADMIN_ONLY'
      : 'RESOURCES_SERVER_ERROR',
    `${what} on ${client.options.address}: ${oneLine(message)}${hint}`,
  );
};

/** The view sets a server lists, with the load error of each stored definition. */
export async function serverViewSets(client: FlightSqlClient): Promise<ServerViewSet[]> {
  const query = async (sql: string) => {
    try {
      return (await client.query(sql)).toArray() as Array<Record<string, unknown>>;
    } catch (error) {
      throw serverError(client, 'cannot list the view sets', error);
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
  const folder = publicationOf(dir, await readPublicationTexts(dir));
  const analyzer = await ExpressionAnalyzer.open();
  try {
    const result = await validateResources(folder.resources, tableResolver(viewSets, folder.views), analyzer);
    return { diagnostics: [...folder.diagnostics, ...result.diagnostics], entries: result.entries };
  } finally {
    analyzer.close();
  }
}

/** One diagnostic as a compiler prints it. */
export const diagnosticLine = diagnosticText;

/** Prints the diagnostics (errors to err); returns the number of errors. */
function printDiagnostics(result: ValidationResult, io: ResourcesIo): number {
  const errors = result.diagnostics.filter((d) => d.severity === 'error');
  for (const diagnostic of sortDiagnostics(result.diagnostics)) {
    if (diagnostic.severity === 'error') io.err(diagnosticLine(diagnostic));
    else io.out(diagnosticLine(diagnostic));
  }
  return errors.length;
}

async function validateCommand(args: ResourcesArgs, client: FlightSqlClient, io: ResourcesIo): Promise<number> {
  const validated = await validateFolder(args.dir!, await serverViewSets(client));
  const ok = validated.diagnostics.every((d) => d.severity !== 'error');
  const result = ok
    ? {
        ...validated,
        diagnostics: [...validated.diagnostics, ...(await serverOmissions(args.dir!, validated, client))],
      }
    : validated;
  const errors = printDiagnostics(result, io);
  const warnings = result.diagnostics.length - errors;
  const valid = result.entries.length;
  io.out(`${valid} valid entr${valid === 1 ? 'y' : 'ies'}, ${errors} error(s), ${warnings} warning(s).`);
  const mismatches = args.online ? await validateOnline(client, args.online, io) : 0;
  return errors > 0 || mismatches > 0 ? resourcesExitStatus.invalid : resourcesExitStatus.ok;
}

/**
 * The entries the server's plan omits for reasons of its own installers (a set whose read merges rows, a kind it
 * lacks, an entry referring to one omitted), as warnings: validation cannot see those from the listed view sets.
 * `resource_omissions` reads no ledger and no revision, so any key may ask it.
 */
async function serverOmissions(
  dir: string,
  validated: ValidationResult,
  client: FlightSqlClient,
): Promise<Diagnostic[]> {
  const texts = publishedTexts(await readPublicationTexts(dir));
  let rows: Array<{ file: string; entry_key: string; reason: string }>;
  try {
    rows = (
      await client.query(`SELECT file, entry_key, reason FROM resource_omissions(${publication(texts)})`)
    ).toArray() as typeof rows;
  } catch (error) {
    throw serverError(client, "cannot ask the server's install plan", error);
  }
  // Validation's own warnings (entry.unsupported) are omitted by the plan too, and already reported.
  const reported = new Set(
    validated.entries.filter((e) => e.unsupported !== null).map((e) => `${e.file}\u0000${e.key}`),
  );
  return rows
    .filter((r) => !reported.has(`${r.file}\u0000${r.entry_key}`))
    .map((r) => ({
      file: r.file,
      entry: r.entry_key,
      severity: 'warning' as const,
      message: `this server does not install it: ${r.reason}`,
    }));
}

/** validate --online: the server's validate_rollups, one line per rollup; answers the number of mismatches. */
async function validateOnline(
  client: FlightSqlClient,
  online: Exclude<ResourcesArgs['online'], false>,
  io: ResourcesIo,
): Promise<number> {
  const end = online.windowEnd === undefined ? '' : `, ${quoteLiteral(online.windowEnd)}`;
  const rows = (
    await client.query(
      `SELECT rollup, status, CAST(window_from AS VARCHAR) AS window_from, CAST(window_to AS VARCHAR) AS window_to, buckets, detail FROM validate_rollups('${online.windowSeconds} seconds'${end})`,
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

/** Runs a procedure and prints its `msg` rows as they arrive. */
async function streamLines(client: FlightSqlClient, sql: string, io: ResourcesIo): Promise<number> {
  try {
    for await (const batch of client.queryBatches(sql)) {
      const msg = batch.getChild('msg');
      for (let row = 0; row < batch.numRows; row++) io.out(String(msg?.get(row)));
    }
  } catch (error) {
    throw serverError(client, 'failed', error);
  }
  return resourcesExitStatus.ok;
}

const publication = (texts: ReadonlyMap<string, string>): string =>
  quoteLiteral(JSON.stringify({ files: Object.fromEntries(texts) }));

async function planCommand(args: ResourcesArgs, client: FlightSqlClient, io: ResourcesIo): Promise<number> {
  const body =
    args.dir === undefined
      ? quoteLiteral(JSON.stringify({ revision: args.revision ?? null }))
      : publication(publishedTexts(await readPublicationTexts(args.dir)));
  return streamLines(client, `SELECT msg FROM publish_resources(${body}, 'plan')`, io);
}

async function statusCommand(client: FlightSqlClient, io: ResourcesIo): Promise<number> {
  let rows: Array<Record<string, unknown>>;
  try {
    rows = (
      await client.query(
        'SELECT physical_table, entry_key, kind, hash, state, backfilled_begin, backfilled_end, retired_at, prune_after, detail FROM resource_ledger()',
      )
    ).toArray() as Array<Record<string, unknown>>;
  } catch (error) {
    throw serverError(client, 'cannot read the resource ledger', error);
  }
  const drift = await driftRows(client);
  if (rows.length === 0) io.out(`The resource ledger of ${client.options.address} is empty.`);
  else printLedger(rows, io);
  // Declared (the ledger's ready entries) against installed: what a publish repairs, what prune retires.
  if (drift.length === 0) io.out(rows.length === 0 ? 'No drift.' : 'No drift: every ready entry is installed.');
  else {
    io.out(`Drift: ${drift.length} difference(s) between the ledger and what is installed:`);
    for (const line of textTable(['TABLE', 'ENTRY', 'KIND', 'HASH', 'PROBLEM'], drift, '')) io.out(line);
  }
  return resourcesExitStatus.ok;
}

async function driftRows(client: FlightSqlClient): Promise<string[][]> {
  try {
    return (await client.query('SELECT physical_table, entry_key, kind, hash, problem FROM resource_drift()'))
      .toArray()
      .map((r: Record<string, unknown>) =>
        ['physical_table', 'entry_key', 'kind', 'hash', 'problem'].map((c) => String(r[c])),
      );
  } catch (error) {
    throw serverError(client, 'cannot compare the ledger with what is installed', error);
  }
}

function printLedger(rows: ReadonlyArray<Record<string, unknown>>, io: ResourcesIo): void {
  const time = (value: unknown): string =>
    value === null || value === undefined ? '-' : new Date(Number(value)).toISOString();
  const table = rows.map((r) => [
    String(r.physical_table),
    String(r.entry_key),
    String(r.kind),
    String(r.hash),
    String(r.state),
    r.backfilled_begin === null ? '-' : `${time(r.backfilled_begin)}..${time(r.backfilled_end)}`,
    time(r.retired_at),
    time(r.prune_after),
    r.detail === null ? '' : oneLine(r.detail as string),
  ]);
  for (const line of textTable(
    ['TABLE', 'ENTRY', 'KIND', 'HASH', 'STATE', 'BACKFILLED', 'RETIRED_AT', 'PRUNE_AFTER', 'DETAIL'],
    table,
    '',
  ))
    io.out(line);
}

/** `resources.install_on_publish` of `<dir>/orrery.json` (default true). */
async function installOnPublish(dir: string): Promise<boolean> {
  const path = join(dir, 'orrery.json');
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return true;
  let parsed: { resources?: { install_on_publish?: unknown } };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch (error) {
    throw new ResourcesCliError('RESOURCES_FILE_ERROR', `${path} is not JSON: ${(error as Error).message}`);
  }
  const value = parsed.resources?.install_on_publish;
  if (value !== undefined && typeof value !== 'boolean')
    throw new ResourcesCliError('RESOURCES_FILE_ERROR', `${path}: resources.install_on_publish must be true or false`);
  return value ?? true;
}

async function publishCommand(args: ResourcesArgs, client: FlightSqlClient, io: ResourcesIo): Promise<number> {
  const dir = args.dir!;
  const result = await validateFolder(dir, await serverViewSets(client));
  if (printDiagnostics(result, io) > 0) {
    io.err(`Nothing published: fix the errors in ${dir} first.`);
    return resourcesExitStatus.invalid;
  }
  const texts = publishedTexts(await readPublicationTexts(dir));
  if (args.dryRun) return streamLines(client, `SELECT msg FROM publish_resources(${publication(texts)}, 'plan')`, io);
  const install = args.installResources ?? (await installOnPublish(dir));
  // One token for both steps: the server keeps the lock from install to serve (views are applied between).
  const step = (name: string) =>
    `SELECT msg FROM publish_resources(${publication(texts)}, '${name}', ${quoteLiteral(lockToken)})`;
  const lockToken = randomUUID();
  if (install) await streamLines(client, step('install'), io);
  else io.out('resources not installed (resources.install_on_publish is false, or --no-install-resources)');
  const views = [...texts.keys()].some((path) => path.startsWith('views/'));
  if (views) {
    const status = await applyCommand(new FlightDefinitionServer(client), join(dir, 'views'), false, io);
    if (status !== 0) return status;
  }
  if (install) await streamLines(client, step('serve'), io);
  return resourcesExitStatus.ok;
}

/** By file, then in the order found. */
const sortDiagnostics = (diagnostics: readonly Diagnostic[]): Diagnostic[] =>
  diagnostics
    .map((d, i) => ({ d, i }))
    .sort((a, b) => (a.d.file < b.d.file ? -1 : a.d.file > b.d.file ? 1 : a.i - b.i))
    .map(({ d }) => d);
