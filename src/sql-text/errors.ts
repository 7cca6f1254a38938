import { OrreryError, declareErrors } from '../errors/index.js';

declareErrors('sql-text', {
  SQL_TEXT_UNTERMINATED: {
    status: 'INVALID_ARGUMENT',
    meaning: 'SQL text holds a literal, quoted name or comment that is never closed',
  },
});

/** SQL text that cannot be split into tokens: a literal or comment that is never closed. */
export class SqlTextError extends OrreryError {
  constructor(message: string) {
    super('SQL_TEXT_UNTERMINATED', message);
    this.name = 'SqlTextError';
  }
}
