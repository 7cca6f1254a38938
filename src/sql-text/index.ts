// SQL text: the one tokenizer that reads statements before DuckDB does (the DDL parser, `orrery views`).
export { SqlLexer, positionOf, statementWords, tokenize, type SqlToken, type StatementWords } from './lexer.js';
export { SqlTextError } from './errors.js';
