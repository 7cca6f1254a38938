// SQL text: the one tokenizer that reads statements before DuckDB does (the DDL parser, `orrery views`).
export { SqlLexer, SqlTextError, positionOf, tokenize, type SqlToken } from './lexer.js';
