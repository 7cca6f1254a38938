import { randomFillSync } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import { followSignal } from '../calls/index.js';
import type { CallContext, CancelResult, PreparedStatementInfo } from '../flight/index.js';
import { sqlErrors } from './errors.js';

/**
 * Plans made at GetFlightInfo, kept for the DoGet that follows, so a statement is planned once
 * (its checks, deny rules, partition lookups and temporary views): the ticket carries the plan's
 * id beside the statement itself. A plan serves only a DoGet of the key that made it, for the
 * same text and the same per-query headers, once, within `ttlMs`; anything else (an unknown,
 * expired or foreign id, another server) plans the statement from the ticket's text as before.
 * Bounded: the oldest plans go first.
 *
 * The id is also what CancelFlightInfo names: a DoGet redeeming it registers here while it runs,
 * so the key that made it can stop it, and a plan cancelled before its DoGet never runs.
 */
export class PlanCache<T, A = PreparedStatementInfo> {
  private readonly plans = new Map<string, { owner: string; statement: string; expires: number; plan: T }>();
  /** DoGets running under an id: their owner and how to stop them. */
  private readonly running = new Map<string, Array<{ owner: string; controller: AbortController }>>();
  /** Ids cancelled before their DoGet, with when that is forgotten. */
  private readonly cancelled = new Map<string, { owner: string; expires: number }>();
  /** Plans kept by statement (owner, text, headers) rather than by id: see keep(). */
  private readonly byStatement = new Map<string, { expires: number; plan: T }>();
  /** What CreatePreparedStatement answered, by statement (owner, text, headers): see remember(). */
  private readonly described = new Map<string, { expires: number; under: string; answer: A }>();

  private readonly maxEntries: number;
  private readonly ttlMs: number;
  /** Called for a plan dropped without being used (expired, evicted, cancelled, refused to its taker). */
  private readonly dispose: (plan: T) => void;

  constructor(options: { maxEntries?: number; ttlMs?: number; dispose?: (plan: T) => void } = {}) {
    this.maxEntries = options.maxEntries ?? 256;
    this.ttlMs = options.ttlMs ?? 60_000;
    this.dispose = options.dispose ?? (() => {});
  }

  /** Keeps a plan; returns its id for the ticket. */
  put(ctx: CallContext<Principal>, query: string, plan: T): Uint8Array {
    const id = planId();
    const now = Date.now();
    for (const [key, entry] of this.plans) {
      if (this.plans.size < this.maxEntries && entry.expires > now) break;
      this.plans.delete(key);
      this.dispose(entry.plan);
    }
    this.plans.set(id.toString('hex'), {
      owner: ownerOf(ctx.principal),
      statement: statementKey(ctx, query),
      expires: now + this.ttlMs,
      plan,
    });
    return id;
  }

  /**
   * Keeps a plan for the next reuse() by the same key of the same statement with the same
   * headers (a CreatePreparedStatement's plan for the prepared statement's GetFlightInfo, which
   * names no id); one per statement, the newest.
   */
  keep(ctx: CallContext<Principal>, query: string, plan: T): void {
    const now = Date.now();
    for (const [key, entry] of this.byStatement) {
      if (this.byStatement.size < this.maxEntries && entry.expires > now) break;
      this.byStatement.delete(key);
      this.dispose(entry.plan);
    }
    const key = ownedStatementKey(ctx, query);
    const old = this.byStatement.get(key);
    if (old) this.dispose(old.plan);
    this.byStatement.delete(key);
    this.byStatement.set(key, { expires: now + this.ttlMs, plan });
  }

  /** The plan keep() kept for this caller's statement and headers, once; undefined when none is current. */
  reuse(ctx: CallContext<Principal>, query: string): T | undefined {
    const key = ownedStatementKey(ctx, query);
    const entry = this.byStatement.get(key);
    if (!entry) return undefined;
    this.byStatement.delete(key);
    if (entry.expires > Date.now()) return entry.plan;
    this.dispose(entry.plan);
    return undefined;
  }

  /**
   * Lets go of the plan keep() kept for this caller's statement and headers, if any (ClosePreparedStatement:
   * the prepared statement's GetFlightInfo will not come, and the plan holds a DuckDB connection until it expires).
   */
  drop(ctx: CallContext<Principal>, query: string): void {
    const key = ownedStatementKey(ctx, query);
    const entry = this.byStatement.get(key);
    if (!entry) return;
    this.byStatement.delete(key);
    this.dispose(entry.plan);
  }

  /**
   * Remembers what CreatePreparedStatement answered for this caller's statement and headers, so the same text
   * prepared again is answered without planning (the JDBC driver prepares every statement it runs). The answer
   * is Flight SQL's "best guess" of the schema: the prepared statement's GetFlightInfo plans the statement with
   * every check, and refreshes this answer with what it found. `under` is what the answer was described under
   * (the catalog, the view sets, what admins changed: see SqlService.describedUnder), read before planning.
   */
  remember(ctx: CallContext<Principal>, query: string, answer: A, under: string): void {
    this.describe(ownedStatementKey(ctx, query), answer, under);
  }

  /** What remember() kept for this caller's statement and headers, while current and described `under` the same; not taken: it serves again. */
  recall(ctx: CallContext<Principal>, query: string, under: string): A | undefined {
    const entry = this.described.get(ownedStatementKey(ctx, query));
    return entry && entry.expires > Date.now() && entry.under === under ? entry.answer : undefined;
  }

  /** remember() again, only for a statement remembered already (a prepared statement's GetFlightInfo planned it). */
  refresh(ctx: CallContext<Principal>, query: string, answer: A, under: string): void {
    const key = ownedStatementKey(ctx, query);
    if (this.described.has(key)) this.describe(key, answer, under);
  }

  /** Forgets what remember() kept: the statement failed its planning, so it is planned again when prepared. */
  forget(ctx: CallContext<Principal>, query: string): void {
    this.described.delete(ownedStatementKey(ctx, query));
  }

  private describe(key: string, answer: A, under: string): void {
    const now = Date.now();
    for (const [old, entry] of this.described) {
      if (this.described.size < this.maxEntries && entry.expires > now) break;
      this.described.delete(old);
    }
    this.described.delete(key);
    this.described.set(key, { expires: now + this.ttlMs, under, answer });
  }

  /**
   * The plan kept under `id`, when this caller made it for this statement and headers; forgotten
   * once taken. CANCELLED when the caller cancelled it first.
   */
  take(id: Uint8Array | undefined, ctx: CallContext<Principal>, query: string): T | undefined {
    const key = keyOf(id);
    if (!key) return undefined;
    const cancelled = this.cancelled.get(key);
    if (cancelled && cancelled.expires > Date.now() && cancelled.owner === ownerOf(ctx.principal))
      throw sqlErrors.error('STATEMENT_CANCELLED', 'query cancelled (CancelFlightInfo) before it ran');
    const entry = this.plans.get(key);
    if (!entry) return undefined;
    this.plans.delete(key);
    const usable =
      entry.expires > Date.now() &&
      entry.owner === ownerOf(ctx.principal) &&
      entry.statement === statementKey(ctx, query);
    if (usable) return entry.plan;
    this.dispose(entry.plan);
    return undefined;
  }

  /**
   * Registers a DoGet redeeming `id`: the signal aborts on the caller's cancel or when
   * CancelFlightInfo names the id; `end` when the statement is done.
   */
  redeem(id: Uint8Array | undefined, ctx: CallContext<Principal>): { signal: AbortSignal; end: () => void } {
    const key = keyOf(id);
    if (!key) return { signal: ctx.signal, end: () => {} };
    const { controller, unfollow } = followSignal(ctx.signal);
    const run = { owner: ownerOf(ctx.principal), controller };
    const runs = this.running.get(key) ?? [];
    this.running.set(key, [...runs, run]);
    const end = (): void => {
      unfollow();
      const left = (this.running.get(key) ?? []).filter((r) => r !== run);
      if (left.length > 0) this.running.set(key, left);
      else this.running.delete(key);
    };
    return { signal: controller.signal, end };
  }

  /** CancelFlightInfo of the caller's statement: stops it running, or keeps it from running. */
  cancel(id: Uint8Array | undefined, ctx: CallContext<Principal>): CancelResult {
    const key = keyOf(id);
    if (!key) return notCancellable;
    const owner = ownerOf(ctx.principal);
    const now = Date.now();
    const runs = (this.running.get(key) ?? []).filter((r) => r.owner === owner);
    for (const run of runs) run.controller.abort();
    const pending = this.plans.get(key);
    const mine = pending?.owner === owner && pending.expires > now;
    if (mine) {
      this.plans.delete(key);
      this.dispose(pending.plan);
    }
    if (runs.length === 0 && !mine) return this.cancelled.get(key)?.owner === owner ? cancelledStatus : notCancellable;
    for (const [old, entry] of this.cancelled) {
      if (this.cancelled.size < this.maxEntries && entry.expires > now) break;
      this.cancelled.delete(old);
    }
    this.cancelled.set(key, { owner, expires: now + this.ttlMs });
    return cancelledStatus;
  }
}

const cancelledStatus: CancelResult = 1;
const notCancellable: CancelResult = 3;

function keyOf(id: Uint8Array | undefined): string | undefined {
  return id && id.byteLength === 16 ? Buffer.from(id).toString('hex') : undefined;
}

/** Owner keys of the keyring's principals (each call names one of the same few objects). */
const owners = new WeakMap<Principal, string>();

/** Who made a plan: what a plan's checks depended on about the key. */
function ownerOf(principal: Principal): string {
  let owner = owners.get(principal);
  if (owner === undefined) {
    owner = JSON.stringify([principal.name, principal.admin, principal.audiences]);
    owners.set(principal, owner);
  }
  return owner;
}

function ownedStatementKey(ctx: CallContext<Principal>, query: string): string {
  return `${ownerOf(ctx.principal)}\u0000${statementKey(ctx, query)}`;
}

/** The statement and the headers its plan depended on (time range, dictionaries, the client named to deny rules). */
function statementKey(ctx: CallContext<Principal>, query: string): string {
  const { rangeBegin, rangeEnd, preserveDictionary } = ctx.options;
  return JSON.stringify([
    query,
    String(rangeBegin),
    String(rangeEnd),
    preserveDictionary,
    ctx.headers.get('x-client-type') ?? '',
  ]);
}

/** Random bytes for plan ids, drawn from the system's CSPRNG 256 ids at a time (one call per id cost ~10 µs per statement). */
const idPool = Buffer.alloc(16 * 256);
let idPoolAt = idPool.length;

/** A new plan id: 16 random bytes. */
function planId(): Buffer {
  if (idPoolAt === idPool.length) {
    randomFillSync(idPool);
    idPoolAt = 0;
  }
  idPoolAt += 16;
  return Buffer.from(idPool.subarray(idPoolAt - 16, idPoolAt));
}
