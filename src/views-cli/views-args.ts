import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ViewsCliError } from './errors.js';

/** `orrery views help`. */
export const viewsUsage = `usage: orrery views <command> [options]

Manages materialized view sets as code: a folder of .sql files, each holding one
CREATE [OR REPLACE] MATERIALIZED VIEW statement and named <view name>.sql. A file
matches the server when its text equals the stored statement, ignoring surrounding
whitespace, a trailing ';' and CREATE versus CREATE OR REPLACE.

commands:
  plan --dir <folder> [--prune]   show what apply would create, replace and drop, and what
                                  the server would refuse (with the reason); changes nothing.
                                  Each change is checked (EXPLAIN) against the server as it is,
                                  so a view reading another view this plan creates shows as
                                  refused until that view exists
  apply --dir <folder> [--prune]  run that plan: creates and replaces by ascending
                                  update_group, then drops by descending update_group;
                                  stops at the first refusal
  pull --dir <folder>             write every stored definition to <folder>/<name>.sql
                                  (exact text and a newline; never deletes a file)
  list                            list stored definitions: name, update_group, updated_at, status
  show <name>                     print one stored definition
  help                            print this text

options:
  --dir <folder>       the folder of .sql files
  --prune              (plan, apply) drop stored definitions that have no file; without it
                       they are listed as "not managed" and left alone
  --server <host:port> the Flight SQL server (default: $ORRERY_FLIGHT_SQL_ADDR, else 127.0.0.1:50051)
  --key <key>          an admin API key, sent as a bearer token (default: $ORRERY_API_KEY)
  --tls                connect with TLS, trusting the system's certificate authorities
  --tls-ca <file>      connect with TLS, trusting the PEM certificate(s) in <file>

exit status: 0 done (plan: nothing would be refused); 1 the command failed (server
unreachable, key refused, file error); 2 bad usage, an invalid file, or a statement the
server refused (plan: would refuse).`;

export type ViewsCommand = 'plan' | 'apply' | 'pull' | 'list' | 'show' | 'help';

/** A parsed `orrery views` command line. */
export interface ViewsArgs {
  readonly command: ViewsCommand;
  readonly dir: string | undefined;
  readonly prune: boolean;
  /** The view name of `show`. */
  readonly name: string | undefined;
  readonly server: string;
  readonly key: string | undefined;
  readonly tls: false | true | { readonly ca: Buffer };
}

const commands: readonly ViewsCommand[] = ['plan', 'apply', 'pull', 'list', 'show', 'help'];
const connectionOptions = ['server', 'key', 'tls', 'tls-ca'];
const allowed: Record<ViewsCommand, readonly string[]> = {
  plan: ['dir', 'prune', ...connectionOptions],
  apply: ['dir', 'prune', ...connectionOptions],
  pull: ['dir', ...connectionOptions],
  list: connectionOptions,
  show: connectionOptions,
  help: [],
};

const viewsOptions = {
  dir: { type: 'string' },
  prune: { type: 'boolean' },
  server: { type: 'string' },
  key: { type: 'string' },
  tls: { type: 'boolean' },
  'tls-ca': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Parses the arguments after `orrery views`; throws a USAGE ViewsCliError naming the problem. */
export function parseViewsArgs(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ViewsArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: viewsOptions,
    });
  } catch (error) {
    throw new ViewsCliError('VIEWS_USAGE', optionProblem(error as Error & { code?: string }));
  }
  const { values, positionals } = parsed;
  const [word, ...rest] = positionals;
  if (values.help || word === undefined || word === 'help') return { ...defaults(env), command: 'help' };
  if (!commands.includes(word as ViewsCommand)) throw new ViewsCliError('VIEWS_USAGE', `unknown command '${word}'`);
  const command = word as ViewsCommand;
  for (const option of Object.keys(values)) {
    if (!allowed[command].includes(option))
      throw new ViewsCliError('VIEWS_USAGE', `option --${option} does not apply to '${command}'`);
  }
  if (command === 'show' ? rest.length !== 1 : rest.length > 0) {
    throw new ViewsCliError(
      'VIEWS_USAGE',
      command === 'show' ? "'show' takes one view name" : `unexpected argument '${rest[0]}'`,
    );
  }
  if (allowed[command].includes('dir') && !values.dir)
    throw new ViewsCliError('VIEWS_USAGE', `'${command}' needs --dir <folder>`);
  const server = values.server ?? defaults(env).server;
  if (!/^.+:\d+$/.test(server)) throw new ViewsCliError('VIEWS_USAGE', `server address '${server}' is not host:port`);
  return {
    command,
    dir: values.dir,
    prune: values.prune ?? false,
    name: command === 'show' ? rest[0] : undefined,
    server,
    key: values.key ?? defaults(env).key,
    tls: values['tls-ca'] ? { ca: readCa(values['tls-ca']) } : (values.tls ?? false),
  };
}

/** parseArgs' complaint in our words (its own wording changes between Node versions). */
function optionProblem(error: Error & { code?: string }): string {
  const option = /'(--?[^' ]+)/.exec(error.message)?.[1] ?? '?';
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown option '${option}'`;
  if (error.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const name = option.startsWith('--') ? option.slice(2) : option === '-h' ? 'help' : '';
    const takesValue = name in viewsOptions && viewsOptions[name as keyof typeof viewsOptions].type === 'string';
    return takesValue ? `option ${option} needs a value` : `option ${option} does not take a value`;
  }
  return error.message;
}

function defaults(env: Readonly<Record<string, string | undefined>>): Omit<ViewsArgs, 'command'> {
  return {
    dir: undefined,
    prune: false,
    name: undefined,
    server: env.ORRERY_FLIGHT_SQL_ADDR || '127.0.0.1:50051',
    key: env.ORRERY_API_KEY || undefined,
    tls: false,
  };
}

function readCa(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ViewsCliError('VIEWS_FILE_ERROR', `cannot read --tls-ca '${path}': ${(error as Error).message}`);
  }
}
