// A process and everything it started, read from /proc (Linux): its process group misses what a test started in a
// group of its own (the embedded Postgres server is detached), and a process whose parent died is no longer found
// under it, so the tree is read, and stopped, before anything in it is killed.
import { readdirSync, readFileSync } from 'node:fs';

const read = (path) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // gone meanwhile, or no /proc
  }
};

/** Every process: pid, parent, group, state and command line. */
function processes() {
  let entries;
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  return entries.flatMap((name) => {
    const stat = read(`/proc/${name}/stat`);
    if (!stat) return [];
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after its last ')'.
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const command = (read(`/proc/${name}/cmdline`) ?? '').split('\0').join(' ').trim();
    const wchan = read(`/proc/${name}/wchan`) ?? '';
    return [{ pid: Number(name), ppid: Number(ppid), pgrp: Number(pgrp), state, wchan, command }];
  });
}

/** `leader` and its descendants, with the members of its process group whose parent is gone. */
export function processTree(leader) {
  const all = processes();
  const found = new Map(all.filter((p) => p.pid === leader || p.pgrp === leader).map((p) => [p.pid, p]));
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all)
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.set(p.pid, p);
        grew = true;
      }
  }
  return [...found.values()];
}

const signal = (pid, name) => {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
};

/**
 * Kills `leader`'s process group and every process under it: stopped first (a stopped process starts nothing more),
 * read again until nothing new appears, then killed. The processes as they were when stopped.
 */
export function killTree(leader) {
  signal(-leader, 'SIGSTOP');
  const stopped = new Map();
  for (let tree = processTree(leader); tree.some((p) => !stopped.has(p.pid)); tree = processTree(leader))
    for (const p of tree) {
      if (stopped.has(p.pid)) continue;
      signal(p.pid, 'SIGSTOP');
      stopped.set(p.pid, p);
    }
  signal(-leader, 'SIGKILL');
  for (const pid of stopped.keys()) signal(pid, 'SIGKILL');
  return [...stopped.values()];
}

const shortened = (command) => (command.length > 240 ? `…${command.slice(-240)}` : command);

/** One line per process: pid, parent, group, state (and the kernel function it sleeps in), command line's end. */
export const describeProcesses = (list) =>
  list.map(
    (p) =>
      `pid ${p.pid} (parent ${p.ppid}, group ${p.pgrp}) state ${p.state}` +
      `${p.wchan && p.wchan !== '0' ? ` in ${p.wchan}` : ''}: ${shortened(p.command)}`,
  );
