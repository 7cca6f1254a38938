import { FlightSqlError } from '../flight/index.js';

/** Stable codes of the materialized-view DDL parser's errors; never reused. */
export type DdlErrorCode =
  /** A token is missing or out of place, or a literal, comment or parenthesis is not closed. */
  | 'DDL_SYNTAX_ERROR'
  /** Text other than comments follows the statement's `;`. */
  | 'DDL_MULTIPLE_STATEMENTS'
  /** A clause other SQL dialects accept (AS <query>, IF NOT EXISTS, CASCADE, a qualified name) that Orrery does not. */
  | 'DDL_UNSUPPORTED_CLAUSE'
  /** The view name breaks the naming rule, starts with `__`, or is `source`. */
  | 'DDL_INVALID_NAME'
  /** A WITH option Orrery does not know. */
  | 'DDL_UNKNOWN_OPTION'
  /** A WITH option given twice. */
  | 'DDL_REPEATED_OPTION'
  /** A required WITH option is absent. */
  | 'DDL_MISSING_OPTION'
  /** A WITH option's value has the wrong type or form (empty query, bad delta, bad update_group, ...). */
  | 'DDL_INVALID_OPTION_VALUE';

/**
 * A malformed CREATE / DROP MATERIALIZED VIEW statement: always INVALID_ARGUMENT, with a
 * stable `code` and a message naming the offending input (and its line:column when it has one).
 */
export class DdlError extends FlightSqlError {
  constructor(
    readonly code: DdlErrorCode,
    message: string,
  ) {
    super('INVALID_ARGUMENT', message);
    this.name = 'DdlError';
  }
}

export const syntax = (message: string): DdlError => new DdlError('DDL_SYNTAX_ERROR', message);
export const unsupported = (message: string): DdlError => new DdlError('DDL_UNSUPPORTED_CLAUSE', message);
export const invalidValue = (message: string): DdlError => new DdlError('DDL_INVALID_OPTION_VALUE', message);

/** Text cut to 40 characters with whitespace runs shown as one space, for quoting in a message. */
export function clip(text: string): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > 40 ? `${flat.slice(0, 39)}…` : flat;
}
