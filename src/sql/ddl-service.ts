import type { MetadataStore } from '../metadata/index.js';
import type { Principal } from '../auth/index.js';
import type { DuckDBEngine } from '../engine/index.js';
import type { OrreryError } from '../errors/index.js';
import { retireEverything } from '../lakehouse/index.js';
import {
  buildViewSet,
  deleteDefinition,
  saveDefinition,
  storedDefinitions,
  viewErrors,
  viewSetsRead,
  type ViewDefinition,
  type ViewLoader,
  type ViewRegistry,
  type ViewSet,
} from '../views/index.js';
import type { DdlStatement } from './ddl-parser.js';
import { sqlErrors } from './errors.js';

/** What a DDL statement did (or, under EXPLAIN, would do). */
export type DdlAction =
  'created' | 'replaced' | 'dropped' | 'not_found' | 'would_create' | 'would_replace' | 'unchanged' | 'would_drop';

export interface DdlServiceOptions {
  readonly db: MetadataStore;
  readonly engine: DuckDBEngine;
  readonly registry: ViewRegistry;
  readonly loader: ViewLoader;
  /** Names users cannot take: built-in view sets and static tables. */
  readonly reservedNames: () => ReadonlySet<string>;
  readonly retireDelaySeconds: number;
  /** The rollups built on a view set, which neither DROP nor a replacement may break. */
  readonly rollupsOn?: (name: string) => Promise<readonly string[]>;
  /** After a set's definition is replaced: builds again the ranges it left audiences out of (see Materializer). */
  readonly replaced?: (name: string) => Promise<void>;
}

/**
 * CREATE [OR REPLACE] MATERIALIZED VIEW and DROP MATERIALIZED VIEW: everything is checked
 * before anything is written, including every other definition the change would break;
 * then the definition is stored and this server reloads at once (others within the
 * refresh interval).
 */
export class DdlService {
  constructor(private readonly options: DdlServiceOptions) {}

  async run(statement: DdlStatement, principal: Principal): Promise<{ name: string; action: DdlAction }> {
    if (statement.kind === 'create') return this.create(statement, principal);
    return this.drop(statement);
  }

  private async create(
    statement: Extract<DdlStatement, { kind: 'create' }>,
    principal: Principal,
  ): Promise<{ name: string; action: DdlAction }> {
    const { name, options } = statement;
    this.checkName(name);
    const stored = await storedDefinitions(this.options.db);
    const existing = stored.find((d) => d.name === name);
    if (existing && !statement.orReplace) {
      throw viewErrors.error(
        'VIEW_SET_EXISTS',
        `view set ${name} already exists (use CREATE OR REPLACE MATERIALIZED VIEW to replace it)`,
      );
    }
    const definition: ViewDefinition = {
      name,
      definitionSql: statement.text,
      extractQuery: options.extractQuery,
      countQuery: options.countSrcQuery,
      mergeQuery: options.mergePartitionsQuery,
      updateGroup: options.updateGroup,
      minTimeColumn: options.minTimeColumn,
      maxTimeColumn: options.maxTimeColumn,
      sourcePartitionDelta: options.sourcePartitionDelta,
      mergePartitionDelta: options.mergePartitionDelta,
      mergeSortOrder: options.mergeSortOrder,
    };
    const lookup = (other: string): ViewSet | undefined => this.options.registry.get(other);
    const view = await buildViewSet(this.options.engine, definition, lookup);
    await this.checkDependents(name, view);
    if (existing && existing.definitionSql !== statement.text) await this.checkRollups(name, 'replacing');
    if (statement.explain) {
      return {
        name,
        action: !existing ? 'would_create' : existing.definitionSql === statement.text ? 'unchanged' : 'would_replace',
      };
    }
    // A transaction of its own: committed only while the statement's client is there (checkLive).
    await this.options.db.transaction((tx) => saveDefinition(tx, definition, principal.name));
    await this.options.loader.load(true);
    if (existing && existing.definitionSql !== statement.text) await this.options.replaced?.(name);
    return { name, action: existing ? 'replaced' : 'created' };
  }

  private async drop(statement: Extract<DdlStatement, { kind: 'drop' }>): Promise<{ name: string; action: DdlAction }> {
    const { name } = statement;
    if (this.options.reservedNames().has(name))
      throw viewErrors.error('VIEW_SET_BUILT_IN', `${name} is built in and cannot be dropped`);
    const stored = await storedDefinitions(this.options.db);
    if (!stored.some((d) => d.name === name)) {
      if (statement.ifExists) return { name, action: 'not_found' };
      throw viewErrors.error('VIEW_SET_NOT_FOUND', `view set ${name} does not exist`);
    }
    const dependents = this.options.registry.all().filter((v) => v.name !== name && viewSetsRead(v).includes(name));
    if (dependents.length > 0) {
      throw viewErrors.error(
        'VIEW_SET_IN_USE',
        `dropping ${name} would break ${dependents.map((v) => v.name).join(', ')}, which read(s) it; drop the dependent first`,
      );
    }
    await this.checkRollups(name, 'dropping');
    if (statement.explain) return { name, action: 'would_drop' };
    await this.options.db.transaction(async (tx) => {
      await deleteDefinition(tx, name);
      await retireEverything(tx, name, this.options.retireDelaySeconds);
      // Its partitions go: so do the audiences they were built without.
      await tx.query('DELETE FROM failed_audiences WHERE view_set_name = $1', [name]);
    });
    await this.options.loader.load(true);
    return { name, action: 'dropped' };
  }

  /** A view set that rollups read keeps its definition: they would read rows of another shape. */
  private async checkRollups(name: string, doing: string): Promise<void> {
    const rollups = (await this.options.rollupsOn?.(name)) ?? [];
    if (rollups.length > 0)
      throw viewErrors.error(
        'VIEW_SET_IN_USE',
        `${doing} ${name} would break rollup ${rollups.join(', ')}, which read(s) it; drop the rollup first`,
      );
  }

  private checkName(name: string): void {
    if (this.options.reservedNames().has(name)) {
      throw viewErrors.error('VIEW_NAME_TAKEN', `the name ${name} is taken by a built-in view set or a static table`);
    }
  }

  /** Every loaded set that reads `name` must still build with the new definition in its place. */
  private async checkDependents(name: string, replacement: ViewSet): Promise<void> {
    const stored = await storedDefinitions(this.options.db);
    for (const dependent of this.options.registry.all()) {
      if (dependent.name === name || !viewSetsRead(dependent).includes(name)) continue;
      const definition = stored.find((d) => d.name === dependent.name);
      if (!definition) continue;
      try {
        await buildViewSet(this.options.engine, definition, (other) =>
          other === name ? replacement : this.options.registry.get(other),
        );
      } catch (error) {
        throw viewErrors.error(
          'VIEW_SET_IN_USE',
          `replacing ${name} would break ${dependent.name}: ${(error as Error).message}`,
        );
      }
    }
  }
}

export const permissionDenied = (principal: Principal): OrreryError =>
  sqlErrors.error(
    'ADMIN_ONLY',
    `permission denied: key '${principal.name}' may not create or drop materialized views (admins only)`,
  );
