import type { MetadataQueries } from '../metadata/index.js';
import type { DuckDBEngine } from '../engine/index.js';
import { storedDefinitions } from './definition-store.js';
import { viewErrors } from './errors.js';
import type { StoredDefinition } from './view-definition.js';
import type { ViewRegistry } from './view-registry.js';
import { buildViewSet } from './view-validation.js';
import type { ViewSet } from './view-set.js';

export interface ViewLoaderOptions {
  readonly db: MetadataQueries;
  readonly engine: DuckDBEngine;
  readonly registry: ViewRegistry;
  /** The view sets built into Orrery, always loaded. */
  readonly builtins: readonly ViewSet[];
  readonly refreshSeconds: number;
  readonly log: (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;
  readonly onFailure?: (name: string) => void;
}

/**
 * Keeps the registry in step with the stored definitions: loads them in (update group, name)
 * order, each checked against the sets loaded before it, on start and then every
 * refreshSeconds. A definition that fails to load is skipped, logged and counted, and its
 * reason kept for list_view_set_definitions(); it never blocks the others.
 */
export class ViewLoader {
  private timer: NodeJS.Timeout | undefined;
  private loading: Promise<void> | undefined;
  private lastDigest = '';
  private closed = false;
  /** Why each stored definition that did not load failed, by name. */
  readonly failures = new Map<string, string>();

  constructor(private readonly options: ViewLoaderOptions) {}

  /** Loads now (or waits for the load already running). */
  async load(force = false): Promise<void> {
    if (this.closed) throw viewErrors.error('VIEW_LOADER_CLOSED', 'the view set loader has been closed');
    this.loading ??= this.reload(force).finally(() => (this.loading = undefined));
    return this.loading;
  }

  start(): void {
    if (this.closed) throw viewErrors.error('VIEW_LOADER_CLOSED', 'the view set loader has been closed');
    const tick = (): void => {
      this.timer = setTimeout(() => {
        this.load()
          .catch((error) => this.options.log('error', 'reloading view set definitions failed', error))
          .finally(() => {
            if (!this.closed) tick();
          });
      }, this.options.refreshSeconds * 1000);
    };
    tick();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.loading?.catch(() => {});
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async reload(force: boolean): Promise<void> {
    const definitions = await storedDefinitions(this.options.db);
    const digest = definitions.map((d) => `${d.name}@${d.updatedAt.toISOString()}`).join(',');
    if (!force && digest === this.lastDigest) return;
    const loaded = new Map(this.options.builtins.map((v) => [v.name, v]));
    const failures = new Map<string, string>();
    for (const definition of definitions) {
      const outcome = await this.build(definition, loaded);
      if (typeof outcome === 'string') {
        failures.set(definition.name, outcome);
        if (this.failures.get(definition.name) !== outcome) {
          this.options.log('warn', `view set definition ${definition.name} did not load: ${outcome}`);
          this.options.onFailure?.(definition.name);
        }
      } else {
        loaded.set(outcome.name, outcome);
      }
    }
    this.options.registry.replace([...loaded.values()]);
    this.failures.clear();
    for (const [name, reason] of failures) this.failures.set(name, reason);
    this.lastDigest = digest;
  }

  private async build(definition: StoredDefinition, loaded: Map<string, ViewSet>): Promise<ViewSet | string> {
    if (this.options.builtins.some((v) => v.name === definition.name))
      return `the name ${definition.name} is taken by a built-in view set`;
    try {
      return await buildViewSet(this.options.engine, definition, (name) => loaded.get(name.toLowerCase()));
    } catch (error) {
      return (error as Error).message;
    }
  }
}
