// Errors of `orrery resources` / `orrery publish` and of installing resources: each has a stable code.
import { OrreryError, declareErrors } from '../errors/index.js';

/** Exit statuses of `orrery resources` and `orrery publish`. */
export const resourcesExitStatus = {
  ok: 0,
  /** The command failed: server unreachable, credentials refused, I/O error, installation failed. */
  failed: 1,
  /** Bad usage, or the files have errors. */
  invalid: 2,
} as const;

export const resourcesErrors = declareErrors('resources', {
  RESOURCES_USAGE: {
    status: 'INVALID_ARGUMENT',
    meaning: '`orrery resources` or `orrery publish` was called with an unknown command, option or argument (exit 2)',
  },
  RESOURCES_DIR_NOT_FOUND: { status: 'NOT_FOUND', meaning: 'the --dir folder does not exist (exit 2)' },
  RESOURCES_FILE_ERROR: { status: 'FAILED_PRECONDITION', meaning: 'a file or folder could not be read (exit 1)' },
  RESOURCES_SERVER_ERROR: {
    status: 'UNAVAILABLE',
    meaning: 'a call to the server failed: unreachable, credentials refused, or an error (exit 1)',
  },
  RESOURCES_ADMIN_ONLY: {
    status: 'PERMISSION_DENIED',
    meaning:
      "the command reads or changes what only an admin key may (the resource ledger, publications, every audience's rows); the message says what, and that validate runs with any key (exit 1)",
  },
  RESOURCES_LOCKED: {
    status: 'FAILED_PRECONDITION',
    meaning: 'another publication or prune holds the resources lock; the message names its host, pid and start',
  },
  RESOURCES_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning: 'a publication whose resources files have errors (each listed as file: entry: message)',
  },
  RESOURCES_RIGHTS_MISSING: {
    status: 'PERMISSION_DENIED',
    meaning: 'installing or pruning needs rights this server lacks (each listed); nothing was installed or dropped',
  },
  RESOURCES_INSTALL_FAILED: {
    status: 'INTERNAL',
    meaning: 'installing an entry failed; the ledger keeps its progress and the next publish resumes it',
  },
});

export type ResourcesErrorCode = keyof typeof resourcesErrors.codes;

/** An error the CLI reports as `orrery <command>: <message>`. */
export class ResourcesCliError extends OrreryError {
  declare readonly code: ResourcesErrorCode;
  readonly exitStatus: number;

  constructor(code: ResourcesErrorCode, message: string) {
    super(code, message);
    this.name = 'ResourcesCliError';
    this.exitStatus =
      code === 'RESOURCES_USAGE' || code === 'RESOURCES_DIR_NOT_FOUND'
        ? resourcesExitStatus.invalid
        : resourcesExitStatus.failed;
  }
}
