// Who installs each kind of entry. The resources component plans, locks, records and retires; an
// installer makes the database objects of one kind. Other components register theirs at start-up
// (the rollup kind: issue 14), so publish installs every kind through one path.
import type { ObjectStore } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import type { ResourceEntry, ResourceKind } from './declarations.js';
import type { LedgerRow } from './ledger.js';
import { partitionStatsInstaller } from './partition-stats.js';
import { projectionInstaller } from './projections.js';
import { storedColumnInstaller } from './stored-columns.js';
import type { ValidEntry } from './validation.js';

/** What an installer may use while it installs one entry. */
export interface InstallContext {
  readonly db: MetadataQueries;
  readonly store: ObjectStore;
  /** Every valid entry of the publication (an index's column entry, a rollup's source). */
  readonly entries: readonly ValidEntry[];
  /** The entry's ledger row as it was when this step began (its backfilled range, to resume from). */
  readonly row: LedgerRow;
  /** Where the lake's retention begins: partitions whose insert range ended before are not backfilled. */
  readonly retainedFrom: Date;
  /** Runs a SELECT on the server's DuckDB, which reaches the lake's files wherever they are (`store.location`). */
  lakeRows(sql: string): Promise<unknown[][]>;
  /** Records backfill progress in the ledger, so a crashed publication resumes there. */
  progress(update: { backfilledBegin?: Date; backfilledEnd?: Date; detail?: string }): Promise<void>;
  /**
   * Rewrites one partition file of a view set with every stored column installed on it and registers the
   * new file in its place; false when the file is no longer a partition (the daemon replaced it).
   */
  rewritePartition?(viewSet: string, filePath: string): Promise<boolean>;
}

/** Postgres objects an installer writes besides the ledger's tables and the partitions' (see missingRights). */
export interface WrittenObjects {
  /** Tables it writes: `schema.table`, or a table of the current schema. */
  readonly tables: readonly string[];
  /** Schemas it makes tables in. */
  readonly schemas: readonly string[];
}

/** The tables a schema's SQL makes (`CREATE TABLE IF NOT EXISTS <name>`), in order. */
export const tablesMadeBy = (schemaSql: string): string[] =>
  [...schemaSql.matchAll(/CREATE TABLE IF NOT EXISTS (\w+)/g)].map((m) => m[1]);

/** Makes, points and drops the database objects of one kind of entry. */
export interface ResourceInstaller {
  /**
   * What installing and serving `entries` (the publication's entries of this kind, as its files declare them) writes
   * in Postgres besides what every publication writes.
   */
  writes?(db: MetadataQueries, entries: readonly ResourceEntry[]): Promise<WrittenObjects>;
  /** Why this server cannot install the entry (the plan omits it with a warning), or null; `entries`: the publication's. */
  unsupported?(entry: ValidEntry, entries: readonly ValidEntry[]): string | null | Promise<string | null>;
  /**
   * Why the entry needs nothing installed (the plan says it is satisfied, and why), or null: what the database
   * keeps anyway serves it (DuckLake's per-file min/max, for a minmax index on a series table).
   */
  satisfied?(entry: ValidEntry): string | null | Promise<string | null>;
  /** Installs and backfills, idempotent and resumable from `ctx.row`; yields progress lines. */
  install(entry: ValidEntry, ctx: InstallContext): AsyncGenerator<string>;
  /** Points stable names at what `install` made; runs at the serve step. */
  serve?(entry: ValidEntry, ctx: InstallContext): Promise<void>;
  /**
   * What differs between a ready ledger row and what is installed (a line of `resources status`), null when
   * nothing does; undefined when the row's objects are the kind's partition tables, which resourceDrift checks.
   */
  drift?(row: LedgerRow, db: MetadataQueries): Promise<string | null | undefined>;
  /** Drops the objects of a retired ledger row past its prune time; returns what it dropped. */
  drop(row: LedgerRow, ctx: { readonly db: MetadataQueries; readonly store: ObjectStore }): Promise<string>;
}

const installers = new Map<ResourceKind, ResourceInstaller>([
  ['index', partitionStatsInstaller()],
  ['column', storedColumnInstaller()],
  ['projection', projectionInstaller()],
]);
/** Installers registered for one server (by its metadata handle): a process may run several servers. */
const scopedInstallers = new WeakMap<object, Map<ResourceKind, ResourceInstaller>>();

/**
 * Registers the installer of a kind (replacing an earlier one of the same kind): for every
 * publication, or with `scope` (a server's metadata handle) for the publications that server runs.
 */
export function registerInstaller(kind: ResourceKind, installer: ResourceInstaller, scope?: object): void {
  if (scope === undefined) {
    installers.set(kind, installer);
    return;
  }
  const own = scopedInstallers.get(scope) ?? new Map<ResourceKind, ResourceInstaller>();
  own.set(kind, installer);
  scopedInstallers.set(scope, own);
}

/** The installer of a kind for a server (its own first), if one is registered. */
export function installerOf(kind: string, scope?: object): ResourceInstaller | undefined {
  return (scope && scopedInstallers.get(scope)?.get(kind as ResourceKind)) ?? installers.get(kind as ResourceKind);
}
