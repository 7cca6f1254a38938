import type { Principal } from '../auth/index.js';
import {
  engineErrors,
  queryShape,
  quoteIdentifier,
  type DuckDBEngine,
  type EngineSession,
  type MicrosecondTime,
  type QueryShape,
  type RunOptions,
} from '../engine/index.js';
import { clientGone, type LiveCall } from '../calls/index.js';
import type { OrreryError } from '../errors/index.js';
import type { Statement } from '../flight/index.js';
import {
  lakeTable,
  parseSeriesStatement,
  splitTopLevel,
  type SeriesTable,
  type SeriesTables,
} from '../tables/index.js';
import { sqlErrors } from './errors.js';
import { scopeOf } from './lakehouse-session.js';

/** A write to a series table, ready to run: on a transaction's session, or in a transaction of its own. */
export interface SeriesWrite {
  /** The statement as DuckDB runs it, when it is one statement (its `?` are the client's). */
  readonly sql?: string;
  /**
   * For an INSERT whose VALUES are all `?`: a query whose columns have the types of the columns the
   * parameters fill, in order (DuckDB cannot type a `?` in VALUES; JDBC binds by the type it is told).
   */
  readonly parameterTypes?: string;
  readonly setup: readonly string[];
  /** The series table whose rows it changes (its rollups' tails are made again once it commits: Rollups.prime). */
  readonly changes?: string;
  run(session: EngineSession | undefined, call: Live): Promise<number>;
}

/** The call a write runs for: its client's signal and the statement's deadline, which stop its DuckDB work. */
export type Live = Pick<RunOptions, 'signal' | 'deadline'>;

/**
 * The call as the commits under it see it (whileLive): gone once its client gave up (its signal aborted: cancelled,
 * or its deadline passed) or the statement's deadline passed, as the client is then told its call failed.
 */
export const liveCall = (call: Live): LiveCall => ({
  signal: call.signal,
  gone: () =>
    call.signal?.aborted
      ? sqlErrors.error('WRITE_CANCELLED', 'the client cancelled the call before its write committed')
      : call.deadline && Date.now() >= call.deadline.at
        ? engineErrors.error('QUERY_DEADLINE_EXCEEDED', call.deadline.message)
        : undefined,
});

const denied = (message: string): OrreryError => sqlErrors.error('SELECT_ONLY', `permission denied: ${message}`);

/** The temporary views through which a statement reads the series tables it names (all, when it names none in a way we can see). */
export function seriesReadSetup(
  tables: SeriesTables,
  all: ReadonlyMap<string, SeriesTable>,
  principal: Principal,
  shape?: QueryShape,
  /** The DuckLake snapshot the statement reads its rollups at, to read the tables there too. */
  snapshot?: bigint,
): string[] {
  return tables.readViews(namedTables(all, shape), scopeOf(principal), snapshot);
}

/** The series tables a statement names (every one when its shape is unknown). */
export const namedTables = (all: ReadonlyMap<string, SeriesTable>, shape?: QueryShape): SeriesTable[] =>
  shape ? [...all.values()].filter((t) => shape.relations.some((r) => r.name === t.name && !r.cte)) : [...all.values()];

/**
 * The TIMESTAMP and TIMESTAMPTZ columns of the series tables a statement names, by lower-case
 * name, for scanTimeBounds; a name with both types in different tables is left out.
 */
export function microsecondTimeColumns(
  all: ReadonlyMap<string, SeriesTable>,
  shape?: QueryShape,
): Map<string, MicrosecondTime> {
  const columns = new Map<string, MicrosecondTime | null>();
  for (const table of namedTables(all, shape)) {
    for (const { name, type } of table.columns) {
      if (type !== 'TIMESTAMP' && type !== 'TIMESTAMP WITH TIME ZONE') continue;
      const key = name.toLowerCase();
      columns.set(key, columns.has(key) && columns.get(key) !== type ? null : type);
    }
  }
  return new Map([...columns].filter((entry): entry is [string, MicrosecondTime] => entry[1] !== null));
}

/**
 * The plan of a statement that writes a series table, or null when the text is not one (a
 * CREATE TABLE without a time column and statements on other tables run as before).
 * `checkBody` applies the reader checks to an INSERT's SELECT for keys that are not admins.
 */
export async function planSeriesWrite(
  engine: DuckDBEngine,
  tables: SeriesTables,
  principal: Principal,
  statement: Statement,
  checkBody: (shape: QueryShape) => Promise<void>,
): Promise<SeriesWrite | null> {
  const parsed = parseSeriesStatement(statement.query);
  if (!parsed) return null;
  const all = await tables.list();
  const adminOnly = (): void => {
    if (!principal.admin) throw denied(`key '${principal.name}' may only run SELECT statements`);
  };
  if (parsed.kind === 'create') {
    adminOnly();
    const create = parsed;
    return {
      setup: [],
      run: async (session, call) => {
        if (await openTransactionless(engine, (own) => tables.create(create, own))) return 0;
        // No time column: no series table, but a scratch table in memory, as before series tables.
        return engine.execute(statement.query, { session, ...call, committedIfLive: true });
      },
    };
  }
  const table = all.get(parsed.table);
  if (!table) return null;
  const setup = seriesReadSetup(tables, all, principal);
  if (parsed.kind === 'alter') {
    adminOnly();
    const action = parsed.action;
    if (!/^\s*ADD\b/i.test(action)) await tables.checkDroppable(table.name, action.trim().replace(/\s+/g, ' '));
    return {
      setup,
      run: async () => (await openTransactionless(engine, (own) => tables.alter(table, action, own)), 0),
    };
  }
  if (parsed.kind !== 'insert') adminOnly();
  if (parsed.kind === 'drop') await tables.checkDroppable(table.name);
  let bodyWidth = 0;
  if (parsed.kind === 'insert') {
    if (!principal.admin) {
      const tree = await engine.parseSelect(parsed.body);
      if (!tree) throw denied(`key '${principal.name}' may insert VALUES or the rows of a SELECT only`);
      await checkBody(queryShape(tree));
    }
    bodyWidth = parsed.columns?.length ?? (await insertWidth(engine, parsed.body, setup));
  }
  const sql = tables.rewrite(
    parsed,
    table,
    { admin: principal.admin, audience: principal.audiences[0] ?? 'public' },
    bodyWidth,
  );
  const parameters = statement.parameters;
  let parameterTypes: string | undefined;
  if (parsed.kind === 'insert' && /^VALUES\s*(\(\s*\?(\s*,\s*\?)*\s*\)\s*,?\s*)+$/i.test(parsed.body)) {
    const named = parsed.columns ?? table.columns.slice(0, bodyWidth).map((c) => c.name);
    const rows = (parsed.body.match(/\?/g) ?? []).length / Math.max(1, named.length);
    const columns = Array.from({ length: rows }, () => named.map((c) => quoteIdentifier(c))).flat();
    parameterTypes = `SELECT ${columns.join(', ')} FROM ${lakeTable(table.name)} LIMIT 0`;
  }
  return {
    sql,
    parameterTypes,
    setup,
    changes: parsed.kind === 'drop' ? undefined : table.name,
    // Out of a client's transaction, in one of its own (several parameter rows, executemany and JDBC batches, are one
    // DuckLake snapshot), committed only while the call is live.
    run: (session, call) => {
      session?.written.add(table.name);
      return engine.execute(sql, { parameters, setup, session, ...call, committedIfLive: true });
    },
  };
}

/** Runs work on a connection of its own (DDL runs in a transaction of its own, apart from the client's). */
async function openTransactionless<T>(engine: DuckDBEngine, work: (session: EngineSession) => Promise<T>): Promise<T> {
  const session = await engine.openSession();
  try {
    return await work(session);
  } finally {
    session.close();
  }
}

/**
 * Runs work inside the client's transaction, or else inside one of its own, committed when the work succeeds
 * and the call is live (DuckDBEngine.transaction): a client that gave up was told the call failed, so nothing of it
 * may be kept. (A bulk ingest's upload that its client reset right behind its end is kept out before:
 * flight/upload-fate.)
 */
export async function inTransaction<T>(
  engine: DuckDBEngine,
  session: EngineSession | undefined,
  work: (session: EngineSession) => Promise<T>,
): Promise<T> {
  if (session) return inClientTransaction(session, () => work(session));
  return openTransactionless(engine, (own) => engine.transaction(own, () => work(own)));
}

/**
 * Runs a statement of a client's transaction. One whose client gave up fails the transaction (EngineSession.fail),
 * whether it wrote all or part of its changes: they cannot be taken out of it alone.
 */
export async function inClientTransaction<T>(session: EngineSession, work: () => Promise<T>): Promise<T> {
  try {
    const result = await work();
    const gone = clientGone();
    if (gone) throw gone;
    return result;
  } catch (error) {
    if (clientGone())
      session.fail('its client gave up on a statement of it (cancelled, or its deadline passed) while it ran');
    throw error;
  }
}

/**
 * How many columns an INSERT's body gives. DuckDB cannot say for a body with unbound `?` (it
 * reports one unknown column), so a VALUES body is counted from its first row instead.
 */
async function insertWidth(engine: DuckDBEngine, body: string, setup: readonly string[]): Promise<number> {
  const values = /^VALUES\s*\(/i.exec(body);
  if (values) {
    const rest = body.slice(values[0].length);
    let depth = 1;
    let end = 0;
    for (; end < rest.length && depth > 0; end++) {
      const c = rest[end];
      if (c === "'" || c === '"') end = rest.indexOf(c, end + 1);
      else if (c === '(') depth++;
      else if (c === ')') depth--;
      if (end < 0) break;
    }
    if (depth === 0) return splitTopLevel(rest.slice(0, end - 1)).length;
  }
  return (await engine.describe(`SELECT * FROM (${body})`, { setup })).schema.fields.length;
}
