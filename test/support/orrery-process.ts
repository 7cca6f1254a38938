import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startOrrery, type Orrery } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';

export const adminKey = { name: 'admin', key: 'admin-key-0123' };
export const readerKey = { name: 'reader', key: 'reader-key-0123' };

/** Starts Orrery in this process on a free port with a temporary data folder. */
export async function startTestOrrery(env: Record<string, string> = {}): Promise<Orrery & { address: string; dataDir: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-test-'));
  const config = loadConfig({
    ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
    ORRERY_HTTP_ADDR: '127.0.0.1:0',
    ORRERY_DATA_DIR: dataDir,
    MICROMEGAS_API_KEYS: JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }]),
    MICROMEGAS_ADMINS: JSON.stringify([adminKey.name]),
    ...env,
  });
  const orrery = await startOrrery(config, () => {});
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
