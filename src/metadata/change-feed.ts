import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { MetadataLog } from './metadata-log.js';

/** The channel migration 4's trigger notifies, with the view set's name, when lakehouse_partitions changes. */
export const partitionsChannel = 'orrery_partitions';
/**
 * The channel the rollups of view sets notify, with a rollup's name, in the transaction that
 * records buckets of it invalidated (so readers keep the invalidations between statements).
 */
export const rollupInvalidationsChannel = 'orrery_rollup_invalidations';
/** The channel sync() notifies, with a token of its own. */
const syncChannel = 'orrery_sync';

/** How long sync() waits for its own notification before giving up on what is cached. */
const syncTimeoutMs = 5_000;
const reconnectMs = 1_000;

/**
 * What every process sharing the database changed, told by Postgres (LISTEN/NOTIFY on a
 * connection of its own, outside the pool), so a process can keep what it read and drop it when
 * a writer anywhere commits a change. `version(channel, key)` names what is known now: a value
 * read between two equal versions is still current. Nothing is known while the connection is down
 * (version is undefined; every connection and every loss changes every version), so a reader
 * caches only while it listens.
 *
 * Postgres delivers notifications in commit order, so once a notification this process sent
 * comes back, every change committed before it has been seen: sync() is how a writer makes its
 * own change visible to the next statement here at once.
 */
export class ChangeFeed {
  private client: pg.Client | undefined;
  private listening = false;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  /** Moves on every connection and every loss: versions from before are void. */
  private epoch = 0;
  private readonly counters = new Map<string, number>();
  private readonly waiting = new Map<string, () => void>();

  constructor(
    private readonly connectionString: string,
    private readonly notify: (sql: string, params: unknown[]) => Promise<unknown>,
    private readonly log: MetadataLog,
  ) {}

  /** Starts listening (and keeps reconnecting until closed). */
  start(): void {
    if (this.closed || this.client) return;
    void this.connect();
  }

  /** What is known of `key` on `channel` now, or undefined while not listening. */
  version(channel: string, key: string): string | undefined {
    if (!this.listening) return undefined;
    return `${this.epoch}.${this.counters.get(`${channel}\u0000${key}`) ?? 0}`;
  }

  /**
   * Waits until every change committed before this call has been seen. When that cannot be
   * known (not listening, or no answer in time) every version moves instead.
   */
  async sync(): Promise<void> {
    if (!this.listening) return;
    const token = randomBytes(12).toString('hex');
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<boolean>((resolve) => {
      this.waiting.set(token, () => resolve(true));
      timer = setTimeout(() => resolve(false), syncTimeoutMs);
    });
    try {
      await this.notify('SELECT pg_notify($1, $2)', [syncChannel, token]);
      if (!(await seen)) this.epoch++;
    } catch {
      this.epoch++;
    } finally {
      clearTimeout(timer);
      this.waiting.delete(token);
    }
  }

  /** Stops listening. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.listening = false;
    clearTimeout(this.retry);
    for (const done of this.waiting.values()) done();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString });
    this.client = client;
    const lost = (): void => {
      if (this.client !== client) return;
      this.client = undefined;
      this.listening = false;
      this.epoch++;
      // Every version moved: a sync() waiting for its notification has nothing left to wait for.
      for (const done of this.waiting.values()) done();
      client.end().catch(() => {});
      if (this.closed) return;
      this.retry = setTimeout(() => void this.connect(), reconnectMs);
      this.retry.unref();
    };
    client.on('error', (error) => {
      if (!this.closed) this.log('warn', `metadata change feed: ${error.message}; reconnecting`);
      lost();
    });
    client.on('end', lost);
    client.on('notification', (message) => this.received(message.channel, message.payload ?? ''));
    try {
      await client.connect();
      await client.query(`LISTEN ${partitionsChannel}; LISTEN ${rollupInvalidationsChannel}; LISTEN ${syncChannel}`);
      if (this.client !== client) return;
      this.epoch++;
      this.listening = true;
    } catch (error) {
      if (!this.closed) this.log('warn', `metadata change feed: cannot listen: ${(error as Error).message}`);
      lost();
    }
  }

  private received(channel: string, payload: string): void {
    if (channel === syncChannel) {
      this.waiting.get(payload)?.();
      return;
    }
    const key = `${channel}\u0000${payload}`;
    this.counters.set(key, (this.counters.get(key) ?? 0) + 1);
  }
}
