// The namespace lock an installation holds (a publication or a prune): a row in Postgres naming its
// holder (host, pid, since). A holder renews it every 15 seconds; a crashed one stops renewing, and
// the lock expires within a minute, so the next installation takes it and resumes from the ledger.
// A publication runs in steps (install, then the CLI applies the views, then serve): the install step
// hands the lock over to the publication's token instead of releasing it, and the serve step presenting
// that token takes it back, so no other installation runs between the two (within the lease: a CLI that
// dies between them leaves the lock to expire).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { MetadataQueries } from '../metadata/index.js';
import { resourcesErrors } from './errors.js';
import { ensureLedger } from './ledger.js';

export const lockNamespace = 'orrery';
const leaseSeconds = 60;
const renewMs = 15_000;

/** A held lock; `release` and `handOver` are idempotent, and either ends the holding. */
export interface HeldLock {
  readonly token: string;
  release(): Promise<void>;
  /** Stops renewing but leaves the lock held for one more lease, for the next step presenting the same token. */
  handOver(): Promise<void>;
}

/**
 * Takes the namespace lock for `purpose`, or fails naming the holder. With `token`, also when that token
 * holds it (handed over by an earlier step of the same publication).
 */
export async function takeLock(db: MetadataQueries, purpose: string, token: string = randomUUID()): Promise<HeldLock> {
  await ensureLedger(db);
  const { rows } = await db.query(
    `INSERT INTO resource_locks (namespace, token, host, pid, purpose, since, expires_at)
     VALUES ($1, $2, $3, $4, $5, now(), now() + make_interval(secs => ${leaseSeconds}))
     ON CONFLICT (namespace) DO UPDATE SET token = EXCLUDED.token, host = EXCLUDED.host, pid = EXCLUDED.pid,
       purpose = EXCLUDED.purpose, since = EXCLUDED.since, expires_at = EXCLUDED.expires_at
     WHERE resource_locks.expires_at < now() OR resource_locks.token = EXCLUDED.token
     RETURNING token`,
    [lockNamespace, token, hostname(), process.pid, purpose],
  );
  if (rows.length === 0) {
    const holder = await db.query<{ host: string; pid: number; purpose: string; since: Date; expires_at: Date }>(
      'SELECT host, pid, purpose, since, expires_at FROM resource_locks WHERE namespace = $1',
      [lockNamespace],
    );
    const h = holder.rows[0];
    throw resourcesErrors.error(
      'RESOURCES_LOCKED',
      h
        ? `another installation holds the resources lock: ${h.purpose} on host ${h.host}, pid ${h.pid}, since ${h.since.toISOString()} (it expires at ${h.expires_at.toISOString()} unless renewed)`
        : 'another installation holds the resources lock; try again',
    );
  }
  const extend = async (): Promise<void> => {
    await db.query(
      `UPDATE resource_locks SET expires_at = now() + make_interval(secs => ${leaseSeconds}) WHERE namespace = $1 AND token = $2`,
      [lockNamespace, token],
    );
  };
  const renew = setInterval(() => {
    extend().catch(() => {});
  }, renewMs);
  renew.unref();
  let ended = false;
  const end = (): boolean => {
    const first = !ended;
    ended = true;
    clearInterval(renew);
    return first;
  };
  return {
    token,
    async release() {
      if (end())
        await db.query('DELETE FROM resource_locks WHERE namespace = $1 AND token = $2', [lockNamespace, token]);
    },
    async handOver() {
      if (end()) await extend();
    },
  };
}
