import { randomBytes } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import type { DuckDBEngine, EngineSession } from '../engine/index.js';
import { sqlErrors } from './errors.js';
import { type CallContext, type TransactionSupport } from '../flight/index.js';
import type { OrreryError } from '../errors/index.js';
import { tokenize } from '../sql-text/index.js';

/** Open transactions a server holds at most (each is a DuckDB connection). */
const maxOpen = 256;

/**
 * Flight SQL transactions: each is a DuckDB connection held between BeginTransaction and
 * EndTransaction, inside `BEGIN TRANSACTION`; statements that carry its id run on it. Only the
 * key that began one may use or end it. DuckLake commits all of it or none of it.
 */
export class Transactions implements TransactionSupport<Principal> {
  readonly level = 1 as const;
  private readonly open = new Map<string, { session: EngineSession; owner: string }>();
  private closed = false;

  constructor(private readonly engine: DuckDBEngine) {}

  async begin(ctx: CallContext<Principal>): Promise<Uint8Array> {
    if (this.closed) throw sqlErrors.error('SERVER_STOPPING', 'the server is shutting down');
    if (this.open.size >= maxOpen)
      throw sqlErrors.error('TOO_MANY_TRANSACTIONS', `too many open transactions (at most ${maxOpen})`);
    const session = await this.engine.openSession();
    try {
      await this.engine.execute('BEGIN TRANSACTION', { session });
    } catch (error) {
      session.close();
      throw error;
    }
    const id = randomBytes(16);
    this.open.set(id.toString('hex'), { session, owner: ctx.principal.name });
    return id;
  }

  async end(ctx: CallContext<Principal>, transactionId: Uint8Array, commit: boolean): Promise<void> {
    const key = Buffer.from(transactionId).toString('hex');
    const session = this.session(ctx, transactionId);
    this.open.delete(key);
    try {
      // A failed transaction is rolled back (its connection closed): its COMMIT says so rather than answer success.
      if (session.failure) {
        if (commit) throw session.failure;
        return;
      }
      await this.engine.execute(commit ? 'COMMIT' : 'ROLLBACK', { session });
    } finally {
      session.close();
    }
  }

  /** The session of a transaction the caller began; an unknown or foreign id is INVALID_ARGUMENT. */
  session(ctx: CallContext<Principal>, transactionId: Uint8Array): EngineSession {
    const entry = this.open.get(Buffer.from(transactionId).toString('hex'));
    if (!entry || entry.owner !== ctx.principal.name) {
      throw sqlErrors.error(
        'TRANSACTION_UNKNOWN',
        'unknown transaction id (it has ended, or was never begun by this key)',
      );
    }
    return entry.session;
  }

  /** Rolls back every open transaction (their connections close). Idempotent. */
  close(): void {
    this.closed = true;
    for (const { session } of this.open.values()) session.close();
    this.open.clear();
  }
}

/**
 * UNIMPLEMENTED for SAVEPOINT, ROLLBACK TO [SAVEPOINT] and RELEASE [SAVEPOINT] sent as SQL text
 * (DuckDB's parser has none of them, and would answer a bare syntax error); null for any other text.
 */
export function savepointRefusal(text: string): OrreryError | null {
  let words: string[];
  try {
    words = tokenize(text)
      .slice(0, 2)
      .map((t) => (t.kind === 'word' ? t.value.toLowerCase() : ''));
  } catch {
    return null;
  }
  const savepoint =
    words[0] === 'savepoint' || words[0] === 'release' || (words[0] === 'rollback' && words[1] === 'to');
  return savepoint
    ? sqlErrors.error(
        'SAVEPOINTS_UNSUPPORTED',
        'savepoints are not supported: DuckDB, which runs series tables and their transactions, has none; ' +
          'end the whole transaction instead (ROLLBACK, or EndTransaction with ROLLBACK)',
      )
    : null;
}
