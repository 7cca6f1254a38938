// An admin's macro is judged by its body where a rollup's select_list or a view set's definition calls it
// (engine/varying-functions.ts, withMacros), but not by its parameters' defaults, which duckdb_functions() does not
// show: DuckDB computes a default once, when CREATE MACRO runs, and keeps the value. `CREATE MACRO recent(ts, cutoff
// := now() - INTERVAL 1 DAY) AS ts > cutoff` compares with the moment the macro was made, in every call: not what
// it says, and the same statement run again (a restart, another server) makes another value, so the stored rows of a
// rollup or a view set calling it would no longer be what their query reads. Such a default is refused when the
// macro is made, the one place its text is seen.
import { clockProblem, queryShape, withMacros, type DuckDBEngine } from '../engine/index.js';
import { SqlLexer, tokenize, type SqlToken } from '../sql-text/index.js';

/** A parameter's default as written: `cutoff` and `now() - INTERVAL 1 DAY` of `cutoff := now() - INTERVAL 1 DAY`. */
interface ParameterDefault {
  readonly parameter: string;
  readonly text: string;
}

/**
 * The defaults of a CREATE MACRO's (or CREATE FUNCTION's) parameters, each overload's (`CREATE MACRO f(a) AS a, (a,
 * b := 1) AS a + b`); none for another statement. A parameter list is a parenthesis opened at the statement's top
 * level after the name or after a comma; a default follows `:=` in it, up to the list's next comma or its end.
 */
function parameterDefaults(text: string): ParameterDefault[] {
  let tokens: SqlToken[];
  let i: number; // the word MACRO or FUNCTION
  try {
    // The first words tell a CREATE MACRO without reading the rest of a long statement (an admin's INSERT).
    const lexer = new SqlLexer(text);
    const first = [0, 1, 2, 3, 4]
      .map((n) => lexer.peek(n))
      .map((t) => (t.kind === 'word' ? t.value.toLowerCase() : ''));
    i = first[1] === 'or' ? 3 : 1;
    if (first[i] === 'temp' || first[i] === 'temporary') i++;
    if (first[0] !== 'create' || (first[i] !== 'macro' && first[i] !== 'function')) return [];
    tokens = tokenize(text);
  } catch {
    return []; // DuckDB's parser refuses it
  }
  const defaults: ParameterDefault[] = [];
  let depth = 0;
  let list = false;
  let opened = false;
  let before = ''; // the last top-level token: a list opens after the name (none opened yet) or after a comma
  let parameter = -1; // the first token of the list's parameter at hand: its name
  let from = -1;
  const end = (at: number): void => {
    if (from >= 0)
      defaults.push({ parameter: tokens[parameter].value, text: text.slice(tokens[from].start, tokens[at].start) });
    [parameter, from] = [at + 1, -1];
  };
  for (i++; i < tokens.length; i++) {
    const raw = tokens[i].kind === 'punct' ? tokens[i].raw : '';
    if (raw === '(') {
      if (depth === 0) [list, opened, parameter] = [!opened || before === ',', true, i + 1];
      depth++;
    } else if (raw === ')') {
      depth--;
      if (depth === 0 && list) end(i);
    } else if (depth === 1 && list && raw === ',') {
      end(i);
    } else if (depth === 1 && list && raw === ':' && tokens[i + 1]?.raw === '=') {
      from = i + 2;
      i++;
    }
    if (depth === 0) before = raw;
  }
  return defaults;
}

/**
 * Why an admin's statement may not run: it makes a macro a default of which reads the clock or the engine's state
 * (the engine's macros judged as a rollup judges them); null for any other statement.
 */
export async function macroDefaultProblem(text: string, engine: DuckDBEngine): Promise<string | null> {
  const defaults = parameterDefaults(text);
  if (defaults.length === 0) return null;
  const varying = withMacros(await engine.functions());
  for (const { parameter, text: expression } of defaults) {
    const tree = await engine.parseSelect(`SELECT ${expression}`).catch(() => null);
    if (tree === null) continue; // not one expression: DuckDB's parser refuses the statement
    const problem = clockProblem(
      queryShape(tree),
      'the macro when CREATE MACRO runs (DuckDB computes a default once, so every call would read that moment, and the same CREATE MACRO run again another)',
      varying,
    );
    if (problem !== undefined)
      return `the default of the macro's parameter ${parameter} ${problem}; pass it as an argument, or read it in the macro's body`;
  }
  return null;
}
