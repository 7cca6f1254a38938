// Log records sent by OTLP to a real Orrery whose daemon materializes them into log_entries, for
// tests of what is built on that view set (its rollups and their reads).
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { Table } from 'apache-arrow';
import {
  clientFor,
  pollUntil,
  scalar,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from './flight-client.js';
import { logsRequest, postOtlp } from './otlp.js';

const hourNs = 3_600_000_000_000n;
const dayNs = 24n * hourNs;
/**
 * The clock when the suite's file was loaded: the rows a suite sends and the windows it reads are
 * placed from this one instant, so an hour or a day that turns while the suite runs moves neither.
 */
const loadedAt = BigInt(Date.now()) * 1_000_000n;

/** The start of the UTC hour `hoursAgo` hours before the suite's start, in ns since the epoch. */
export const hourStart = (hoursAgo: number): bigint => loadedAt - (loadedAt % hourNs) - BigInt(hoursAgo) * hourNs;

/** The start of the UTC day `daysAgo` days before the suite's start (-1: the next day), in ns since the epoch. */
export const dayStart = (daysAgo: number): bigint => loadedAt - (loadedAt % dayNs) - BigInt(daysAgo) * dayNs;

/** The rollup a query's (single) level read, from the provenance in its stream's schema metadata. */
export const rollupRead = (table: Table): string | null => {
  const text = table.schema.metadata.get('orrery.provenance');
  if (text === undefined) return null;
  const { resources } = JSON.parse(text) as { resources: Array<{ rollup: { name: string } | null }> };
  return resources[0]?.rollup?.name ?? null;
};

/** The same query over a subquery of the set, which no rollup answers: the raw answer. */
export const rawTwin = (sql: string): string =>
  sql.replace(' from log_entries ', ' from (select * from log_entries) as log_entries ');

export interface LogSender {
  /** Sends `count` records of one target as `key`, 7 minutes apart from `start`, and waits until log_entries has them. */
  send(key: TestKey, target: string, start: bigint, count: number, level?: number): Promise<void>;
  /** How many records were sent so far (log_entries holds them all once send returned). */
  readonly sent: number;
  /** After retention took records: log_entries holds `count` of those sent, and the next send waits for those plus its own. */
  holding(count: number): void;
}

/**
 * How long a send waits for log_entries to show its records. A block's insert time is the start of the
 * transaction inserting it: when its commit is seen more than ~1.5 s later (a loaded machine), the second
 * pass over that second has already run without it, and the block waits for the minute pass, by design (see
 * test/lakehouse/daemon-crash.test.ts): up to 125 s after its insert time (the pass covers [m - 120 s,
 * m - 60 s) at 5 s past each minute m), plus the pass's own run. 30 s failed at a load average of 26.
 */
const materializedWithinMs = 160_000;

/** A sender to `orrery`, counting log_entries as `admin` sees it. */
export function logSender(orrery: InProcessOrrery, admin: TestFlightClient): LogSender {
  let sent = 0;
  return {
    get sent() {
      return sent;
    },
    holding(count) {
      sent = count;
    },
    async send(key, target, start, count, level = 9) {
      const logs = Array.from({ length: count }, (_, i) => ({
        time: start + BigInt(i) * 7n * 60_000_000_000n,
        severity: level,
        body: `${target} ${i}`,
        target,
      }));
      const { status, text } = await postOtlp(
        orrery.httpPort,
        'logs',
        key.key,
        logsRequest({ 'service.name': `svc-${key.name}` }, logs),
      );
      assert.equal(status, 200, text);
      sent += count;
      await pollUntil(
        'the daemon materializing the records',
        () => scalar(admin, 'SELECT count(*) FROM log_entries'),
        (n) => n === sent,
        { timeoutMs: materializedWithinMs, intervalMs: 200 },
      ).catch((error: unknown) => {
        throw new Error(
          `${(error as Error).message}\n--- the daemon's last lines:\n${orrery.lines.slice(-20).join('\n')}`,
          {
            cause: error,
          },
        );
      });
    },
  };
}

/** A suite's Orrery (role all, its own Postgres), its keys' clients and its log sender, set in `before`. */
export interface LogsOrrery {
  readonly keys: { readonly admin: TestKey; readonly teamA: TestKey; readonly teamB: TestKey };
  postgres: TestPostgres;
  orrery: InProcessOrrery;
  admin: TestFlightClient;
  /** The admin's, team-a's and team-b's clients, in that order. */
  clients: TestFlightClient[];
  logs: LogSender;
}

/** Starts an Orrery before the suite (an admin of audience ops, keys of team-a and team-b) and closes it after. */
export function useLogsOrrery(suite: string, env: Record<string, string> = {}): LogsOrrery {
  const key = (name: string, audience: string): TestKey => ({
    name,
    key: `${name}-key-${suite}`,
    audiences: [audience],
  });
  const keys = { admin: key('admin', 'ops'), teamA: key('team-a', 'team-a'), teamB: key('team-b', 'team-b') };
  const fixture = { keys } as LogsOrrery;
  before(async () => {
    fixture.postgres = await startTestPostgres();
    fixture.orrery = await startRole('all', {
      ...sharedEnv({
        keys: [keys.admin, keys.teamA, keys.teamB],
        admins: [keys.admin.name],
        connectionString: fixture.postgres.connectionString,
      }),
      ...env,
    });
    fixture.clients = [keys.admin, keys.teamA, keys.teamB].map((k) => clientFor(fixture.orrery.flightPort, k));
    fixture.admin = fixture.clients[0];
    fixture.logs = logSender(fixture.orrery, fixture.admin);
  });
  after(async () => {
    for (const c of fixture.clients ?? []) c.close();
    await fixture.orrery?.close();
    await fixture.postgres?.close();
  });
  return fixture;
}
