import type { DuckDBEngine } from '../engine/index.js';
import {
  entryHash,
  tablesMadeBy,
  type InstallContext,
  type ResourceInstaller,
  type ValidEntry,
} from '../resources/index.js';
import { lakeCatalogWrites } from '../tables/index.js';
import { entryShape, selectListFrom, type EntryShape } from './entry-shape.js';
import { catalogSchemaSql, type Rollups } from './rollups.js';

// The installer of a resources file's rollup entries (database-resources.md, rollup; issue 14):
// a target rollup `rollup_<table>_<key>__<hash8>` per stored shape, made with its watermark at the
// cutover and nothing older materialized, then backfilled one day at a time from newest to oldest
// within its retention, each day recorded in the ledger (a publication that dies midway resumes at
// the day after the last one recorded); at the serve step the stable view `rollup_<table>_<key>`
// is pointed at it. A rollup with `from` is computed from the finer entry's target. Over a view set
// the target is made as create_rollup makes one (the set's invalidations keep it exact) and its first
// refresh is the backfill: every bucket before its watermark, from the set's partitions, which hold
// the lake's retention and no more.

type RollupValidEntry = ValidEntry & { readonly kind: 'rollup' };

/** The names an entry installs as: the stable view and the target of its shape. */
export function rollupNames(entry: RollupValidEntry, hash: string): { view: string; target: string } {
  const view = `rollup_${entry.physical}_${entry.key}`.toLowerCase().replace(/-/g, '_');
  return { view, target: `${view}__${hash}` };
}

/** A grain of seconds (dividing a day) as an interval DuckDB's calendar reads: days, hours, minutes or seconds. */
function grainInterval(seconds: number): string {
  for (const [unit, size] of [
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ] as const)
    if (seconds % size === 0) return `${seconds / size} ${unit}${seconds / size === 1 ? '' : 's'}`;
  return `${seconds} seconds`;
}

/** A timestamp as DuckDB writes it (UTC), as a Date. */
const dateOf = (text: string): Date => new Date(`${text.replace(' ', 'T')}Z`);

export function rollupInstaller(rollups: Rollups, engine: DuckDBEngine): ResourceInstaller {
  const shapeOf = async (entry: RollupValidEntry): Promise<EntryShape | string> =>
    entryShape(engine, entry, await rollups.aggregateNames());

  /** The target of an entry, created (backfilled later) when missing; answers a line saying what was made, or null. */
  async function ensureTarget(entry: RollupValidEntry, entries: readonly ValidEntry[]): Promise<string | null> {
    const { target } = rollupNames(entry, entryHash(entry));
    const definitions = await rollups.definitions();
    let made: string | null = null;
    if (!definitions.has(target)) {
      const shape = await shapeOf(entry);
      if (typeof shape === 'string') throw new Error(shape);
      let source = entry.physical;
      let selectList = shape.selectList;
      let note = '';
      const finer = entries.find(
        (e): e is RollupValidEntry => e.kind === 'rollup' && e.file === entry.file && e.key === entry.from,
      );
      if (finer) {
        const finerShape = await shapeOf(finer);
        const merged =
          typeof finerShape === 'string'
            ? { problem: finerShape }
            : await selectListFrom(engine, shape, finerShape, entry.dimensions);
        if ('selectList' in merged) {
          source = rollupNames(finer, entryHash(finer)).target;
          selectList = merged.selectList;
        } else note = `; computed from ${entry.physical} itself, not from '${finer.key}': ${merged.problem}`;
      }
      const viewSet = (await rollups.viewSetBase(entry.physical)) !== undefined;
      await rollups.create(
        {
          name: target,
          source,
          bucket: grainInterval(entry.grainSeconds),
          selectList,
          groupBy: shape.groupBy,
          bucketWidth: null,
        },
        { backfilled: !viewSet },
      );
      made = `created rollup ${target} over ${source} (grain ${entry.grain})${note}`;
    }
    const retention = entry.retentionSeconds === null ? null : grainInterval(entry.retentionSeconds);
    const kept = (await rollups.definitions()).get(target)?.retention ?? null;
    if (retention !== null || kept !== null) await rollups.setRetention(target, retention);
    return made;
  }

  async function* install(entry: ValidEntry, ctx: InstallContext): AsyncGenerator<string> {
    if (entry.kind !== 'rollup') return;
    const made = await ensureTarget(entry, ctx.entries);
    if (made) yield made;
    const { target } = rollupNames(entry, entryHash(entry));
    const cutover = ctx.row.cutover ?? new Date();
    const set = await rollups.viewSetBase(entry.physical);
    if (set) {
      // One refresh, idempotent: a publication that died during it refreshes again. A `from` target reads the finer one through its never-stale view, refreshed or not.
      yield `backfill rollup ${entry.key} on ${entry.physical} into ${target}: one refresh over the view set's partitions, from ${set.retainedFrom.toISOString()} (the lake's retention)${ctx.row.backfilledBegin ? ' (resumed)' : ''}`;
      const { watermark } = await rollups.refresh(target);
      await ctx.progress({ backfilledBegin: set.retainedFrom, backfilledEnd: cutover });
      yield `  ${entry.key}: refreshed, materialized up to ${watermark ?? 'no bucket yet'}`;
      return;
    }
    const held = (await rollups.definitions()).get(target)?.coveredFrom ?? null;
    if (held === null) {
      if (ctx.row.backfilledBegin === null) await ctx.progress({ backfilledBegin: cutover, backfilledEnd: cutover });
      yield `backfill rollup ${entry.key} on ${entry.physical}: every bucket is held`;
      return;
    }
    yield `backfill rollup ${entry.key} on ${entry.physical} into ${target}: held from ${held}; older days one at a time, newest first${ctx.row.backfilledBegin ? ' (resumed)' : ''}`;
    const started = Date.now();
    for (let days = 1; ; days++) {
      const step = await rollups.backfillStep(target);
      if (step.from === null) break;
      await ctx.progress({ backfilledBegin: dateOf(step.from), backfilledEnd: cutover });
      const left = ((Date.now() - started) / days) * step.daysLeft;
      yield `  ${entry.key}: ${step.from.slice(0, 10)} done, ${step.daysLeft} day(s) left, about ${Math.ceil(left / 1000)} s left`;
      if (step.daysLeft === 0) break;
    }
  }

  return {
    // The rollups' catalog, and DuckLake's (a target is a table of the lake: its catalog rows, its rows inlined in
    // tables DuckLake makes in its schema).
    async writes(db) {
      const lake = await lakeCatalogWrites(db);
      return { tables: [...tablesMadeBy(catalogSchemaSql), ...lake.tables], schemas: lake.schemas };
    },
    async unsupported(entry) {
      if (entry.kind !== 'rollup') return null;
      const time = await rollups.timeKind(entry.physical);
      if (time === null) {
        const set = await rollups.viewSetBase(entry.physical);
        if (!set) return `${entry.physical} is neither a series table nor a view set`;
        if (set.problem !== null) return set.problem;
      }
      if (time === 'integer') return `${entry.physical} keeps integer time; a rollup entry's grain is a duration`;
      const { target } = rollupNames(entry, entryHash(entry));
      if (!/^[a-z_][a-z0-9_]{0,62}$/.test(target))
        return `its target name ${target} is not a rollup name (at most 63 letters, digits and _)`;
      const shape = await shapeOf(entry);
      return typeof shape === 'string' ? shape : null;
    },
    install,
    async serve(entry, ctx) {
      if (entry.kind !== 'rollup') return;
      // An async entry is served before its install step: its target is made now, backfilled after.
      await ensureTarget(entry, ctx.entries);
      const shape = await shapeOf(entry);
      if (typeof shape === 'string') throw new Error(shape);
      const { view, target } = rollupNames(entry, entryHash(entry));
      await rollups.pointAlias(view, target, shape.viewSelectList);
    },
    async drop(row) {
      const { target } = rollupNames(row.declaration as RollupValidEntry, row.hash);
      if (!(await rollups.definitions()).has(target)) return 'nothing installed';
      await rollups.drop(target);
      return `dropped rollup ${target}`;
    },
  };
}
