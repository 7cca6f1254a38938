// A full pool's oldest idle connection, set up with views alone, is set up again for a setup that
// replaces every one of them (a rollup's never-stale read under steady ingestion: a new setup at every
// read), instead of a new connection being opened and the old one closed; its objects are then exactly
// the new setup's, as on a new connection, and another setup's views never leak to a statement.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ConnectionPool } from '../../src/engine/connection-pool.js';

const view = (name: string, value: number): string => `CREATE OR REPLACE TEMP VIEW "${name}" AS SELECT ${value} AS x`;

async function values(connection: DuckDBConnection, sql: string): Promise<unknown[][]> {
  return (await connection.runAndReadAll(sql)).getRows();
}

/** The temporary views a connection sees, by name. */
async function tempViews(connection: DuckDBConnection): Promise<string[]> {
  const rows = await values(
    connection,
    `SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal ORDER BY view_name`,
  );
  return rows.map(([name]) => String(name));
}

describe('connection pool', () => {
  it("sets the full pool's oldest connection up again for views replacing all of its own, and never one with other objects", async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const told: DuckDBConnection[] = [];
    const pool = new ConnectionPool(instance, [], 2, (c) => told.push(c));
    try {
      const first = await pool.acquire([view('v', 1)]);
      const second = await pool.acquire([view('v', 2), view('w', 2)]);
      pool.release(first.connection, first.key, true);
      pool.release(second.connection, second.key, true);

      // Full: the oldest (views v) is set up again for a setup replacing v (and adding u).
      const again = await pool.acquire([view('v', 3), view('u', 3)]);
      assert.equal(again.connection, first.connection);
      assert.deepEqual(told, [first.connection]);
      assert.deepEqual(await tempViews(again.connection), ['u', 'v']);
      assert.deepEqual(await values(again.connection, 'SELECT x FROM v'), [[3]]);
      pool.release(again.connection, again.key, true);

      // The oldest now has views v and w: a setup of v alone does not replace w, so it gets a new connection.
      const other = await pool.acquire([view('v', 4)]);
      assert.notEqual(other.connection, second.connection);
      assert.deepEqual(await tempViews(other.connection), ['v']);
      assert.deepEqual(await values(other.connection, 'SELECT x FROM v'), [[4]]);
      pool.release(other.connection, other.key, true);

      // A setup that is not views alone never takes one.
      const attach = await pool.acquire([`ATTACH ':memory:' AS elsewhere`]);
      assert.deepEqual(await tempViews(attach.connection), []);
      pool.release(attach.connection, attach.key, false);
    } finally {
      pool.close();
      instance.closeSync();
    }
  });

  it('leaves a pool that is not full as it is: each setup keeps its own connection', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const pool = new ConnectionPool(instance, [], 4);
    try {
      const a = await pool.acquire([view('v', 1)]);
      pool.release(a.connection, a.key, true);
      const b = await pool.acquire([view('v', 2)]);
      assert.notEqual(b.connection, a.connection);
      pool.release(b.connection, b.key, true);
      const again = await pool.acquire([view('v', 1)]);
      assert.equal(again.connection, a.connection);
      assert.deepEqual(await values(again.connection, 'SELECT x FROM v'), [[1]]);
      pool.release(again.connection, again.key, true);
    } finally {
      pool.close();
      instance.closeSync();
    }
  });
});
