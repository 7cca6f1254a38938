import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDuration } from './declarations.js';
import { ResourcesCliError } from './errors.js';

/** `orrery resources help`. */
export const resourcesUsage = `usage: orrery resources <command> [options]

Database resources as code: stored columns, indexes, projections and rollups declared in
<folder>/resources/**/*.resources.json next to the view sets of <folder>/views/*.sql
(the spec: database-resources.md; README "Resources").

commands:
  validate --dir <folder>   check every resources file against the server's view sets: each
                            error and warning as <file>: <entry>: error|warning: <message>
           [--online]       also compare each ready rollup with the raw rows over its most
                            recent complete buckets (a mismatch is an error)
           [--rollup-window <duration>]  the longest window compared (default 1h)
  help                      print this text

options:
  --dir <folder>       the publication folder (holding resources/ and views/)
  --server <host:port> the Flight SQL server (default: $ORRERY_FLIGHT_SQL_ADDR, else 127.0.0.1:50051)
  --key <key>          an admin API key, sent as a bearer token (default: $ORRERY_API_KEY)
  --tls                connect with TLS, trusting the system's certificate authorities
  --tls-ca <file>      connect with TLS, trusting the PEM certificate(s) in <file>

exit status: 0 no errors (warnings allowed); 1 the command failed (server unreachable, key
refused, file error); 2 bad usage or errors in the files.`;

export type ResourcesCommand = 'validate' | 'help';

/** A parsed `orrery resources` command line. */
export interface ResourcesArgs {
  readonly command: ResourcesCommand;
  readonly dir: string | undefined;
  readonly server: string;
  readonly key: string | undefined;
  readonly tls: false | true | { readonly ca: Buffer };
  /** validate --online: the rollups compared with raw rows too, over at most this many seconds. */
  readonly online: false | { readonly windowSeconds: number };
}

const commands: readonly ResourcesCommand[] = ['validate', 'help'];
const connectionOptions = ['server', 'key', 'tls', 'tls-ca'];
const allowed: Record<ResourcesCommand, readonly string[]> = {
  validate: ['dir', 'online', 'rollup-window', ...connectionOptions],
  help: [],
};
const options = {
  dir: { type: 'string' },
  server: { type: 'string' },
  key: { type: 'string' },
  tls: { type: 'boolean' },
  'tls-ca': { type: 'string' },
  online: { type: 'boolean' },
  'rollup-window': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Parses the arguments after `orrery resources`; throws a RESOURCES_USAGE error naming the problem. */
export function parseResourcesArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): ResourcesArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options });
  } catch (error) {
    throw new ResourcesCliError('RESOURCES_USAGE', (error as Error).message.split('\n')[0]);
  }
  const { values, positionals } = parsed;
  const [word, ...rest] = positionals;
  const server = values.server ?? (env.ORRERY_FLIGHT_SQL_ADDR || '127.0.0.1:50051');
  const base = {
    dir: values.dir,
    server,
    key: values.key ?? (env.ORRERY_API_KEY || undefined),
    tls: false as const,
    online: false as const,
  };
  if (values.help || word === undefined || word === 'help') return { ...base, command: 'help' };
  if (!commands.includes(word as ResourcesCommand))
    throw new ResourcesCliError('RESOURCES_USAGE', `unknown command '${word}'`);
  const command = word as ResourcesCommand;
  for (const option of Object.keys(values)) {
    if (!allowed[command].includes(option))
      throw new ResourcesCliError('RESOURCES_USAGE', `option --${option} does not apply to '${command}'`);
  }
  if (rest.length > 0) throw new ResourcesCliError('RESOURCES_USAGE', `unexpected argument '${rest[0]}'`);
  if (allowed[command].includes('dir') && !values.dir)
    throw new ResourcesCliError('RESOURCES_USAGE', `'${command}' needs --dir <folder>`);
  if (!/^.+:\d+$/.test(server))
    throw new ResourcesCliError('RESOURCES_USAGE', `server address '${server}' is not host:port`);
  if (values['rollup-window'] !== undefined && !values.online)
    throw new ResourcesCliError('RESOURCES_USAGE', '--rollup-window applies to validate --online');
  const windowSeconds = parseDuration(values['rollup-window'] ?? '1h');
  if (windowSeconds === null)
    throw new ResourcesCliError(
      'RESOURCES_USAGE',
      `--rollup-window '${values['rollup-window']}' is not a duration such as 1h`,
    );
  return {
    ...base,
    command,
    tls: values['tls-ca'] ? { ca: readCa(values['tls-ca']) } : (values.tls ?? false),
    online: values.online ? { windowSeconds } : false,
  };
}

function readCa(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ResourcesCliError('RESOURCES_FILE_ERROR', `cannot read --tls-ca '${path}': ${(error as Error).message}`);
  }
}
