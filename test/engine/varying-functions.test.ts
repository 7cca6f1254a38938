// Issues 13 and 17: what a rollup's buckets and a view set's partitions may not read is judged by name
// (engine/varying-functions.ts). These checks hold that list against the functions the engine has (DuckDB's, its
// extensions', Orrery's macros), so a DuckDB upgrade adding a clock or another varying function fails here rather than
// letting stored rows freeze its value.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  DuckDBEngine,
  clockProblem,
  duckdbBuild,
  effectOnlyFunctions,
  extensionCacheFolder,
  findExtensions,
  queryShape,
  varyingFunctions,
  type FunctionDescription,
} from '../../src/engine/index.js';
import { compatibilityMacros, sketchStatements } from '../../src/views/index.js';

/** Functions of no argument whose value never changes: constants and empty constructors. */
const constants = new Set(['pi', 'version', 'list_value', 'list_pack', 'map']);

const known = (name: string): boolean => varyingFunctions.has(name) || effectOnlyFunctions.has(name);

describe('the functions stored rows may not read (issues 13, 17)', () => {
  let engine: DuckDBEngine;
  let functions: FunctionDescription[];
  before(async () => {
    engine = await DuckDBEngine.create({
      threads: 1,
      extensions: findExtensions(extensionCacheFolder(await duckdbBuild())).files,
      startupSql: [...compatibilityMacros, ...sketchStatements(false)],
    });
    functions = await engine.functions();
  });
  after(() => engine.close());

  it('every function DuckDB marks other than CONSISTENT is known', () => {
    const unknown = functions
      .filter((f) => f.type !== 'macro' && f.stability !== null && f.stability !== 'CONSISTENT')
      .map((f) => `${f.name} (${f.stability})`)
      .filter((f) => !known(f.split(' ')[0].toLowerCase()));
    assert.deepEqual([...new Set(unknown)], []);
  });

  it('every scalar function of no argument is known or a constant (ICU marks its clocks CONSISTENT)', async () => {
    const rows = await engine.values(
      `SELECT DISTINCT lower(function_name) FROM duckdb_functions()
        WHERE function_type = 'scalar' AND len(parameters) = 0 AND varargs IS NULL`,
    );
    const unknown = rows.map(([name]) => String(name)).filter((name) => !known(name) && !constants.has(name));
    assert.deepEqual(unknown.sort(), []);
    // The ICU clocks are among them: the check sees what it is meant to.
    assert.ok(rows.some(([name]) => name === 'current_localtimestamp'));
  });

  it("every macro whose body reads the clock, the engine's state or a random source is known as such", () => {
    const unknown: string[] = [];
    for (const macro of functions.filter((f) => f.type === 'macro' && f.macroTree !== null)) {
      const shape = queryShape(macro.macroTree!);
      const name = macro.name.toLowerCase();
      if (clockProblem(shape, 'rows') !== undefined && !['clock', 'state'].includes(varyingFunctions.get(name) ?? ''))
        unknown.push(`${macro.schema}.${name}: reads the clock or the engine's state`);
      else if ([...shape.functions].some((f) => varyingFunctions.get(f.toLowerCase()) === 'random') && !known(name))
        unknown.push(`${macro.schema}.${name}: reads a random source`);
    }
    assert.deepEqual([...new Set(unknown)], []);
    // Orrery's clock and DuckDB's macros of current_timestamp are among them.
    for (const name of ['__orrery_now', 'now', 'ago', 'pg_conf_load_time'])
      assert.ok(functions.some((f) => f.type === 'macro' && f.name === name && f.macroTree !== null));
  });

  it('every name known is a function of the engine (a misspelt one would guard nothing)', () => {
    const names = new Set(functions.map((f) => f.name.toLowerCase()));
    assert.deepEqual(
      [...varyingFunctions.keys(), ...effectOnlyFunctions].filter((name) => !names.has(name)),
      [],
    );
  });
});
