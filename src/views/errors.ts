/** A view set definition that cannot be used; the message names the query and the rule. */
export class ViewDefinitionError extends Error {
  constructor(
    message: string,
    readonly status: 'INVALID_ARGUMENT' | 'FAILED_PRECONDITION' | 'ALREADY_EXISTS' | 'NOT_FOUND' = 'INVALID_ARGUMENT',
  ) {
    super(message);
    this.name = 'ViewDefinitionError';
  }
}
