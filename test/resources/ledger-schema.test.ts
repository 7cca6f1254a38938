// The ledger's tables are created once per metadata handle under a lock that keeps two servers from
// creating them at once. Through a pool, consecutive queries may run on different connections: the
// lock must not outlive the creation on any of them, or every other server waits for it forever.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ensureLedger } from '../../src/resources/index.js';
import { startTestPostgres, type TestPostgres } from '../lakehouse/lakehouse-fixtures.js';

describe('the resource ledger schema', () => {
  let postgres: TestPostgres;
  const clients: pg.Client[] = [];
  before(async () => {
    postgres = await startTestPostgres();
    for (let i = 0; i < 3; i++) {
      const client = new pg.Client({ connectionString: postgres.connectionString });
      await client.connect();
      clients.push(client);
    }
  });
  after(async () => {
    for (const client of clients) await client.end();
    await postgres?.close();
  });

  it('is created with no advisory lock left held, when each query runs on another connection (a pool)', async () => {
    let next = 0;
    // Each query on the other connection, as a pool may hand them out.
    const pooled = {
      query: (text: string, values?: unknown[]) => clients[next++ % clients.length].query(text, values),
    };
    await ensureLedger(pooled);
    const { rows } = await postgres.pool.query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory'");
    assert.equal(rows[0].n, 0);
    const tables = await postgres.pool.query(
      "SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'resource_ledger'",
    );
    assert.equal(tables.rows[0].n, 1);
  });
});
