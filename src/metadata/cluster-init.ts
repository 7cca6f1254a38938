import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { MetadataError } from './errors.js';
import type { MetadataLog } from './metadata-log.js';
import { isRunning } from './os-processes.js';
import { commandAs, serverEnvironment, type PostgresBinaries } from './postgres-binaries.js';
import type { ServerUser } from './server-user.js';

/** The superuser of an embedded cluster. */
export const superuser = 'postgres';
/** Where an embedded cluster keeps its superuser's password (readable by Orrery only). */
const passwordFileName = 'orrery-password';

/**
 * Creates the cluster `clusterDir` with initdb unless it exists, and returns its superuser
 * password. initdb works in a private staging folder renamed into place when done, so a
 * crash mid-way leaves no half-made cluster, and two processes racing keep one cluster.
 */
export async function ensureCluster(
  binaries: PostgresBinaries,
  clusterDir: string,
  user: ServerUser | undefined,
  log: MetadataLog,
): Promise<string> {
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) {
    if (existsSync(clusterDir) && readdirSync(clusterDir).length > 0) {
      throw new MetadataError(
        'CLUSTER_INVALID',
        `${clusterDir} is not empty but holds no Postgres cluster (no PG_VERSION); move it away`,
      );
    }
    await initialise(binaries, clusterDir, user, log);
  }
  try {
    return readFileSync(join(clusterDir, passwordFileName), 'utf8').trim();
  } catch (error) {
    throw new MetadataError(
      'CLUSTER_INVALID',
      `${clusterDir} has no ${passwordFileName} file: it was not created by Orrery`,
      { cause: error },
    );
  }
}

async function initialise(
  binaries: PostgresBinaries,
  clusterDir: string,
  user: ServerUser | undefined,
  log: MetadataLog,
): Promise<void> {
  const started = Date.now();
  removeAbandonedStaging(clusterDir);
  const staging = `${clusterDir}.initdb-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { mode: 0o700 });
  const password = randomBytes(24).toString('base64url');
  const passwordInput = join(staging, '..', `.postgres-password-${process.pid}`);
  writeFileSync(passwordInput, `${password}\n`, { mode: 0o600 });
  try {
    if (user) {
      chownSync(staging, user.uid, user.gid);
      chownSync(passwordInput, user.uid, user.gid);
    }
    const args = [
      '-D',
      staging,
      '-U',
      superuser,
      `--pwfile=${passwordInput}`,
      '-A',
      'scram-sha-256',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-instructions',
    ];
    await run(commandAs(user, binaries.initdb, args), staging);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  } finally {
    rmSync(passwordInput, { force: true });
  }
  writeFileSync(join(staging, passwordFileName), `${password}\n`, { mode: 0o600 });
  try {
    renameSync(staging, clusterDir); // replaces a missing or empty folder only
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (existsSync(join(clusterDir, 'PG_VERSION'))) return; // another process initialised it meanwhile
    throw new MetadataError(
      'EMBEDDED_START_FAILED',
      `cannot move the new cluster into ${clusterDir}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  log('info', `created the embedded Postgres cluster in ${clusterDir} (${Date.now() - started} ms)`);
}

/** Staging folders of initdb runs whose process died. */
function removeAbandonedStaging(clusterDir: string): void {
  const parent = join(clusterDir, '..');
  const prefix = `${clusterDir.slice(parent.length + 1)}.initdb-`;
  for (const name of readdirSync(parent)) {
    if (name.startsWith(prefix) && !isRunning(Number(name.slice(prefix.length))))
      rmSync(join(parent, name), { recursive: true, force: true });
  }
}

function run(command: ReturnType<typeof commandAs>, staging: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command.command, command.args, {
      ...command.ids,
      env: serverEnvironment(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) =>
      reject(new MetadataError('EMBEDDED_START_FAILED', `cannot run initdb: ${error.message}`, { cause: error })),
    );
    child.on('close', (code, signal) => {
      if (code === 0) return resolve();
      reject(
        new MetadataError(
          'EMBEDDED_START_FAILED',
          `initdb failed for ${staging} (${signal ? `signal ${signal}` : `exit code ${code}`}): ${output.trim().split('\n').slice(-8).join('\n')}`,
        ),
      );
    });
  });
}
