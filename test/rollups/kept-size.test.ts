// Issue 17: a kept table's rows and bytes (kept-size.ts), measured in it by its name: every type the values of a
// rollup's stored rows or tails take (strings, lists, a sketch's MAP, structs with quoted field names), and a table
// DuckDB wrote out to disk in part as it made it, under its memory_limit, counted whole.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { keptColumnsSql, keptRowBytes, keptSizeSql } from '../../src/rollups/index.js';
import { keepTailRowSql, tailRingSql } from '../../src/rollups/tail-values.js';

/** The rows and bytes keptSizeSql measures of table `name` (alone in its database `name`), made of `select`. */
async function measured(connection: DuckDBConnection, name: string, select: string): Promise<[bigint, bigint]> {
  const table = `${name}.main.${name}`;
  await connection.run(`ATTACH ':memory:' AS ${name}`);
  await connection.run(`CREATE TABLE ${table} AS ${select}`);
  const columns = (await connection.runAndReadAll(keptColumnsSql(table)))
    .getRows()
    .map(([n, t]) => [String(n), String(t)] as const);
  const [[rows, bytes]] = (await connection.runAndReadAll(keptSizeSql(table, columns))).getRows();
  return [rows as bigint, bytes as bigint];
}

describe('kept tables measured by name (issue 17)', () => {
  it('measures each type by its values: strings, lists, maps, structs (quoted names too), a ring of tails', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      // 16 a value beside its bytes: 'abc' 3; [1, 2, 3] 3 x 4; {'k': 1} 1 + 8; the struct 2 + 8 + 1 x 4; NULL none.
      assert.deepEqual(
        await measured(
          connection,
          'typed',
          `SELECT 'abc' AS s, [1, 2, 3]::INTEGER[] AS l, MAP {'k': 1::BIGINT} AS m,
             {'a b': 'xy', 'c"d': 1.5::DOUBLE, 'e': [7]::INTEGER[]} AS st, NULL::VARCHAR AS n, 42::BIGINT AS i`,
        ),
        [1n, 16n * 6n + 3n + 12n + 9n + 14n + 0n + 8n],
      );
      // A ring's row: the list of its aggregate's rows (a struct each).
      const [, ring] = await measured(
        connection,
        'ring',
        `SELECT 1::BIGINT AS __id, list(__t) AS __rows FROM (SELECT 'h' || i AS host, i AS n FROM range(10) t(i)) AS __t`,
      );
      assert.equal(ring, 16n + 8n + 16n + 10n * (2n + 8n));
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it("a ring's row answers, as it is put in, the bytes its measure gives: every type, row after row", async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      // An aggregate's rows of every type a rollup's tail takes (strings, lists, a sketch's MAP, quoted struct fields,
      // NULLs), of varying sizes from one row to the next.
      const aggregate = (id: number): string =>
        `SELECT 'h' || i || repeat('x', ${id} * i) AS host, i AS n, [i, ${id}]::INTEGER[] AS l,
           MAP {'k' || i: ${id}::BIGINT} AS m, {'a b': repeat('y', i), 'c"d': i * 1.5} AS st,
           CASE WHEN i % 2 = 0 THEN 'even' END AS maybe FROM range(${id} % 7) t(i)`;
      const table = 'ring.main.ring';
      const { attach, create } = tailRingSql(table, aggregate(1));
      await connection.run(attach);
      await connection.run(create);
      const columns = (await connection.runAndReadAll(keptColumnsSql(table)))
        .getRows()
        .map(([n, t]) => [String(n), String(t)] as const);
      for (let id = 1; id <= 20; id++) {
        const answered = (
          await connection.runAndReadAll(keepTailRowSql(table, id, aggregate(id), keptRowBytes(columns)))
        ).getRows();
        const [[rows, bytes]] = (await connection.runAndReadAll(keptSizeSql(table, columns, `__id = ${id}`))).getRows();
        assert.equal(rows, 1n);
        assert.deepEqual(answered, [[bytes]], `row ${id}`);
      }
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });

  it('counts a table DuckDB wrote out to disk in part as it made it, near its memory_limit', async () => {
    const spill = mkdtempSync(join(tmpdir(), 'orrery-kept-size-'));
    const instance = await DuckDBInstance.create(':memory:', { memory_limit: '48MB', temp_directory: spill });
    const connection = await instance.connect();
    try {
      // 27,000 strings of 3 KB: 81 MB of values in 48 MB of memory.
      const [rows, bytes] = await measured(
        connection,
        'spilled',
        `SELECT 'h' || i || repeat('x', 3000) AS host FROM range(27000) t(i)`,
      );
      const [[memory, disk]] = (
        await connection.runAndReadAll(
          `SELECT sum(memory_usage_bytes), sum(temporary_storage_bytes) FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'`,
        )
      ).getRows();
      assert.ok(Number(disk) > 0, 'written out in part');
      assert.ok(Number(memory) < 64 * 2 ** 20, `${Number(memory)} bytes in memory`);
      assert.equal(rows, 27_000n);
      assert.ok(bytes > 27_000n * 3000n, `${bytes} bytes measured`);
    } finally {
      connection.closeSync();
      instance.closeSync();
      rmSync(spill, { recursive: true, force: true });
    }
  });
});
