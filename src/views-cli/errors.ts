// Errors of `orrery views`: each has a stable code and the exit status the CLI ends with.

/** Exit statuses of `orrery views`. */
export const exitStatus = {
  /** Done; for plan, nothing would be refused. */
  ok: 0,
  /** The command failed: server unreachable, credentials refused, I/O error. */
  failed: 1,
  /** Bad usage, an invalid file, or a statement the server refused (or would refuse). */
  refused: 2,
} as const;

export type ViewsCliErrorCode =
  'USAGE' | 'DIR_NOT_FOUND' | 'FILE_ERROR' | 'SERVER_ERROR' | 'BAD_DEFINITIONS_RESULT' | 'DEFINITION_NOT_FOUND';

const exitStatusOf: Record<ViewsCliErrorCode, number> = {
  USAGE: exitStatus.refused,
  DIR_NOT_FOUND: exitStatus.refused,
  FILE_ERROR: exitStatus.failed,
  SERVER_ERROR: exitStatus.failed,
  BAD_DEFINITIONS_RESULT: exitStatus.failed,
  DEFINITION_NOT_FOUND: exitStatus.failed,
};

/** An error `orrery views` reports as `orrery views: <message>` before exiting with `exitStatus`. */
export class ViewsCliError extends Error {
  readonly exitStatus: number;

  constructor(
    readonly code: ViewsCliErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ViewsCliError';
    this.exitStatus = exitStatusOf[code];
  }
}
