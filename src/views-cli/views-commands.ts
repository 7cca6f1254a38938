import type { FlightClientError } from '../client/index.js';
import { refusalOf, serverError, type DdlOutcome, type DefinitionServer } from './definition-server.js';
import { ViewsCliError, exitStatus } from './errors.js';
import { oneLine, textTable } from './text-table.js';
import { readViewFiles, writeViewFile, type PullOutcome } from './view-files.js';
import { changesInApplyOrder, computePlan, countActions, type PlanEntry, type ViewPlan } from './view-plan.js';
import { explainOf } from './view-statement.js';

/** Where commands print: results to `out`, problems to `err`. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/** A planned change and what the server's EXPLAIN said of it. */
export interface CheckedChange {
  readonly entry: PlanEntry;
  /** The EXPLAIN answer (would_create, would_replace, unchanged, would_drop) when it was accepted. */
  readonly outcome: DdlOutcome | null;
  /** The refusal when it was not. */
  readonly refusal: FlightClientError | null;
}

const actionLabel = (entry: PlanEntry): string => entry.action.replace('_', ' ');
const groupLabel = (entry: PlanEntry): string => (entry.updateGroup === null ? '-' : String(entry.updateGroup));
const refusalText = (refusal: FlightClientError): string => `${refusal.status}: ${oneLine(refusal.details)}`;

async function loadPlan(server: DefinitionServer, dir: string, prune: boolean): Promise<ViewPlan> {
  const files = await readViewFiles(dir);
  return computePlan(files, await server.listDefinitions(), { prune });
}

/** EXPLAINs every change of the plan, in apply order, against the server's current definitions. */
export async function checkChanges(server: DefinitionServer, plan: ViewPlan): Promise<CheckedChange[]> {
  const checked: CheckedChange[] = [];
  for (const entry of changesInApplyOrder(plan)) {
    try {
      checked.push({ entry, outcome: await server.execute(explainOf(entry.statement!)), refusal: null });
    } catch (error) {
      const refusal = refusalOf(error);
      if (!refusal) throw serverError(error, `cannot check ${entry.name} on ${server.address}`);
      checked.push({ entry, outcome: null, refusal });
    }
  }
  return checked;
}

/** `plan`: prints the plan with the server's verdict on each change; 2 when anything is invalid or would be refused. */
export async function planCommand(
  server: DefinitionServer,
  dir: string,
  prune: boolean,
  output: Output,
): Promise<number> {
  const plan = await loadPlan(server, dir, prune);
  const checked = await checkChanges(server, plan);
  const rows = [
    ...checked.map(({ entry, outcome, refusal }) => [
      entry.name,
      actionLabel(entry),
      groupLabel(entry),
      refusal ? `refused: ${refusalText(refusal)}` : `ok (${outcome!.action})`,
    ]),
    ...otherRows(plan),
  ];
  const counts = countActions(plan);
  const refused = checked.filter((c) => c.refusal).length;
  output.out(`Plan for ${dir} against ${server.address}:`);
  if (rows.length > 0) {
    output.out('');
    for (const line of textTable(['NAME', 'ACTION', 'UPDATE_GROUP', 'CHECK'], rows)) output.out(line);
    output.out('');
  }
  if (checked.length === 0 && counts.invalid === 0) {
    const notManaged = counts.not_managed > 0 ? ` (${counts.not_managed} not managed)` : '';
    output.out(`Nothing to do: ${counts.unchanged} view set(s) match the server${notManaged}.`);
  } else {
    output.out(summary(plan, refused));
  }
  return refused > 0 || counts.invalid > 0 ? exitStatus.refused : exitStatus.ok;
}

/** Rows of the entries that are not changes: invalid files, then stored definitions without a file. */
function otherRows(plan: ViewPlan): string[][] {
  return [
    ...plan.entries
      .filter((e) => e.action === 'invalid')
      .map((e) => [e.name, actionLabel(e), groupLabel(e), e.problem ?? '']),
    ...plan.entries
      .filter((e) => e.action === 'not_managed')
      .map((e) => [e.name, actionLabel(e), groupLabel(e), 'no file; left alone (--prune drops it)']),
  ];
}

function summary(plan: ViewPlan, refused: number): string {
  const counts = countActions(plan);
  const parts = [
    `${counts.create} to create`,
    `${counts.replace} to replace`,
    `${counts.drop} to drop`,
    `${counts.unchanged} unchanged`,
  ];
  if (counts.not_managed > 0) parts.push(`${counts.not_managed} not managed`);
  if (refused > 0) parts.push(`${refused} refused`);
  if (counts.invalid > 0) parts.push(`${counts.invalid} invalid file(s)`);
  return `${parts.join(', ')}.`;
}

/** `apply`: runs the plan's changes in order, stopping at the first refusal. */
export async function applyCommand(
  server: DefinitionServer,
  dir: string,
  prune: boolean,
  output: Output,
): Promise<number> {
  const plan = await loadPlan(server, dir, prune);
  const counts = countActions(plan);
  if (counts.invalid > 0) {
    for (const line of textTable(
      ['NAME', 'ACTION', 'UPDATE_GROUP', 'PROBLEM'],
      otherRows(plan).filter((r) => r[1] === 'invalid'),
    )) {
      output.err(line);
    }
    output.err(`Nothing applied: fix the ${counts.invalid} invalid file(s) in ${dir} first.`);
    return exitStatus.refused;
  }
  const changes = changesInApplyOrder(plan);
  const notManaged =
    counts.not_managed > 0
      ? ` ${counts.not_managed} stored definition(s) without a file left alone (--prune drops them).`
      : '';
  if (changes.length === 0) {
    output.out(`Nothing to do: ${counts.unchanged} view set(s) match the server.${notManaged}`);
    return exitStatus.ok;
  }
  output.out(`Applying ${changes.length} change(s) from ${dir} to ${server.address}:`);
  const done: Record<string, number> = {};
  for (const [i, entry] of changes.entries()) {
    let outcome: DdlOutcome;
    try {
      outcome = await server.execute(entry.statement!);
    } catch (error) {
      const refusal = refusalOf(error);
      const rest = changes.slice(i + 1).map((e) => e.name);
      const stopped = `Stopped at ${entry.name} (${entry.action}); applied ${i} of ${changes.length} change(s)${
        rest.length > 0 ? `; not attempted: ${rest.join(', ')}` : ''
      }.`;
      if (!refusal) {
        output.err(stopped);
        throw serverError(error, `cannot ${entry.action} ${entry.name} on ${server.address}`);
      }
      output.out(`  ${'refused'.padEnd(9)} ${entry.name}: ${refusalText(refusal)}`);
      output.err(stopped);
      return exitStatus.refused;
    }
    output.out(`  ${outcome.action.padEnd(9)} ${entry.name} (update_group ${groupLabel(entry)})`);
    done[outcome.action] = (done[outcome.action] ?? 0) + 1;
  }
  const tally = Object.entries(done).map(([action, n]) => `${n} ${action}`);
  output.out(`Done: ${tally.join(', ')}.${notManaged}`);
  return exitStatus.ok;
}

/** `pull`: writes every stored definition to `<dir>/<name>.sql`. */
export async function pullCommand(server: DefinitionServer, dir: string, output: Output): Promise<number> {
  const definitions = await server.listDefinitions();
  const counts: Record<PullOutcome, number> = { new: 0, updated: 0, unchanged: 0, skipped: 0 };
  for (const definition of definitions) {
    const outcome = await writeViewFile(dir, definition.name, definition.definitionSql);
    counts[outcome]++;
    if (outcome === 'skipped') output.err(`  skipped    '${definition.name}': not a file name this CLI writes`);
    else output.out(`  ${outcome.padEnd(10)} ${definition.name}.sql`);
  }
  output.out(
    `Pulled ${definitions.length - counts.skipped} definition(s) from ${server.address} into ${dir}: ` +
      `${counts.new} new, ${counts.updated} updated, ${counts.unchanged} unchanged.`,
  );
  return counts.skipped > 0 ? exitStatus.failed : exitStatus.ok;
}

/** `list`: one line per stored definition, in load order. */
export async function listCommand(server: DefinitionServer, output: Output): Promise<number> {
  const definitions = await server.listDefinitions();
  if (definitions.length === 0) {
    output.out(`No view set definitions on ${server.address}.`);
    return exitStatus.ok;
  }
  const rows = definitions.map((d) => [
    d.name,
    String(d.updateGroup),
    d.updatedAt ?? '-',
    d.loadError === null ? 'loaded' : `error: ${oneLine(d.loadError)}`,
  ]);
  for (const line of textTable(['NAME', 'UPDATE_GROUP', 'UPDATED_AT', 'STATUS'], rows, '')) output.out(line);
  return exitStatus.ok;
}

/** `show`: the stored statement, exactly. */
export async function showCommand(server: DefinitionServer, name: string, output: Output): Promise<number> {
  const definitions = await server.listDefinitions();
  const definition = definitions.find((d) => d.name === name);
  if (!definition) {
    const known = definitions.map((d) => d.name).join(', ') || 'none';
    throw new ViewsCliError(
      'VIEWS_DEFINITION_NOT_FOUND',
      `no view set definition named '${name}' on ${server.address} (it has: ${known})`,
    );
  }
  output.out(definition.definitionSql.replace(/\n$/, ''));
  return exitStatus.ok;
}
