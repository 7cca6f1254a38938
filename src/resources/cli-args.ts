import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseDuration } from './declarations.js';
import { ResourcesCliError } from './errors.js';

/** `orrery resources help` (and `orrery publish help`). */
export const resourcesUsage = `usage: orrery resources <command> [options]
       orrery publish --dir <folder> [--dry-run] [--install-resources | --no-install-resources]

Database resources as code: stored columns, indexes, projections and rollups declared in
<folder>/resources/**/*.resources.json next to the view sets of <folder>/views/*.sql
(the spec: database-resources.md; README "Resources").

commands:
  validate --dir <folder>    check every resources file against the server's view sets: each
                             error and warning as <file>: <entry>: error|warning: <message>
           [--online]        also compare each ready rollup with the raw rows over its most
                             recent complete buckets (a mismatch is an error)
           [--rollup-window <duration>]  the longest window compared (default 1h)
           [--rollup-window-end <time>]  end it with the bucket before this UTC time's, not
                             5 minutes before now's (a check that compares the same buckets
                             whenever it runs, as tests need)
  plan --dir <folder>        print the file changes against the served publication and the
  plan [--revision <id>]     resource steps (of the folder, of a stored publication, or of the
                             served head); runs nothing
  status                     print the ledger: each entry's state, backfilled range, retirement
  prune [--dry-run]          retire what the served publication no longer declares; drop what
                             was retired more than seven days ago (--dry-run: list it)
  help                       print this text

orrery publish: validate, then install and backfill the resources (holding the namespace lock;
progress printed as it goes), apply the view sets of <folder>/views (as orrery views apply), serve
the publication (retiring what it no longer declares, finishing async entries). --dry-run prints
the file changes and planned steps. <folder>/orrery.json {"resources": {"install_on_publish": false}}
disables installation; --install-resources / --no-install-resources decide for one publish.

options:
  --dir <folder>       the publication folder (holding resources/ and views/)
  --server <host:port> the Flight SQL server (default: $ORRERY_FLIGHT_SQL_ADDR, else 127.0.0.1:50051)
  --key <key>          an admin API key, sent as a bearer token (default: $ORRERY_API_KEY)
  --tls                connect with TLS, trusting the system's certificate authorities
  --tls-ca <file>      connect with TLS, trusting the PEM certificate(s) in <file>

exit status: 0 done; 1 the command failed (server unreachable, key refused, file error,
installation failed, lock held); 2 bad usage or errors in the files.`;

export type ResourcesCommand = 'validate' | 'plan' | 'status' | 'prune' | 'publish' | 'help';

/** A parsed `orrery resources` / `orrery publish` command line. */
export interface ResourcesArgs {
  readonly command: ResourcesCommand;
  readonly dir: string | undefined;
  readonly revision: number | undefined;
  readonly dryRun: boolean;
  /** --install-resources (true), --no-install-resources (false), or neither (undefined: orrery.json decides). */
  readonly installResources: boolean | undefined;
  readonly server: string;
  readonly key: string | undefined;
  readonly tls: false | true | { readonly ca: Buffer };
  /**
   * validate --online: the rollups compared with raw rows too, over at most this many seconds, ending with the bucket
   * before `windowEnd`'s (a time the server reads) or, without it, before the bucket of 5 minutes ago.
   */
  readonly online: false | { readonly windowSeconds: number; readonly windowEnd?: string };
}

const commands: readonly ResourcesCommand[] = ['validate', 'plan', 'status', 'prune', 'help'];
const connectionOptions = ['server', 'key', 'tls', 'tls-ca'];
const allowed: Record<ResourcesCommand, readonly string[]> = {
  validate: ['dir', 'online', 'rollup-window', 'rollup-window-end', ...connectionOptions],
  plan: ['dir', 'revision', ...connectionOptions],
  status: connectionOptions,
  prune: ['dry-run', ...connectionOptions],
  publish: ['dir', 'dry-run', 'install-resources', 'no-install-resources', ...connectionOptions],
  help: [],
};
const options = {
  dir: { type: 'string' },
  revision: { type: 'string' },
  'dry-run': { type: 'boolean' },
  'install-resources': { type: 'boolean' },
  'no-install-resources': { type: 'boolean' },
  server: { type: 'string' },
  key: { type: 'string' },
  tls: { type: 'boolean' },
  'tls-ca': { type: 'string' },
  online: { type: 'boolean' },
  'rollup-window': { type: 'string' },
  'rollup-window-end': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * Parses the arguments after `orrery resources` (or, with `program` 'publish', after `orrery publish`);
 * throws a RESOURCES_USAGE error naming the problem.
 */
export function parseResourcesArgs(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  program: 'resources' | 'publish' = 'resources',
): ResourcesArgs {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options });
  } catch (error) {
    throw new ResourcesCliError('RESOURCES_USAGE', (error as Error).message.split('\n')[0]);
  }
  const { values, positionals } = parsed;
  const words = program === 'publish' ? ['publish', ...positionals] : positionals;
  const [word, ...rest] = words;
  const server = values.server ?? (env.ORRERY_FLIGHT_SQL_ADDR || '127.0.0.1:50051');
  const base = {
    dir: values.dir,
    revision: undefined,
    dryRun: values['dry-run'] ?? false,
    installResources: values['install-resources'] ? true : values['no-install-resources'] ? false : undefined,
    server,
    key: values.key ?? (env.ORRERY_API_KEY || undefined),
    tls: false as const,
    online: false as const,
  };
  if (values.help || word === undefined || word === 'help' || (program === 'publish' && rest[0] === 'help'))
    return { ...base, command: 'help' };
  if (program === 'resources' && !commands.includes(word as ResourcesCommand))
    throw new ResourcesCliError('RESOURCES_USAGE', `unknown command '${word}'`);
  const command = word as ResourcesCommand;
  for (const option of Object.keys(values)) {
    if (!allowed[command].includes(option))
      throw new ResourcesCliError('RESOURCES_USAGE', `option --${option} does not apply to '${command}'`);
  }
  if (rest.length > 0) throw new ResourcesCliError('RESOURCES_USAGE', `unexpected argument '${rest[0]}'`);
  if ((command === 'validate' || command === 'publish') && !values.dir)
    throw new ResourcesCliError('RESOURCES_USAGE', `'${command}' needs --dir <folder>`);
  if (values['install-resources'] && values['no-install-resources'])
    throw new ResourcesCliError('RESOURCES_USAGE', 'give --install-resources or --no-install-resources, not both');
  if (values.revision !== undefined && values.dir !== undefined)
    throw new ResourcesCliError('RESOURCES_USAGE', "'plan' takes --dir or --revision, not both");
  const revision = values.revision === undefined ? undefined : Number(values.revision);
  if (revision !== undefined && (!Number.isInteger(revision) || revision <= 0))
    throw new ResourcesCliError('RESOURCES_USAGE', `--revision '${values.revision}' is not a publication id`);
  if (!/^.+:\d+$/.test(server))
    throw new ResourcesCliError('RESOURCES_USAGE', `server address '${server}' is not host:port`);
  for (const option of ['rollup-window', 'rollup-window-end'] as const)
    if (values[option] !== undefined && !values.online)
      throw new ResourcesCliError('RESOURCES_USAGE', `--${option} applies to validate --online`);
  const windowSeconds = parseDuration(values['rollup-window'] ?? '1h');
  if (windowSeconds === null)
    throw new ResourcesCliError(
      'RESOURCES_USAGE',
      `--rollup-window '${values['rollup-window']}' is not a duration such as 1h`,
    );
  return {
    ...base,
    command,
    revision,
    tls: values['tls-ca'] ? { ca: readCa(values['tls-ca']) } : (values.tls ?? false),
    online: values.online ? { windowSeconds, windowEnd: values['rollup-window-end'] } : false,
  };
}

function readCa(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ResourcesCliError('RESOURCES_FILE_ERROR', `cannot read --tls-ca '${path}': ${(error as Error).message}`);
  }
}
