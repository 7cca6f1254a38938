import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { MetadataError } from './errors.js';
import type { MetadataLog } from './metadata-log.js';
import { isRunning, parentOf, processesWorkingIn, signal, waitUntilGone } from './os-processes.js';

/** Process ids of the servers this process has started and not yet stopped. */
export const ownServers = new Set<number>();

/**
 * Makes way for a new server on `clusterDir` after whatever happened to the last one:
 * - a server still running for a live owner: refused (DATA_DIR_IN_USE);
 * - a server whose owner died without stopping it (parent is now init): stopped;
 * - a postmaster.pid naming a process that is not a server of this cluster (its id was
 *   reused after a kill -9): removed, since Postgres would take that process for its owner;
 * - processes of a server killed with SIGKILL that are still winding down: waited for
 *   (Postgres refuses to start while they hold the old shared memory), killed after a while.
 * A postmaster.pid naming a dead process is left to Postgres, which checks and replaces it.
 */
export async function clearStaleServer(clusterDir: string, log: MetadataLog): Promise<void> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  const pid = readPostmasterPid(pidFile);
  let members = processesWorkingIn(clusterDir);
  if (pid !== undefined && members.includes(pid)) {
    const parent = parentOf(pid);
    if (ownServers.has(pid)) {
      throw new MetadataError(
        'DATA_DIR_IN_USE',
        `${clusterDir} is already served by an embedded Postgres server of this process (pid ${pid})`,
      );
    }
    if (parent !== undefined && parent !== 1 && parent !== process.pid && isRunning(parent)) {
      throw new MetadataError(
        'DATA_DIR_IN_USE',
        `${clusterDir} is in use by a running Postgres server (pid ${pid}, started by pid ${parent}); stop it or choose another ORRERY_DATA_DIR`,
      );
    }
    log(
      'warn',
      `stopping the embedded Postgres server left running on ${clusterDir} by a process that has died (pid ${pid})`,
    );
    signal(pid, 'SIGINT');
    if (!(await waitUntilGone([pid], 30_000))) signal(pid, 'SIGKILL');
    await waitUntilGone([pid], 5_000);
    members = processesWorkingIn(clusterDir);
  } else if (pid !== undefined && isRunning(pid) && members.length === 0) {
    log('info', `removing ${pidFile}: it names pid ${pid}, which is not a server of this cluster`);
    rmSync(pidFile, { force: true });
  }
  if (members.length === 0) return;
  log('warn', `waiting for ${members.length} process(es) of a stopped Postgres server on ${clusterDir} to exit`);
  if (await waitUntilGone(members, 5_000)) return;
  for (const member of members) signal(member, 'SIGKILL');
  if (!(await waitUntilGone(members, 5_000))) {
    throw new MetadataError(
      'DATA_DIR_IN_USE',
      `processes ${members.join(', ')} still use ${clusterDir} and could not be stopped`,
    );
  }
}

/** The process id on the first line of postmaster.pid, if the file exists. */
export function readPostmasterPid(pidFile: string): number | undefined {
  return readPostmasterFile(pidFile)?.pid;
}

/** postmaster.pid: line 1 the pid, line 4 the port, line 8 the status ('starting', 'ready', 'stopping'). */
export function readPostmasterFile(pidFile: string): { pid: number; port: number; status: string } | undefined {
  let text: string;
  try {
    text = readFileSync(pidFile, 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, port: Number(lines[3]), status: (lines[7] ?? '').trim() };
}
