import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { startOrrery, type Log, type Orrery, type Role } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { TestFlightClient } from './flight-client.js';
import { runnerS3, s3LakeEnv } from './s3-server.js';

export const adminKey = { name: 'admin', key: 'admin-key-0123' };
export const readerKey = { name: 'reader', key: 'reader-key-0123' };

/**
 * A suite's `serve` runs no refresh jobs unless it asks: its rollups are refreshed when the test says,
 * so what a read or a refresh does is the test's to predict (test/rollups/serve-refresh-jobs runs them).
 */
export const servedByTheTest = (role: Role): Record<string, string> =>
  role === 'serve' ? { ORRERY_ROLLUP_REFRESH_JOBS: 'off' } : {};

/** Starts Orrery in this process on free ports with a temporary data folder (no daemon unless asked). */
export async function startTestOrrery(
  env: Record<string, string> = {},
  role: Role = 'serve',
  log: Log = () => {},
): Promise<Orrery & { address: string; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-test-'));
  const config = loadConfig({
    ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
    ORRERY_HTTP_ADDR: '127.0.0.1:0',
    ORRERY_DATA_DIR: dataDir,
    MICROMEGAS_API_KEYS: JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }]),
    MICROMEGAS_ADMINS: JSON.stringify([adminKey.name]),
    // npm test runs the statement suites once more with ORRERY_NATIVE=off (scripts/run-tests.mjs).
    ...(process.env.ORRERY_NATIVE ? { ORRERY_NATIVE: process.env.ORRERY_NATIVE } : {}),
    // ... and the lakehouse suites once more on an S3 server (ORRERY_TEST_S3).
    ...(runnerS3() ? s3LakeEnv(runnerS3()!) : {}),
    ...servedByTheTest(role),
    ...env,
  });
  const orrery = await startOrrery(config, log, role);
  return {
    ...orrery,
    address: `127.0.0.1:${orrery.flightPort}`,
    dataDir,
    close: async () => {
      await orrery.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface OrreryFixture {
  orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  /** A client holding the admin key as a bearer header. */
  admin: TestFlightClient;
  /** A client holding the reader (non-admin) key. */
  reader: TestFlightClient;
}

/** Registers before/after hooks that start an Orrery with two clients and stop them. */
export function useOrrery(
  env: Record<string, string> | (() => Promise<Record<string, string>>) = {},
  role: Role = 'serve',
  log?: Log,
): OrreryFixture {
  const fixture = {} as OrreryFixture;
  before(async () => {
    fixture.orrery = await startTestOrrery(typeof env === 'function' ? await env() : env, role, log);
    fixture.admin = new TestFlightClient(fixture.orrery.address);
    fixture.admin.headers.authorization = `Bearer ${adminKey.key}`;
    fixture.reader = new TestFlightClient(fixture.orrery.address);
    fixture.reader.headers.authorization = `Bearer ${readerKey.key}`;
  });
  after(async () => {
    fixture.admin.close();
    fixture.reader.close();
    await fixture.orrery.close();
  });
  return fixture;
}
