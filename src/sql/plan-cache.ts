import { randomBytes } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import type { CallContext } from '../flight/index.js';

/**
 * Plans made at GetFlightInfo, kept for the DoGet that follows, so a statement is planned once
 * (its checks, deny rules, partition lookups and temporary views): the ticket carries the plan's
 * id beside the statement itself. A plan serves only a DoGet of the key that made it, for the
 * same text and the same per-query headers, once, within `ttlMs`; anything else (an unknown,
 * expired or foreign id, another server) plans the statement from the ticket's text as before.
 * Bounded: the oldest plans go first.
 */
export class PlanCache<T> {
  private readonly plans = new Map<string, { owner: string; statement: string; expires: number; plan: T }>();

  constructor(
    private readonly maxEntries = 1024,
    private readonly ttlMs = 60_000,
  ) {}

  /** Keeps a plan; returns its id for the ticket. */
  put(ctx: CallContext<Principal>, query: string, plan: T): Uint8Array {
    const id = randomBytes(16);
    const now = Date.now();
    for (const [key, entry] of this.plans) {
      if (this.plans.size < this.maxEntries && entry.expires > now) break;
      this.plans.delete(key);
    }
    this.plans.set(id.toString('hex'), {
      owner: ownerOf(ctx.principal),
      statement: statementKey(ctx, query),
      expires: now + this.ttlMs,
      plan,
    });
    return id;
  }

  /** The plan kept under `id`, when this caller made it for this statement and headers; forgotten once taken. */
  take(id: Uint8Array | undefined, ctx: CallContext<Principal>, query: string): T | undefined {
    if (!id || id.byteLength !== 16) return undefined;
    const key = Buffer.from(id).toString('hex');
    const entry = this.plans.get(key);
    if (!entry) return undefined;
    this.plans.delete(key);
    const usable =
      entry.expires > Date.now() &&
      entry.owner === ownerOf(ctx.principal) &&
      entry.statement === statementKey(ctx, query);
    return usable ? entry.plan : undefined;
  }
}

/** Who made a plan: what a plan's checks depended on about the key. */
function ownerOf(principal: Principal): string {
  return JSON.stringify([principal.name, principal.admin, principal.audiences]);
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
