import { OrreryError } from '../errors/index.js';
import { sqlErrors } from './errors.js';

/** The codes of the materialized-view DDL parser's errors (declared in errors.ts). */
export type DdlErrorCode = Extract<keyof typeof sqlErrors.codes, `DDL_${string}`>;

/**
 * A malformed CREATE / DROP MATERIALIZED VIEW statement: always INVALID_ARGUMENT, with a
 * stable `code` and a message naming the offending input (and its line:column when it has one).
 */
export class DdlError extends OrreryError {
  declare readonly code: DdlErrorCode;

  constructor(code: DdlErrorCode, message: string) {
    super(code, message);
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
