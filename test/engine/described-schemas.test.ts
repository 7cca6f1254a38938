// Issue 10: statements of the same shape share their schema objects, so the wire encoding kept
// per schema object is made once rather than once per statement; statements that differ in any
// column name, type (down to a DECIMAL's scale, an ENUM's members, a STRUCT's fields) or
// parameter type get schemas of their own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';

describe('described schemas (issue 10)', () => {
  it('statements of one shape share their schemas; any difference gives schemas of their own', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    const first = await engine.describe('SELECT 1 AS one');
    const again = await engine.describe('SELECT 2 AS one');
    assert.equal(again.schema, first.schema, 'same column name and type: one Schema object');
    assert.equal(again.parameterSchema, first.parameterSchema);
    const held = await engine.describeAndHold('SELECT 3 AS one');
    held.held?.close();
    assert.equal(held.description.schema, first.schema, 'describeAndHold shares them too');

    const shapes = [
      'SELECT 1 AS one',
      'SELECT 1 AS two',
      "SELECT 'x' AS one",
      'SELECT 1::BIGINT AS one',
      'SELECT 1.5::DECIMAL(10, 2) AS one',
      'SELECT 1.5::DECIMAL(10, 3) AS one',
      "SELECT 'a'::ENUM('a', 'b') AS one",
      "SELECT 'a'::ENUM('a', 'c') AS one",
      "SELECT {'x': 1} AS one",
      "SELECT {'y': 1} AS one",
      'SELECT [1] AS one',
      "SELECT ['x'] AS one",
      'SELECT 1 AS one, 2 AS two',
      'SELECT $1::INTEGER AS one',
      'SELECT $1::VARCHAR AS one',
    ];
    const described = await Promise.all(shapes.map((sql) => engine.describe(sql)));
    for (let i = 0; i < shapes.length; i++) {
      for (let j = i + 1; j < shapes.length; j++) {
        const same =
          described[i].schema === described[j].schema && described[i].parameterSchema === described[j].parameterSchema;
        assert.ok(!same, `${shapes[i]} and ${shapes[j]} share schemas`);
      }
    }
    const decimal = described[4].schema.fields[0];
    assert.equal(decimal.metadata.get('ARROW:FLIGHT:SQL:SCALE'), '2');
    assert.equal(described[5].schema.fields[0].metadata.get('ARROW:FLIGHT:SQL:SCALE'), '3');
    assert.equal(String(described[13].parameterSchema.fields[0].type), 'Int32');
    assert.equal(String(described[14].parameterSchema.fields[0].type), 'Utf8');
  });

  it('statements asking for dictionaries get schemas of their own', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    const sql = "SELECT 'a'::ENUM('a', 'b') AS e";
    const first = await engine.describe(sql, { preserveDictionary: true });
    const again = await engine.describe(sql, { preserveDictionary: true });
    assert.notEqual(again.schema, first.schema);
    assert.equal(String(first.schema.fields[0].type), 'Dictionary<Int32, Utf8>');
  });
});
