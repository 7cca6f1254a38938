// CPU time a process and its descendants have used (user + system, from /proc), in ms: for
// benchmarks on a shared, loaded machine, where a statement's wall time is mostly waiting for a core
// and its CPU time is what it costs. The server's descendants include its embedded Postgres and its
// backends, so a statement's Postgres work counts too. Linux only; 0 where /proc cannot be read.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux). */
const ticksPerSecond = 100;

/**
 * The CPU ms used so far by `pid` itself (`own`) and by its descendants (`descendants`): the live
 * ones and, through their counts of the children they waited for, those that ended (a Postgres
 * backend whose connection closed).
 */
export function processTreeCpu(pid) {
  const stats = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Fields after the command (which may hold spaces): state, ppid, ..., utime (14th), stime
      // (15th), cutime and cstime (16th, 17th: children waited for).
      const fields = readFileSync(`/proc/${name}/stat`, 'utf8').split(')').pop().trim().split(/\s+/);
      const [user, system, childrenUser, childrenSystem] = fields.slice(11, 15).map(Number);
      stats.set(Number(name), {
        parent: Number(fields[1]),
        ticks: user + system,
        ended: childrenUser + childrenSystem,
      });
    } catch {
      // The process ended while listed.
    }
  }
  const tree = new Set([pid]);
  for (let grown = true; grown;) {
    grown = false;
    for (const [child, { parent }] of stats)
      if (tree.has(parent) && !tree.has(child)) {
        tree.add(child);
        grown = true;
      }
  }
  let descendants = 0;
  for (const member of tree)
    if (member !== pid) descendants += (stats.get(member)?.ticks ?? 0) + (stats.get(member)?.ended ?? 0);
  const ms = (ticks) => (ticks * 1000) / ticksPerSecond;
  return { own: ms(stats.get(pid)?.ticks ?? 0), descendants: ms(descendants) };
}

/** The CPU ms used so far by `pid` and its descendants (processTreeCpu). */
export function processTreeCpuMs(pid) {
  const { own, descendants } = processTreeCpu(pid);
  return own + descendants;
}
