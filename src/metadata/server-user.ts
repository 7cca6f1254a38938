import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, parse } from 'node:path';
import { MetadataError } from './errors.js';
import type { MetadataLog } from './metadata-log.js';

/** The OS account the embedded server runs as. */
export interface ServerUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/**
 * Postgres refuses to run as root. Running as root, the server runs as the non-root OS user
 * `name`, created (system account, no home, no shell) when missing; otherwise as ourselves
 * (`undefined`).
 */
export function serverUser(name: string, log: MetadataLog): ServerUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  let user = lookUp(name);
  if (!user) {
    const created = spawnSync(
      'useradd',
      [
        '--system',
        '--user-group',
        '--no-create-home',
        '--home-dir',
        '/nonexistent',
        '--shell',
        '/usr/sbin/nologin',
        name,
      ],
      { encoding: 'utf8' },
    );
    user = lookUp(name); // another process may have created it at the same moment
    if (!user) {
      const why = created.error ? created.error.message : created.stderr.trim() || `exit code ${created.status}`;
      throw new MetadataError(
        'SERVER_USER_UNAVAILABLE',
        `Postgres cannot run as root and the OS user '${name}' does not exist; creating it with useradd failed: ${why}. Create a non-root user '${name}' and start again`,
      );
    }
    log(
      'info',
      `created the OS user '${name}' (uid ${user.uid}) to run the embedded Postgres server, which refuses root`,
    );
  }
  if (user.uid === 0)
    throw new MetadataError(
      'SERVER_USER_UNAVAILABLE',
      `the OS user '${name}' has uid 0; Postgres needs a non-root user`,
    );
  return user;
}

function lookUp(name: string): ServerUser | undefined {
  const result = spawnSync('getent', ['passwd', name], { encoding: 'utf8' });
  const fields = result.status === 0 ? result.stdout.trim().split(':') : [];
  if (fields.length < 4) return undefined;
  return { name, uid: Number(fields[2]), gid: Number(fields[3]) };
}

/**
 * Lets `user` enter Orrery's own data folder `dir` when only the folder itself stops it
 * (a private temporary folder, say): adds search permission for others (o+x), which lets
 * nobody list it, and files in it keep their own modes.
 */
export function letEnter(user: ServerUser, dir: string, log: MetadataLog): void {
  if (canEnter(user, dir) || !canEnter(user, dirname(dir))) return;
  const stat = statSync(dir);
  if (stat.uid !== process.getuid?.()) return;
  chmodSync(dir, (stat.mode & 0o7777) | 0o001);
  log(
    'info',
    `allowed the OS user '${user.name}', which runs the embedded Postgres server, to enter ${dir} (chmod o+x)`,
  );
}

/** Fails naming the first folder on the way to `paths` that `user` may not enter. */
export function checkReachable(user: ServerUser, paths: readonly string[]): void {
  if (paths.every((path) => canEnter(user, path))) return;
  for (const path of paths) {
    const chain: string[] = [];
    for (let dir = path; ; dir = dirname(dir)) {
      chain.unshift(dir);
      if (dir === parse(dir).root) break;
    }
    const blocked = chain.find((dir) => !canEnter(user, dir));
    if (!blocked) continue;
    const stat = statSync(blocked);
    throw new MetadataError(
      'DATA_DIR_UNREACHABLE',
      `the embedded Postgres server runs as the OS user '${user.name}' (Postgres refuses root), which cannot enter ${blocked} ` +
        `(mode ${(stat.mode & 0o7777).toString(8)}, owner uid ${stat.uid}); allow it (chmod o+x ${blocked}) or choose another ORRERY_DATA_DIR`,
    );
  }
}

export function canEnter(user: ServerUser, dir: string): boolean {
  return spawnSync('test', ['-x', dir], { uid: user.uid, gid: user.gid }).status === 0;
}

/** Gives `dir` and everything in it to `user` (a cluster copied or restored by root). */
export function chownTree(dir: string, user: ServerUser): void {
  chownSync(dir, user.uid, user.gid);
  for (const entry of readdirSync(dir, { recursive: true }) as string[]) {
    const path = join(dir, entry);
    if (!lstatSync(path).isSymbolicLink()) chownSync(path, user.uid, user.gid);
  }
}
