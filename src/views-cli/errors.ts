// Errors of `orrery views`: each has a stable code and the exit status the CLI ends with.
import { OrreryError, declareErrors } from '../errors/index.js';

/** Exit statuses of `orrery views`. */
export const exitStatus = {
  /** Done; for plan, nothing would be refused. */
  ok: 0,
  /** The command failed: server unreachable, credentials refused, I/O error. */
  failed: 1,
  /** Bad usage, an invalid file, or a statement the server refused (or would refuse). */
  refused: 2,
} as const;

export const viewsCliErrors = declareErrors('views-cli', {
  VIEWS_USAGE: {
    status: 'INVALID_ARGUMENT',
    meaning: '`orrery views` was called with an unknown command, option or argument (exit 2)',
  },
  VIEWS_DIR_NOT_FOUND: { status: 'NOT_FOUND', meaning: 'the --dir folder does not exist (exit 2)' },
  VIEWS_FILE_ERROR: {
    status: 'FAILED_PRECONDITION',
    meaning: 'a file or folder could not be read or written (exit 1)',
  },
  VIEWS_SERVER_ERROR: {
    status: 'UNAVAILABLE',
    meaning: 'a call to the server failed: unreachable, credentials refused, or an error (exit 1)',
  },
  VIEWS_BAD_DEFINITIONS_RESULT: {
    status: 'INTERNAL',
    meaning: 'the server answered list_view_set_definitions() without the expected columns (exit 1)',
  },
  VIEWS_DEFINITION_NOT_FOUND: {
    status: 'NOT_FOUND',
    meaning: '`orrery views show` names no stored definition (exit 1)',
  },
});

export type ViewsCliErrorCode = keyof typeof viewsCliErrors.codes;

const exitStatusOf: Record<ViewsCliErrorCode, number> = {
  VIEWS_USAGE: exitStatus.refused,
  VIEWS_DIR_NOT_FOUND: exitStatus.refused,
  VIEWS_FILE_ERROR: exitStatus.failed,
  VIEWS_SERVER_ERROR: exitStatus.failed,
  VIEWS_BAD_DEFINITIONS_RESULT: exitStatus.failed,
  VIEWS_DEFINITION_NOT_FOUND: exitStatus.failed,
};

/** An error `orrery views` reports as `orrery views: <message>` before exiting with `exitStatus`. */
export class ViewsCliError extends OrreryError {
  declare readonly code: ViewsCliErrorCode;
  readonly exitStatus: number;

  constructor(code: ViewsCliErrorCode, message: string) {
    super(code, message);
    this.name = 'ViewsCliError';
    this.exitStatus = exitStatusOf[code];
  }
}
