import type { ViewSet } from './view-set.js';

/**
 * The view sets currently loaded: the built-in ones and those defined by DDL. Readers take
 * a snapshot per statement; a reload swaps the whole set at once.
 */
export class ViewRegistry {
  private byName: ReadonlyMap<string, ViewSet>;
  private replaced = 0;

  constructor(viewSets: readonly ViewSet[]) {
    this.byName = index(viewSets);
  }

  /** Every loaded set, in materialization order (update group, then name). */
  all(): ViewSet[] {
    return [...this.byName.values()].sort((a, b) => a.updateGroup - b.updateGroup || a.name.localeCompare(b.name));
  }

  get(name: string): ViewSet | undefined {
    return this.byName.get(name.toLowerCase());
  }

  replace(viewSets: readonly ViewSet[]): void {
    this.byName = index(viewSets);
    this.replaced++;
  }

  /** How many times the sets were replaced: what was described of a statement under another value may be stale. */
  get generation(): number {
    return this.replaced;
  }
}

function index(viewSets: readonly ViewSet[]): Map<string, ViewSet> {
  return new Map(viewSets.map((v) => [v.name.toLowerCase(), v]));
}
