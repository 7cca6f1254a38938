import {
  comparableDefinition,
  dropStatement,
  statementText,
  summarizeStatement,
  viewNamePattern,
  withOrReplace,
} from './view-statement.js';

/** One stored definition, as list_view_set_definitions() returns it. */
export interface StoredDefinition {
  readonly name: string;
  /** The CREATE statement exactly as it was sent. */
  readonly definitionSql: string;
  readonly updateGroup: number;
  /** ISO 8601, or null when the server did not say. */
  readonly updatedAt: string | null;
  readonly updatedBy: string | null;
  /** Why the definition did not load; null when it loaded. */
  readonly loadError: string | null;
}

/**
 * What the plan does with one view set:
 * - `create`: a file without a stored definition;
 * - `replace`: a file whose statement differs from the stored one;
 * - `drop`: a stored definition without a file, with `--prune`;
 * - `unchanged`: a file whose statement matches the stored one;
 * - `not_managed`: a stored definition without a file, without `--prune` (left alone);
 * - `invalid`: a file the CLI cannot use (see `problem`).
 */
export type PlanAction = 'create' | 'replace' | 'drop' | 'unchanged' | 'not_managed' | 'invalid';

/** One view set in a plan. */
export interface PlanEntry {
  readonly name: string;
  readonly action: PlanAction;
  /** The file's update_group for create and replace, the stored one otherwise; null when unknown. */
  readonly updateGroup: number | null;
  /** The statement apply sends (create, replace, drop); null for the other actions. */
  readonly statement: string | null;
  /** Why the file is invalid (action `invalid` only). */
  readonly problem?: string;
}

/** Every view set of the folder or the server, by name. */
export interface ViewPlan {
  readonly entries: readonly PlanEntry[];
}

const isChange = (entry: PlanEntry): boolean =>
  entry.action === 'create' || entry.action === 'replace' || entry.action === 'drop';
const group = (entry: PlanEntry): number => entry.updateGroup ?? Number.POSITIVE_INFINITY;
const byGroupThenName = (a: PlanEntry, b: PlanEntry): number =>
  group(a) - group(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * Compares a folder (file name without `.sql` → file text) with the server's definitions.
 * Entries are sorted by name.
 *
 * @example
 * computePlan(new Map([['errors', 'CREATE MATERIALIZED VIEW errors WITH (…, update_group = 4000)']]), [], { prune: false })
 * // { entries: [{ name: 'errors', action: 'create', updateGroup: 4000, statement: 'CREATE MATERIALIZED VIEW errors WITH (…)' }] }
 */
export function computePlan(
  files: ReadonlyMap<string, string>,
  stored: readonly StoredDefinition[],
  options: { prune: boolean },
): ViewPlan {
  const storedByName = new Map(stored.map((definition) => [definition.name, definition]));
  const entries: PlanEntry[] = [];
  for (const [name, text] of files) {
    const definition = storedByName.get(name);
    const problem = fileProblem(name, text);
    if (problem) {
      entries.push({ name, action: 'invalid', updateGroup: definition?.updateGroup ?? null, statement: null, problem });
      continue;
    }
    const statement = statementText(text);
    const { updateGroup } = summarizeStatement(statement);
    if (!definition) {
      entries.push({ name, action: 'create', updateGroup, statement });
    } else if (comparableDefinition(statement) === comparableDefinition(definition.definitionSql)) {
      entries.push({ name, action: 'unchanged', updateGroup: definition.updateGroup, statement: null });
    } else {
      entries.push({ name, action: 'replace', updateGroup, statement: withOrReplace(statement) });
    }
  }
  for (const definition of stored) {
    if (files.has(definition.name)) continue;
    entries.push(
      options.prune
        ? {
            name: definition.name,
            action: 'drop',
            updateGroup: definition.updateGroup,
            statement: dropStatement(definition.name),
          }
        : { name: definition.name, action: 'not_managed', updateGroup: definition.updateGroup, statement: null },
    );
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { entries };
}

/** Why a file cannot be planned, or null. */
function fileProblem(name: string, text: string): string | null {
  if (!viewNamePattern.test(name)) {
    return `file name '${name}.sql' is not <view name>.sql (a view name matches ${viewNamePattern.source})`;
  }
  let summary;
  try {
    summary = summarizeStatement(text);
  } catch (error) {
    return `${name}.sql ${(error as Error).message}`;
  }
  if (summary.name !== name)
    return `${name}.sql defines view '${summary.name}'; the file must be named ${summary.name}.sql`;
  return null;
}

/**
 * The changes in the order apply runs them: creates and replaces by ascending update_group
 * (then name), then drops by descending update_group (then name, reversed), so a view is
 * defined before the views that read it and dropped after them.
 */
export function changesInApplyOrder(plan: ViewPlan): PlanEntry[] {
  const upserts = plan.entries.filter((e) => isChange(e) && e.action !== 'drop').sort(byGroupThenName);
  const drops = plan.entries.filter((e) => e.action === 'drop').sort((a, b) => byGroupThenName(b, a));
  return [...upserts, ...drops];
}

/** How many entries take each action. */
export function countActions(plan: ViewPlan): Record<PlanAction, number> {
  const counts: Record<PlanAction, number> = {
    create: 0,
    replace: 0,
    drop: 0,
    unchanged: 0,
    not_managed: 0,
    invalid: 0,
  };
  for (const entry of plan.entries) counts[entry.action]++;
  return counts;
}
