// Flight SQL metadata commands: the mandated schemas, exactly, and the filters.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import type { Schema } from 'apache-arrow';
import { decodeSchema, type TestFlightClient } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

const describeSchema = (schema: Schema): string[] =>
  schema.fields.map((f) => `${f.name}:${f.type}${f.nullable ? '' : ' NOT NULL'}`);

describe('metadata commands', () => {
  const fixture = useOrrery();
  let c: TestFlightClient;
  before(async () => {
    c = fixture.admin;
    await c.updateCount('CREATE TABLE meta_items (id BIGINT, name VARCHAR, price DECIMAL(10,2))');
    await c.updateCount('CREATE TABLE meta_x1 (a INTEGER)');
    await c.updateCount('CREATE VIEW meta_view AS SELECT id FROM meta_items');
  });

  it('GetCatalogs', async () => {
    const { info, table } = await c.command('CommandGetCatalogs');
    assert.deepEqual(describeSchema(info.schema), ['catalog_name:Utf8 NOT NULL']);
    assert.deepEqual([...table.getChild('catalog_name')!], ['orrery']);
  });

  it('GetDbSchemas with a pattern', async () => {
    const { info, table } = await c.command('CommandGetDbSchemas', { catalog: 'orrery', dbSchemaFilterPattern: 'ma%' });
    assert.deepEqual(describeSchema(info.schema), ['catalog_name:Utf8', 'db_schema_name:Utf8 NOT NULL']);
    assert.deepEqual(
      table.toArray().map((r) => [r.catalog_name, r.db_schema_name]),
      [['orrery', 'main']],
    );
    const none = await c.command('CommandGetDbSchemas', { catalog: 'elsewhere' });
    assert.equal(none.table.numRows, 0);
  });

  it('GetTables filters by name pattern and by type, case-insensitively, BASE TABLE meaning TABLE', async () => {
    const { info, table } = await c.command('CommandGetTables', {
      tableNameFilterPattern: 'meta\\_%',
      tableTypes: ['BASE TABLE', 'table'],
    });
    assert.deepEqual(describeSchema(info.schema), [
      'catalog_name:Utf8',
      'db_schema_name:Utf8',
      'table_name:Utf8 NOT NULL',
      'table_type:Utf8 NOT NULL',
    ]);
    assert.deepEqual(
      table.toArray().map((r) => [r.catalog_name, r.db_schema_name, r.table_name, r.table_type]),
      [
        ['orrery', 'main', 'meta_items', 'TABLE'],
        ['orrery', 'main', 'meta_x1', 'TABLE'],
      ],
    );
    const views = await c.command('CommandGetTables', { tableTypes: ['view'] });
    assert.deepEqual([...views.table.getChild('table_name')!], ['meta_view']);
    const underscore = await c.command('CommandGetTables', { tableNameFilterPattern: 'meta_x_' });
    assert.deepEqual([...underscore.table.getChild('table_name')!], ['meta_x1']);
  });

  it('GetTables leaves out for a key what a deny rule refuses it a statement reading (issue 13)', async () => {
    const names = async (client: TestFlightClient): Promise<unknown[]> => [
      ...(
        await client.command('CommandGetTables', { tableNameFilterPattern: 'meta%', includeSchema: true })
      ).table.getChild('table_name')!,
    ];
    assert.deepEqual(await names(fixture.reader), ['meta_items', 'meta_view', 'meta_x1']);
    const added = await c.query(
      `SELECT msg FROM deny_queries('user_id = ''reader'' AND list_contains(tables, ''meta_items'')', 'closed')`,
    );
    const rule = /^added rule (\d+)$/.exec(String(added.getChild('msg')!.get(0)))![1];
    try {
      assert.deepEqual(await names(fixture.reader), ['meta_view', 'meta_x1']);
      assert.deepEqual(await names(c), ['meta_items', 'meta_view', 'meta_x1']);
    } finally {
      await c.query(`SELECT msg FROM remove_query_denial(${rule})`);
    }
    assert.deepEqual(await names(fixture.reader), ['meta_items', 'meta_view', 'meta_x1']);
  });

  it('GetTables with include_schema returns each table schema with column metadata', async () => {
    const { info, table } = await c.command('CommandGetTables', {
      tableNameFilterPattern: 'meta_items',
      includeSchema: true,
    });
    assert.equal(describeSchema(info.schema)[4], 'table_schema:Binary NOT NULL');
    assert.equal(table.numRows, 1);
    const schema = decodeSchema(table.getChild('table_schema')!.get(0) as Uint8Array);
    assert.deepEqual(describeSchema(schema), ['id:Int64', 'name:Utf8', 'price:Decimal[10e+2]']);
    assert.equal(schema.fields[2].metadata.get('ARROW:FLIGHT:SQL:TYPE_NAME'), 'DECIMAL(10,2)');
    assert.equal(schema.fields[2].metadata.get('ARROW:FLIGHT:SQL:PRECISION'), '10');
    assert.equal(schema.fields[0].metadata.get('ARROW:FLIGHT:SQL:TABLE_NAME'), 'meta_items');
    assert.equal(schema.fields[0].metadata.get('ARROW:FLIGHT:SQL:SCHEMA_NAME'), 'main');
  });

  it('GetTableTypes', async () => {
    const { info, table } = await c.command('CommandGetTableTypes');
    assert.deepEqual(describeSchema(info.schema), ['table_type:Utf8 NOT NULL']);
    assert.deepEqual([...table.getChild('table_type')!], ['TABLE', 'VIEW']);
  });

  it('key commands answer zero rows in their mandated schemas', async () => {
    const pk = await c.command('CommandGetPrimaryKeys', { table: 'meta_items' });
    assert.deepEqual(describeSchema(pk.info.schema), [
      'catalog_name:Utf8',
      'db_schema_name:Utf8',
      'table_name:Utf8 NOT NULL',
      'column_name:Utf8 NOT NULL',
      'key_sequence:Int32 NOT NULL',
      'key_name:Utf8',
    ]);
    assert.equal(pk.table.numRows, 0);
    const fkSchema = [
      'pk_catalog_name:Utf8',
      'pk_db_schema_name:Utf8',
      'pk_table_name:Utf8 NOT NULL',
      'pk_column_name:Utf8 NOT NULL',
      'fk_catalog_name:Utf8',
      'fk_db_schema_name:Utf8',
      'fk_table_name:Utf8 NOT NULL',
      'fk_column_name:Utf8 NOT NULL',
      'key_sequence:Int32 NOT NULL',
      'fk_key_name:Utf8',
      'pk_key_name:Utf8',
      'update_rule:Uint8 NOT NULL',
      'delete_rule:Uint8 NOT NULL',
    ];
    for (const [name, value] of [
      ['CommandGetExportedKeys', { table: 'meta_items' }],
      ['CommandGetImportedKeys', { table: 'meta_items' }],
      ['CommandGetCrossReference', { pkTable: 'meta_items', fkTable: 'meta_x1' }],
    ] as const) {
      const { info, table } = await c.command(name, value);
      assert.deepEqual(describeSchema(info.schema), fkSchema, name);
      assert.equal(table.numRows, 0);
    }
  });

  it('GetSqlInfo: uint32 ids, dense union values in the arm each id needs', async () => {
    const { info, table } = await c.command('CommandGetSqlInfo', { info: [0, 1, 4, 8, 504, 508, 562] });
    assert.deepEqual(describeSchema(info.schema), [
      'info_name:Uint32 NOT NULL',
      'value:Union<Utf8 | Bool | Int64 | Int32 | List<Utf8> | Map<{key:Int32, value:List<Int32>}>> NOT NULL',
    ]);
    const value = table.getChild('value')!;
    const rows = table.toArray().map((r, i) => [r.info_name, value.data[0].typeIds[i]]);
    assert.deepEqual(rows, [
      [0, 0],
      [1, 0],
      [4, 1],
      [8, 3],
      [504, 0],
      [508, 4],
      [562, 2],
    ]);
    assert.equal(value.get(0), 'Orrery');
    assert.equal(value.get(2), true);
    assert.equal(value.get(3), 1); // transactions (issue 12)
    assert.equal(value.get(6), 3n); // default isolation REPEATABLE READ (issue 12)
  });

  it('GetSqlInfo names the server and Arrow versions of the installed packages (issue 8)', async () => {
    const root = new URL('../../../', import.meta.url);
    const version = (path: string): string =>
      (JSON.parse(readFileSync(new URL(path, root), 'utf8')) as { version: string }).version;
    const { table } = await c.command('CommandGetSqlInfo', { info: [1, 2] });
    assert.deepEqual(
      [...table.getChild('value')!],
      [version('package.json'), version('node_modules/apache-arrow/package.json')],
    );
  });

  it('GetSqlInfo with no ids lists 17 rows below 508, then the keyword and function lists', async () => {
    const { table } = await c.command('CommandGetSqlInfo');
    const ids = [...table.getChild('info_name')!] as number[];
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
    );
    assert.equal(ids.filter((id) => id < 508).length, 17);
    assert.deepEqual(ids.slice(17, 22), [508, 509, 510, 511, 512]);
  });

  it('GetXdbcTypeInfo, all and by data type', async () => {
    const all = await c.command('CommandGetXdbcTypeInfo');
    assert.equal(describeSchema(all.info.schema).length, 19);
    assert.ok(all.table.numRows >= 10);
    const bigint = await c.command('CommandGetXdbcTypeInfo', { dataType: -5 });
    assert.deepEqual([...bigint.table.getChild('type_name')!], ['BIGINT']);
  });
});
