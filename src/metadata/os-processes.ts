import { existsSync, readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const hasProc = existsSync('/proc/self/stat');

/** Fields after the command name in /proc/<pid>/stat: [state, ppid, ...]; undefined when the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** True while the process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  if (hasProc) {
    const fields = statFields(pid);
    return fields !== undefined && fields[0] !== 'Z' && fields[0] !== 'X';
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The parent process id, when it can be known. */
export function parentOf(pid: number): number | undefined {
  const fields = hasProc ? statFields(pid) : undefined;
  return fields ? Number(fields[1]) : undefined;
}

/** Processes whose working folder is `dir`: every process of a Postgres cluster works in its data folder. */
export function processesWorkingIn(dir: string): number[] {
  if (!hasProc) return [];
  const target = realpathSync(dir);
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${name}/cwd`) === target) found.push(Number(name));
    } catch {
      // gone, or not ours to inspect
    }
  }
  return found;
}

/** Sends `signal`, ignoring a process that is already gone. */
export function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** Waits until none of `pids` runs; false on timeout. */
export async function waitUntilGone(pids: readonly number[], timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (pids.some(isRunning)) {
    if (Date.now() > deadline) return false;
    await sleep(25);
  }
  return true;
}

/**
 * Blocks the thread until `pid` no longer runs (for 'exit' handlers, where nothing async runs);
 * false on timeout. Needs /proc: elsewhere an unreaped child looks alive, so it does not wait.
 */
export function waitUntilGoneSync(pid: number, timeoutMs: number): boolean {
  if (!hasProc) return false;
  const deadline = Date.now() + timeoutMs;
  const cell = new Int32Array(new SharedArrayBuffer(4));
  while (isRunning(pid)) {
    if (Date.now() > deadline) return false;
    Atomics.wait(cell, 0, 0, 10);
  }
  return true;
}
