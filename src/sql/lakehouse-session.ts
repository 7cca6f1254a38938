import type pg from 'pg';
import type { Principal } from '../auth/index.js';
import { queryablePartitions, type ObjectStore } from '../lakehouse/index.js';
import {
  globalInstance,
  schemaHash,
  sessionStatements,
  type EventRange,
  type ReadScope,
  type ViewLoader,
  type ViewRegistry,
  type ViewSet,
} from '../views/index.js';
import type { QueryShape } from '../engine/index.js';

/** What the lakehouse needs to answer queries: partitions in Postgres, files in the store, loaded view sets. */
export interface Lakehouse {
  readonly db: pg.Pool;
  readonly store: ObjectStore;
  readonly views: ViewRegistry;
  /** Keeps DDL-defined sets loaded; knows which stored definitions failed to load and why. */
  readonly loader?: ViewLoader;
}

/** The rows a key reads: admins every row, others their audiences (which always include public). */
export function scopeOf(principal: Principal): ReadScope {
  return principal.admin ? { kind: 'all' } : { kind: 'audiences', audiences: principal.audiences };
}

/** The view sets a query names (CTEs of the same name shadow them). */
export function referencedViews(shape: QueryShape, lakehouse: Lakehouse): ViewSet[] {
  const found = new Map<string, ViewSet>();
  for (const relation of shape.relations) {
    if (relation.cte) continue;
    const view = lakehouse.views.get(relation.name);
    if (view) found.set(view.name, view);
  }
  return [...found.values()];
}

/** The statements that make the named view sets queryable for this caller. */
export async function viewSetup(
  lakehouse: Lakehouse,
  views: readonly ViewSet[],
  scope: ReadScope,
  eventRange: EventRange,
): Promise<string[]> {
  const filesOf = async (view: ViewSet): Promise<string[]> =>
    (await queryablePartitions(lakehouse.db, view.name, globalInstance, schemaHash(view.columns), eventRange)).map((p) =>
      lakehouse.store.localPath(p.filePath!),
    );
  const sessionViews = await Promise.all(views.map(async (view) => ({ view, files: await filesOf(view) })));
  const needsOwners = scope.kind === 'audiences' && views.some((v) => v.audienceColumn === 'process_id');
  const processes = needsOwners ? lakehouse.views.get('processes') : undefined;
  const processAudiences = processes ? { view: processes, files: await filesOf(processes) } : undefined;
  return sessionStatements(sessionViews, scope, { processAudiences, eventRange });
}
