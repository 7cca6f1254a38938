import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { MaintenanceDaemon } from '../../src/maintenance/daemon.js';

/**
 * Runs the daemon's housekeeping once it gets its turn: while the daemon's own run holds the lock, a run answers
 * nothing and is tried again, within a loaded machine's time (180 s), then fails saying so instead of looping for
 * ever.
 */
export async function housekeepingTurn(daemon: MaintenanceDaemon): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (!(await daemon.housekeeping())) {
    assert.ok(Date.now() < deadline, "housekeeping did not get its turn within 180 s (the daemon's own run)");
    await sleep(100);
  }
}
