// Orrery's error model, which every component may import (it imports nothing of Orrery): an error a
// client or an operator reads carries a stable `code`, the gRPC `status` it is answered with, and a
// message naming the offending input. Each component declares its codes once, in its errors.ts, with
// `declareErrors`; docs/errors.md has a row for every declared code (test/unit/error-codes.test.ts).

/** The gRPC status names Orrery answers with. */
export type ErrorStatus =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'PERMISSION_DENIED'
  | 'UNAUTHENTICATED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'UNIMPLEMENTED'
  | 'CANCELLED'
  | 'DEADLINE_EXCEEDED'
  | 'UNAVAILABLE'
  | 'DATA_LOSS'
  | 'ABORTED'
  | 'INTERNAL';

/** What a code means to the client: its gRPC status (and HTTP status where one answers over HTTP). */
export interface ErrorCodeSpec {
  readonly status: ErrorStatus;
  readonly httpStatus?: number;
  /** One sentence, for the reader of docs/errors.md and of the code. */
  readonly meaning: string;
}

/** A declared code and the component that declared it. */
export interface DeclaredErrorCode extends ErrorCodeSpec {
  readonly code: string;
  readonly component: string;
}

const declared = new Map<string, DeclaredErrorCode>();

/**
 * An error a client or an operator is meant to read. Its code must have been declared (by
 * `declareErrors`); constructing one with an unknown code is a bug and throws.
 */
export class OrreryError extends Error {
  readonly status: ErrorStatus;
  readonly httpStatus: number | undefined;

  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    const spec = declared.get(code);
    if (!spec) throw new Error(`error code '${code}' is not declared (declareErrors in the component's errors.ts)`);
    this.name = 'OrreryError';
    this.status = spec.status;
    this.httpStatus = spec.httpStatus;
  }
}

/** A component's codes, and a constructor that accepts only them. */
export interface ErrorCatalog<Code extends string> {
  readonly component: string;
  readonly codes: Readonly<Record<Code, ErrorCodeSpec>>;
  /** A new error with one of this catalog's codes. */
  error(code: Code, message: string, options?: ErrorOptions): OrreryError & { readonly code: Code };
}

/**
 * Declares a component's error codes. Codes are global and never reused: declaring a code twice
 * (in any component) throws when the second module loads.
 *
 * @example
 * export const ddlErrors = declareErrors('sql', {
 *   DDL_SYNTAX_ERROR: { status: 'INVALID_ARGUMENT', meaning: 'a token is missing or out of place' },
 * });
 * throw ddlErrors.error('DDL_SYNTAX_ERROR', `expected WITH after view name '${name}'`);
 */
export function declareErrors<const Codes extends Record<string, ErrorCodeSpec>>(
  component: string,
  codes: Codes,
): ErrorCatalog<Extract<keyof Codes, string>> {
  for (const [code, spec] of Object.entries(codes)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(code)) throw new Error(`error code '${code}' must be UPPER_SNAKE_CASE`);
    const previous = declared.get(code);
    if (previous) throw new Error(`error code '${code}' of ${component} is already declared by ${previous.component}`);
    declared.set(code, { code, component, ...spec });
  }
  type Code = Extract<keyof Codes, string>;
  return {
    component,
    codes,
    error: (code: Code, message: string, options?: ErrorOptions) =>
      new OrreryError(code, message, options) as OrreryError & { code: Code },
  };
}

/** Every code declared so far (by the modules loaded), in declaration order. */
export function declaredErrorCodes(): DeclaredErrorCode[] {
  return [...declared.values()];
}

/** True for an error of `catalog` (with one of `codes` when given). */
export function isErrorOf<Code extends string>(
  error: unknown,
  catalog: ErrorCatalog<Code>,
  ...codes: Code[]
): error is OrreryError & { readonly code: Code } {
  return (
    error instanceof OrreryError &&
    error.code in catalog.codes &&
    (codes.length === 0 || codes.includes(error.code as Code))
  );
}

export { messageOf } from './messages.js';
export { closeAll, type Closer } from './close-all.js';
