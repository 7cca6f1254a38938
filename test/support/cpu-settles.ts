import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Resolves once this process (which hosts the server and its DuckDB) spends less than a tenth
 * of a core over a quarter of a second: a statement DuckDB still ran would keep a core busy.
 * Fails when that never happens within 40 tries.
 */
export async function cpuSettles(): Promise<void> {
  for (let attempt = 0; attempt < 40; attempt++) {
    const before = process.cpuUsage();
    const start = process.hrtime.bigint();
    await sleep(250);
    const used = process.cpuUsage(before);
    const elapsedMicros = Number(process.hrtime.bigint() - start) / 1000;
    if (used.user + used.system < 0.1 * elapsedMicros) return;
  }
  assert.fail('DuckDB kept a core busy after the statement was stopped');
}
