// Issue 11 item 4: GetTables (what JDBC, ADBC, DBeaver and Grafana call) lists what
// information_schema.tables and SHOW TABLES list, for each key: names it may query, nothing else.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';

const listed = async (c: TestFlightClient): Promise<{ getTables: string[]; informationSchema: string[] }> => {
  const { table } = await c.command('CommandGetTables', {});
  const getTables = table
    .toArray()
    .map(
      (r) => `${String(r.catalog_name)}.${String(r.db_schema_name)}.${String(r.table_name)} ${String(r.table_type)}`,
    );
  const rows = (await c.query('SELECT * FROM information_schema.tables')).toArray();
  const informationSchema = rows.map(
    (r) =>
      `${String(r.table_catalog)}.${String(r.table_schema)}.${String(r.table_name)} ${r.table_type === 'VIEW' ? 'VIEW' : 'TABLE'}`,
  );
  return { getTables: getTables.sort(), informationSchema: informationSchema.sort() };
};

describe('GetTables and information_schema.tables (#11)', () => {
  const fixture = useOrrery({}, 'serve');

  before(async () => {
    await fixture.admin.query('CREATE SCHEMA backstage');
    await fixture.admin.query("CREATE TABLE backstage.secrets AS SELECT 'x' AS s");
  });

  for (const who of ['admin', 'reader'] as const) {
    it(`agree for ${who === 'admin' ? 'an admin' : 'a key that is not an admin'}`, async () => {
      const { getTables, informationSchema } = await listed(fixture[who]);
      assert.deepEqual(getTables, informationSchema);
      assert.ok(getTables.includes('orrery.main.log_entries TABLE'), getTables.join(', '));
      assert.equal(getTables.includes('orrery.backstage.secrets TABLE'), who === 'admin');
    });
  }
});
