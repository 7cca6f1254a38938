// A publication, run by the server that receives it (database-resources.md, Installing): plan,
// rights, install and backfill, serve, retire and converge; the namespace lock held throughout
// each step, the ledger recording progress so an interrupted publication resumes.
import type { ObjectStore } from '../lakehouse/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import type { ResourceEntry } from './declarations.js';
import { tableResolver, type ServerViewSet } from './catalog.js';
import { resourcesErrors } from './errors.js';
import { ExpressionAnalyzer } from './expressions.js';
import { publicationOf, publishedTexts } from './files.js';
import { installerOf, tablesMadeBy, type InstallContext, type WrittenObjects } from './installers.js';
import {
  entryHash,
  ledgerEntry,
  ledgerId,
  ledgerRows,
  ledgerSchema,
  markPruned,
  markServed,
  recordProgress,
  recordPublication,
  retireUndeclared,
  storedPublication,
  type LedgerRow,
} from './ledger.js';
import { takeLock } from './lock.js';
import { retireUnrecorded, sameObject, unrecordedObjects } from './unrecorded.js';
import { validateResources, type ValidEntry } from './validation.js';
import { diagnosticText } from './diagnostics.js';

/** What a publication reaches: the metadata, the object store and the server's view sets. */
export interface PublishContext {
  readonly db: MetadataQueries;
  readonly store: ObjectStore;
  viewSets(): Promise<ServerViewSet[]>;
  /** Runs a SELECT on the server's DuckDB (the lake's files, local or on S3). */
  lakeRows(sql: string): Promise<unknown[][]>;
  /** Rewrites a partition file with the set's stored columns (see InstallContext). */
  rewritePartition?(viewSet: string, filePath: string): Promise<boolean>;
  /** MICROMEGAS_RETENTION_DAYS: how far back, by insert time, the lake keeps partitions. */
  readonly retentionDays: number;
}

/** One planned step for an entry. */
export interface PlannedEntry {
  readonly entry: ValidEntry;
  /** `install` (or resume), `installed` (ready, checked again), `satisfied` (an existing column), `omitted`. */
  readonly action: 'install' | 'installed' | 'satisfied' | 'omitted';
  readonly reason: string | null;
}

/** `plan` prints what would run; `install` installs and backfills; `serve` serves, retires and finishes async entries. */
export type PublishStep = 'plan' | 'install' | 'serve';

/** The files of a publication as the CLI sends them: `{"files": {"<path>": "<text>"}}`. */
export function publicationFiles(json: string): Map<string, string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw resourcesErrors.error('RESOURCES_INVALID', `the publication is not JSON: ${(error as Error).message}`);
  }
  const files = (parsed as { files?: unknown } | null)?.files;
  if (typeof files !== 'object' || files === null || Object.values(files).some((t) => typeof t !== 'string'))
    throw resourcesErrors.error('RESOURCES_INVALID', 'the publication must be {"files": {"<path>": "<text>", …}}');
  return new Map(Object.entries(files as Record<string, string>));
}

/** `{"revision": <id>}` names a stored publication, `{"revision": null}` the served head; undefined otherwise. */
function storedRevision(json: string): number | null | undefined {
  try {
    const parsed = JSON.parse(json) as { revision?: unknown };
    if (parsed && typeof parsed === 'object' && 'revision' in parsed) {
      return typeof parsed.revision === 'number' ? parsed.revision : null;
    }
  } catch {
    // publicationFiles reports what is wrong with it.
  }
  return undefined;
}

/** Validates the files against the server's view sets; throws RESOURCES_INVALID listing every error. */
export async function validEntries(
  ctx: Pick<PublishContext, 'viewSets'>,
  texts: ReadonlyMap<string, string>,
): Promise<{ entries: ValidEntry[]; warnings: string[] }> {
  const folder = publicationOf('', texts);
  const analyzer = await ExpressionAnalyzer.open();
  try {
    const result = await validateResources(
      folder.resources,
      tableResolver(await ctx.viewSets(), folder.views),
      analyzer,
    );
    const diagnostics = [...folder.diagnostics, ...result.diagnostics];
    const errors = diagnostics.filter((d) => d.severity === 'error');
    if (errors.length > 0) {
      throw resourcesErrors.error(
        'RESOURCES_INVALID',
        `the resources files have ${errors.length} error(s): ${errors.map(diagnosticText).join('; ')}`,
      );
    }
    return { entries: [...result.entries], warnings: diagnostics.map(diagnosticText) };
  } finally {
    analyzer.close();
  }
}

/**
 * The plan: unsupported entries (validation's warnings, kinds this server installs no objects for)
 * are omitted, and so is every entry that refers to an omitted one.
 */
export async function planEntries(
  entries: readonly ValidEntry[],
  ledger: readonly LedgerRow[],
  /** The server's metadata handle, which its own installers are registered under. */
  scope?: object,
): Promise<PlannedEntry[]> {
  const ready = new Set(ledger.filter((r) => r.state === 'ready' && r.prunedAt === null).map(ledgerId));
  const omitted = new Map<string, string>();
  /** Entries that need nothing installed, with why: an existing column computes it, or the database keeps it. */
  const satisfied = new Map<string, string>();
  const id = (e: ValidEntry): string => `${e.file}\u0000${e.key}`;
  for (const entry of entries) {
    const installer = installerOf(entry.kind, scope);
    if (entry.kind === 'column' && entry.satisfiedBy !== null)
      satisfied.set(id(entry), `the column ${entry.satisfiedBy} computes it`);
    const reason =
      entry.unsupported ??
      (satisfied.has(id(entry))
        ? null
        : !installer
          ? `this server installs no ${entry.kind} entries`
          : ((await installer.unsupported?.(entry, entries)) ?? null));
    if (reason !== null) omitted.set(id(entry), reason);
    else if (!satisfied.has(id(entry))) {
      const native = (await installer?.satisfied?.(entry)) ?? null;
      if (native !== null) satisfied.set(id(entry), native);
    }
  }
  // An entry reading an omitted one (a column entry an index sorts by, the rollup it is computed from) goes too.
  for (let changed = true; changed;) {
    changed = false;
    for (const entry of entries) {
      if (omitted.has(id(entry))) continue;
      const sameFile = (key: string) => entries.find((e) => e.file === entry.file && e.key === key);
      const omittedRef = references(entry).find((key) => {
        const target = sameFile(key);
        return target !== undefined && omitted.has(id(target));
      });
      if (omittedRef !== undefined) {
        omitted.set(id(entry), `it refers to '${omittedRef}', which is omitted`);
        changed = true;
      }
    }
  }
  return inReferenceOrder(entries).map((entry) => {
    const reason = omitted.get(id(entry));
    if (reason !== undefined) return { entry, action: 'omitted', reason };
    const why = satisfied.get(id(entry));
    if (why !== undefined) return { entry, action: 'satisfied', reason: why };
    return { entry, action: ready.has(entryLedgerId(entry)) ? 'installed' : 'install', reason: null };
  });
}

/** The entries with each one after the entries of its file it refers to (a rollup after its `from`). */
function inReferenceOrder(entries: readonly ValidEntry[]): ValidEntry[] {
  const ordered: ValidEntry[] = [];
  const visit = (entry: ValidEntry, path: ReadonlySet<ValidEntry>): void => {
    if (ordered.includes(entry) || path.has(entry)) return;
    for (const key of references(entry)) {
      const target = entries.find((e) => e.file === entry.file && e.key === key);
      if (target) visit(target, new Set([...path, entry]));
    }
    ordered.push(entry);
  };
  for (const entry of entries) visit(entry, new Set());
  return ordered;
}

/** An entry a plan omits, and why. */
export interface Omission {
  readonly file: string;
  readonly entryKey: string;
  readonly kind: string;
  readonly physicalTable: string;
  readonly reason: string;
}

/**
 * The entries of a publication's files that this server's plan omits, and why (`resource_omissions`): what a
 * publish would warn of. They depend on the files, the view sets' definitions and the installers alone (no
 * ledger, no served revision), so any key may ask: `orrery resources validate` reports them with any key.
 */
export async function planOmissions(
  ctx: Pick<PublishContext, 'viewSets'>,
  filesJson: string,
  scope: object,
): Promise<Omission[]> {
  const { entries } = await validEntries(ctx, publishedTexts(publicationFiles(filesJson)));
  return (await planEntries(entries, [], scope))
    .filter((p) => p.action === 'omitted')
    .map(({ entry, reason }) => ({
      file: entry.file,
      entryKey: entry.key,
      kind: entry.kind,
      physicalTable: entry.physical,
      reason: reason!,
    }));
}

/**
 * The view sets a publication's entries name (their `table`, the view set after `#`), lower case: what a deny
 * rule sees `resource_omissions(publication)` read, as it sees `view_instance`'s view set. These are the entries
 * planOmissions validates; a publication that is not one names none, and planOmissions refuses it.
 */
export function publicationTables(filesJson: string): string[] {
  let texts: Map<string, string>;
  try {
    texts = publishedTexts(publicationFiles(filesJson));
  } catch {
    return [];
  }
  return publicationOf('', texts).resources.flatMap((file) =>
    file.entries.map((entry) => entry.table.slice(entry.table.indexOf('#') + 1).toLowerCase()),
  );
}

/** The ledger ids (`kind/table/key/hash`) of the entries a plan keeps. */
function declaredIds(plan: readonly PlannedEntry[]): Set<string> {
  return new Set(plan.filter((p) => p.action !== 'omitted').map((p) => entryLedgerId(p.entry)));
}

const entryLedgerId = (entry: ValidEntry): string =>
  ledgerId({ kind: entry.kind, physicalTable: entry.physical, entryKey: entry.key, hash: entryHash(entry) });

/** The names an entry reads that may be other entries of its file. */
function references(entry: ValidEntry): string[] {
  switch (entry.kind) {
    case 'column':
      return [];
    case 'index':
      return [entry.column];
    case 'projection':
      return [...entry.orderBy, ...(entry.columns ?? [])];
    case 'rollup':
      return [...entry.dimensions, ...(entry.from === null ? [] : [entry.from])];
  }
}

const describeEntry = (e: ValidEntry): string =>
  `${e.kind} ${e.key} on ${e.physical}${e.kind === 'column' && e.storedType !== null ? ` (${e.storedName} ${e.storedType})` : ''}`;

/** The plan as lines. */
export function planLines(plan: readonly PlannedEntry[]): string[] {
  return plan.map(({ entry, action, reason }) => {
    const where = `${entry.file}: ${entry.key}`;
    switch (action) {
      case 'omitted':
        return `warning: omitted ${describeEntry(entry)} (${where}): ${reason}`;
      case 'satisfied':
        return `satisfied ${describeEntry(entry)}: ${reason}`;
      case 'installed':
        return `installed ${describeEntry(entry)}: ready; checked again for drift`;
      case 'install':
        return `install ${describeEntry(entry)}${entry.async ? ' (async: finished after serving)' : ''}`;
    }
  });
}

/**
 * The tables every publication and prune writes: the ledger's own (ledgerSchema), the partitions' (a stored column's
 * backfill registers the files it rewrites) and the deletion queue (the files it replaces, a text index's or a
 * projection's copies that a backfill replaces or a prune drops).
 */
const writtenTables = [...tablesMadeBy(ledgerSchema), 'lakehouse_partitions', 'temporary_files'];

/**
 * The rights installing needs, each missing one listed; nothing is installed when one is. Asked before the lock is
 * taken or anything recorded (both write the ledger's tables, which may be missing these very rights). A table not
 * made yet is made by the publication (ensureLedger), so it needs CREATE on the schema alone. The installers of
 * installers of the publication's `entries` add what those write: a rollup entry the rollups' catalog and DuckLake's,
 * an index entry on a series table DuckLake's.
 */
export async function missingRights(
  ctx: Pick<PublishContext, 'db' | 'store'>,
  entries: readonly ResourceEntry[],
): Promise<string[]> {
  const missing: string[] = [];
  const own: WrittenObjects[] = [];
  for (const kind of new Set(entries.map((e) => e.kind))) {
    const writes = await installerOf(kind, ctx.db)?.writes?.(
      ctx.db,
      entries.filter((e) => e.kind === kind),
    );
    if (writes) own.push(writes);
  }
  const tables = [...new Set([...writtenTables, ...own.flatMap((w) => w.tables)])];
  const { rows } = await ctx.db.query<{ t: string; p: string; ok: boolean }>(
    `SELECT t, p, coalesce(has_table_privilege(to_regclass(t)::oid, p), true) AS ok
       FROM unnest($1::text[]) WITH ORDINALITY AS tables(t, i),
            unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) WITH ORDINALITY AS rights(p, j)
      ORDER BY i, j`,
    [tables],
  );
  for (const row of rows) if (!row.ok) missing.push(`${row.p} on table ${row.t} (Postgres)`);
  const schema = await ctx.db.query<{ ok: boolean; s: string }>(
    `SELECT current_schema() AS s, has_schema_privilege(current_schema(), 'CREATE') AS ok`,
  );
  if (!schema.rows[0].ok) missing.push(`CREATE on schema ${schema.rows[0].s} (Postgres)`);
  // Other schemas: USAGE for the tables named in them (a table right is no use without it), CREATE where tables are made.
  const makes = new Set(own.flatMap((w) => w.schemas));
  const named = new Set([...makes, ...tables.filter((t) => t.includes('.')).map((t) => t.slice(0, t.indexOf('.')))]);
  const others = await ctx.db.query<{ s: string; p: string; ok: boolean }>(
    `SELECT s, p, coalesce(has_schema_privilege(to_regnamespace(s)::oid, p), true) AS ok
       FROM unnest($1::text[], $2::boolean[]) AS schemas(s, creates),
            unnest(ARRAY['USAGE', 'CREATE']) WITH ORDINALITY AS rights(p, j)
      WHERE p = 'USAGE' OR creates ORDER BY s, j`,
    [[...named], [...named].map((s) => makes.has(s))],
  );
  for (const row of others.rows) if (!row.ok) missing.push(`${row.p} on schema ${row.s} (Postgres)`);
  const probe = `resources/.rights-probe-${process.pid}-${Date.now()}`;
  try {
    await ctx.store.put(probe, new Uint8Array([1]));
    await ctx.store.delete(probe);
  } catch (error) {
    missing.push(`write access to the object store (${(error as Error).message.split('\n')[0]})`);
  }
  return missing;
}

/**
 * Runs one step of a publication; yields progress lines as it goes. With `lockToken` (the CLI's, the same for
 * its install and serve steps), a completed install step hands the lock over to the serve step (see takeLock).
 */
export async function* publishResources(
  ctx: PublishContext,
  filesJson: string,
  step: PublishStep,
  caller: string,
  lockToken?: string,
): AsyncGenerator<string> {
  const stored = storedRevision(filesJson);
  if (stored !== undefined) {
    if (step !== 'plan') throw resourcesErrors.error('RESOURCES_INVALID', `a stored publication can only be planned`);
    const publication = await storedPublication(ctx.db, stored);
    if (!publication)
      throw resourcesErrors.error(
        'RESOURCES_INVALID',
        stored === null ? 'no publication has been served yet' : `there is no publication ${stored}`,
      );
    yield `publication ${publication.id}${publication.servedAt ? '' : ' (never served)'}:`;
    yield* dryRun(ctx, publication.files);
    return;
  }
  const texts = publishedTexts(publicationFiles(filesJson));
  if (step === 'plan') {
    yield* dryRun(ctx, texts);
    return;
  }
  const missing = await missingRights(
    ctx,
    publicationOf('', texts).resources.flatMap((file) => file.entries),
  );
  if (missing.length > 0) {
    throw resourcesErrors.error('RESOURCES_RIGHTS_MISSING', `installing needs: ${missing.join('; ')}`);
  }
  const lock = await takeLock(ctx.db, `publish (${step}) by ${caller}`, lockToken);
  let installed = false;
  try {
    const { entries, warnings } = await validEntries(ctx, texts);
    for (const warning of warnings) yield warning;
    const publication = await recordPublication(ctx.db, texts, caller);
    yield publication.created
      ? `publication ${publication.id} recorded (content ${publication.contentHash.slice(0, 12)})`
      : `no file changes: publication ${publication.id} again; installing what is missing and re-pointing names`;
    const plan = await planEntries(entries, await ledgerRows(ctx.db), ctx.db);
    for (const line of planLines(plan)) yield line;
    const active = plan.filter((p) => p.action === 'install' || p.action === 'installed');
    if (step === 'install') {
      for (const { entry } of active.filter((p) => !p.entry.async))
        yield* installEntry(ctx, entry, entries, publication.id);
      yield `installed: ${active.filter((p) => !p.entry.async).length} entr(ies) ready; serve next`;
      installed = true;
      return;
    }
    for (const { entry } of active) {
      const installer = installerOf(entry.kind, ctx.db)!;
      if (installer.serve) await installer.serve(entry, await contextFor(ctx, entry, entries, publication.id));
    }
    await markServed(ctx.db, publication.id);
    yield `served publication ${publication.id}`;
    const declared = declaredIds(plan);
    const { retired, restored } = await retireUndeclared(ctx.db, declared);
    for (const row of retired)
      yield `retired ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash}) for 7 days`;
    for (const row of restored)
      yield `declared again: ${row.kind} ${row.entryKey} on ${row.physicalTable}; retirement cancelled`;
    for (const { entry } of active.filter((p) => p.entry.async))
      yield* installEntry(ctx, entry, entries, publication.id);
  } finally {
    await (installed && lockToken !== undefined ? lock.handOver() : lock.release());
  }
}

async function contextFor(
  ctx: PublishContext,
  entry: ValidEntry,
  entries: readonly ValidEntry[],
  publicationId: number,
): Promise<InstallContext> {
  const row = await ledgerEntry(ctx.db, entry, publicationId);
  return {
    db: ctx.db,
    store: ctx.store,
    entries,
    row,
    // The bound housekeeping retires partitions by (retirePartitionsOlderThan).
    retainedFrom: new Date(Date.now() - Math.floor(ctx.retentionDays) * 86_400_000),
    lakeRows: (sql) => ctx.lakeRows(sql),
    rewritePartition: ctx.rewritePartition && ((viewSet, filePath) => ctx.rewritePartition!(viewSet, filePath)),
    progress: (update) => recordProgress(ctx.db, row, update),
  };
}

async function* installEntry(
  ctx: PublishContext,
  entry: ValidEntry,
  entries: readonly ValidEntry[],
  publicationId: number,
): AsyncGenerator<string> {
  const own = await contextFor(ctx, entry, entries, publicationId);
  // What the installer last noted of this run (the partitions past retention it left out) stays once ready.
  let note: string | null = null;
  const installCtx: InstallContext = {
    ...own,
    progress: (update) => {
      if (update.detail !== undefined) note = update.detail;
      return own.progress(update);
    },
  };
  try {
    yield* installerOf(entry.kind, ctx.db)!.install(entry, installCtx);
  } catch (error) {
    await recordProgress(ctx.db, installCtx.row, { detail: (error as Error).message });
    throw resourcesErrors.error(
      'RESOURCES_INSTALL_FAILED',
      `installing ${describeEntry(entry)} failed: ${(error as Error).message}; run orrery publish again to resume`,
      { cause: error },
    );
  }
  await recordProgress(ctx.db, installCtx.row, { state: 'ready', detail: note });
  yield `ready ${describeEntry(entry)}`;
}

/** `publish --dry-run` / `resources plan`: the file changes against the served head and the steps; runs nothing. */
async function* dryRun(ctx: PublishContext, texts: ReadonlyMap<string, string>): AsyncGenerator<string> {
  const head = await storedPublication(ctx.db, null);
  const before = head?.files ?? new Map<string, string>();
  const changes = [
    ...[...texts.keys()].filter((p) => !before.has(p)).map((p) => `file added: ${p}`),
    ...[...texts.keys()]
      .filter((p) => before.has(p) && before.get(p) !== texts.get(p))
      .map((p) => `file changed: ${p}`),
    ...[...before.keys()].filter((p) => !texts.has(p)).map((p) => `file removed: ${p}`),
  ];
  yield head ? `against served publication ${head.id}:` : 'no publication served yet:';
  if (changes.length === 0) yield 'no file changes';
  for (const change of changes) yield change;
  const { entries, warnings } = await validEntries(ctx, texts);
  for (const warning of warnings) yield warning;
  const ledger = await ledgerRows(ctx.db);
  const plan = await planEntries(entries, ledger, ctx.db);
  for (const line of planLines(plan)) yield line;
  const declared = declaredIds(plan);
  for (const row of ledger.filter((r) => r.prunedAt === null && r.retiredAt === null && !declared.has(ledgerId(r))))
    yield `retire ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash}) for 7 days`;
}

/**
 * `resources prune`: drops retired objects past their prune time (or lists them with dryRun). The rights their
 * drops need (their installers' `writes`) are checked first, as a publication's are: a role lacking one fails
 * listing each with nothing dropped, never partway through.
 */
export async function* pruneResources(ctx: PublishContext, dryRun: boolean, caller: string): AsyncGenerator<string> {
  const now = Date.now();
  if (!dryRun) {
    // Rows retired by this prune (below) are kept seven days: those due now are all it drops.
    const due = (await ledgerRows(ctx.db)).filter(
      (r) => r.retiredAt !== null && r.prunedAt === null && r.pruneAfter!.getTime() <= now,
    );
    const missing = await missingRights(
      ctx,
      due.map((r) => r.declaration),
    );
    if (missing.length > 0)
      throw resourcesErrors.error('RESOURCES_RIGHTS_MISSING', `pruning needs: ${missing.join('; ')}`);
  }
  const lock = dryRun ? null : await takeLock(ctx.db, `prune by ${caller}`);
  try {
    const head = await storedPublication(ctx.db, null);
    const headEntries = head ? (await validEntries(ctx, head.files)).entries : [];
    if (head && !dryRun) {
      // What the served head no longer declares is retired first, as a publication would.
      const declared = declaredIds(await planEntries(headEntries, await ledgerRows(ctx.db), ctx.db));
      for (const row of (await retireUndeclared(ctx.db, declared)).retired)
        yield `retired ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash}) for 7 days`;
    }
    // Objects no ledger row records are retired too, unless the head declares them.
    for (const object of await unrecordedObjects(ctx.db)) {
      const what = `${object.kind} ${object.entryKey} on ${object.physicalTable} (${object.column ?? object.hash})`;
      const declared = headEntries.some(
        (e) =>
          e.kind === object.kind &&
          e.physical === object.physicalTable &&
          (e.kind === 'column' ? e.storedName === object.column : entryHash(e) === object.hash),
      );
      if (declared) yield `unrecorded ${what}: declared by the served publication, which a publish records again`;
      else if (dryRun) yield `would retire unrecorded ${what} for 7 days`;
      else {
        await retireUnrecorded(ctx.db, object);
        yield `retired unrecorded ${what} for 7 days`;
      }
    }
    // Dependents first: a rollup is dropped before the finer one it is computed from.
    const retired = (await ledgerRows(ctx.db)).filter((r) => r.retiredAt !== null && r.prunedAt === null);
    const rows = inReferenceOrder(retired.map((r) => r.declaration))
      .reverse()
      .map((declaration) => retired.find((r) => r.declaration === declaration)!);
    let dropped = 0;
    for (const row of rows) {
      if (row.pruneAfter!.getTime() > now) {
        yield `kept ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash}): retired until ${row.pruneAfter!.toISOString()}`;
        continue;
      }
      if (dryRun) {
        yield `would drop ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash})`;
        continue;
      }
      // A retired row's object that a live row records again (declared anew) is not dropped.
      const live = (await ledgerRows(ctx.db)).find((r) => r.retiredAt === null && sameObject(r, row));
      if (live) {
        await markPruned(ctx.db, row);
        yield `kept ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash}): recorded by ${live.entryKey} (${live.hash})`;
        continue;
      }
      const installer = installerOf(row.kind, ctx.db);
      const what = installer ? await installer.drop(row, { db: ctx.db, store: ctx.store }) : 'nothing installed';
      await markPruned(ctx.db, row);
      dropped++;
      yield `dropped ${row.kind} ${row.entryKey} on ${row.physicalTable} (${row.hash}): ${what}`;
    }
    yield dryRun ? `dry run: nothing dropped` : `pruned ${dropped} retired resource(s)`;
  } finally {
    await lock?.release();
  }
}
