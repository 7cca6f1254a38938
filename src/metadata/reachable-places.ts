import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { MetadataLog } from './metadata-log.js';
import type { PostgresBinaries } from './postgres-binaries.js';
import { canEnter, type ServerUser } from './server-user.js';

// Running as root, the embedded server runs as another OS user, which cannot enter a private home
// (`git clone … ~/orrery` with ~ at mode 700): neither the cluster under the data folder nor the
// binaries under node_modules. Then both go to a folder root owns and that user can reach, the
// cluster at a place named after the data folder (so every start finds it), the binaries once per
// Postgres version. Orrery never loosens the modes of folders it did not make.

/** Where they go (ORRERY_EMBEDDED_POSTGRES_ROOT or the embedded options' `reachableRoot`). */
export const defaultReachableRoot = '/var/lib/orrery';

/** The cluster folder of `dataDir`: `<dataDir>/postgres`, or its place under `root` when `user` cannot enter the data folder. */
export function reachableCluster(user: ServerUser, dataDir: string, root: string, log: MetadataLog): string {
  const own = join(dataDir, 'postgres');
  if (canEnter(user, dataDir)) return own;
  const id = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  const cluster = join(root, 'clusters', id, 'postgres');
  makeReachable(dirname(cluster));
  log(
    'info',
    `the OS user '${user.name}' that runs the embedded Postgres cannot enter ${dataDir}: its cluster is kept in ${cluster} instead (named after the data folder)`,
  );
  return cluster;
}

/** The binaries themselves when `user` can run them, else a copy under `root` (made once per version). */
export function reachableBinaries(
  user: ServerUser,
  binaries: PostgresBinaries,
  root: string,
  log: MetadataLog,
): PostgresBinaries {
  const bin = dirname(binaries.postgres);
  if (canEnter(user, bin)) return binaries;
  const native = dirname(bin);
  const target = join(root, `postgres-${packageVersion(native)}`);
  if (!existsSync(join(target, 'bin', 'postgres'))) {
    makeReachable(root);
    // Copied aside, then renamed into place: a folder there is always whole.
    const staging = `${target}.copy-${process.pid}`;
    rmSync(staging, { recursive: true, force: true });
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    try {
      renameSync(staging, target);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      if (!existsSync(join(target, 'bin', 'postgres'))) throw error; // else another start copied them first
    }
    log(
      'info',
      `the OS user '${user.name}' that runs the embedded Postgres cannot enter ${bin}: copied the Postgres binaries to ${target}`,
    );
  }
  return { postgres: join(target, 'bin', 'postgres'), initdb: join(target, 'bin', 'initdb') };
}

/** The version of the package the binaries come in (`native/` sits in it beside package.json). */
function packageVersion(native: string): string {
  try {
    return (JSON.parse(readFileSync(join(dirname(native), 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return createHash('sha256').update(native).digest('hex').slice(0, 16);
  }
}

/** Creates a folder (and those above it) that others may enter but not list or write. */
function makeReachable(dir: string): void {
  const missing: string[] = [];
  for (let d = dir; !existsSync(d); d = dirname(d)) missing.unshift(d);
  mkdirSync(dir, { recursive: true });
  for (const d of missing) chmodSync(d, 0o711);
}
