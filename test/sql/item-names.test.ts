// Issue 13: the name Orrery gives a select item it rewrites (src/sql/item-names.ts) is the name DuckDB gives the
// item as written, whatever comments the statement holds in or around a cast's type: each item's name is compared
// with DuckDB's own, from the same text described in process.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import type { Node } from '../../src/sql/partition-pruning.js';
import { selectItemName } from '../../src/sql/item-names.js';

const items = [
  'x::/*c*/VARCHAR(3)',
  'x:: /* c */ VARCHAR(3)',
  'x::--c\nVARCHAR(3)',
  'x::VARCHAR/*c*/(3)',
  'x::VARCHAR(/*c*/3)',
  'x::VARCHAR(3 /*c*/)',
  'x::VARCHAR(3)--c\n',
  'x::"VARCHAR"/*c*/(3)',
  'x::VARCHAR(3)/*c*/[]',
  'x::/*c*/VARCHAR(3)[/*c*/]',
  'level::/*c*/NUMERIC',
  'level::DECIMAL/*c*/(20)',
  'level::DECIMAL(20/*,*/, 2)',
  'level::DOUBLE/*c*/PRECISION',
  'level::DOUBLE--c\nPRECISION',
  'time::/*c*/TIMESTAMP(3)',
  'time::TIMESTAMP/*c*/WITH TIME ZONE',
  "x::/*'*/VARCHAR(4)",
  "x || '/*'::/*c*/VARCHAR(5)",
  'x::VARCHAR(/* /* nested */ */6)',
  'CAST(x AS /*c*/VARCHAR(3))',
  'CAST(x AS VARCHAR/*c*/(3))',
  'CAST(x AS VARCHAR(3)--c\n)',
  'CAST(x /* AS y */ AS DECIMAL(20 /*c*/))',
  'TRY_CAST(x AS /* AS */ NUMERIC)',
  'CAST /* /* é */ */ (x AS VARCHAR(7))',
  '/* ééé */ x::/* ü */VARCHAR(8) || x::VARCHAR(9)',
];

describe('select item names (issue 13)', () => {
  it("names each cast as DuckDB does, comments in its type's text or not", async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    await engine.execute('CREATE TABLE t (x VARCHAR, level INTEGER, "time" TIMESTAMP)');
    const ours: Array<string | null> = [];
    const duckdb: string[] = [];
    for (const item of items) {
      const text = `SELECT ${item} FROM t`;
      duckdb.push((await engine.describe(text)).schema.fields[0].name);
      const tree = (await engine.parseSelect(text))!;
      const [node] = (tree.statements[0].node as Node).select_list as Node[];
      ours.push(await selectItemName(engine, node, text));
    }
    assert.deepEqual(ours, duckdb);
  });
});
