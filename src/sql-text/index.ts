// SQL text: the one tokenizer that reads statements before DuckDB does (the DDL parser, `orrery views`).
export { SqlLexer, positionOf, tokenize, type SqlToken } from './lexer.js';
export { SqlTextError } from './errors.js';
