// Issue 10: the schema a DuckDB statement's result is sent with, when it differs from the described one (an unaliased
// count(*) renamed, provenance in the metadata for rollup reads and admins' pruned reads), is one object per described
// schema and change, as the described one is: wire/ipc keeps encodings per Schema object, and a new object per
// statement was encoded again for each statement.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import type { Provenance } from '../../src/rollups/index.js';
import { dataFusionNames, provenanceKey, withProvenance } from '../../src/sql/result-schemas.js';
import { encapsulateSchema } from '../../src/wire/index.js';

describe('result schemas made once per described schema (issue 10)', () => {
  let engine: DuckDBEngine;
  before(async () => {
    engine = await DuckDBEngine.create({ threads: 1 });
  });
  after(() => engine.close());

  /** A read of an hourly rollup up to `to`. */
  const rollupRead = (to: string): Provenance => {
    const hourly = { name: 'metrics_hourly', grain: '01:00:00', covered: { from: null, to: null } } as const;
    return {
      resources: [
        {
          level: 'main',
          table: 'metrics',
          skipped_rollup: [],
          rollup: { ...hourly, window: { from: '2024-01-01T00:00:00Z', to } },
        },
      ],
    };
  };

  it('renames an unaliased count(*) into the same schema object at each statement', async () => {
    const first = dataFusionNames(await engine.describe('SELECT count(*) FROM range(3)'));
    const again = dataFusionNames(await engine.describe('SELECT count(*) FROM range(5)'));
    assert.deepEqual(
      first.schema.fields.map((f) => f.name),
      ['count(*)'],
    );
    assert.equal(again.schema, first.schema);
    assert.deepEqual(encapsulateSchema(again.schema), encapsulateSchema(first.schema));
  });

  it("puts a rollup read's provenance in one schema object per provenance", async () => {
    const sql = "SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' AS day, 1::BIGINT AS n";
    const first = withProvenance(await engine.describe(sql), rollupRead('2024-03-01T00:00:00Z'));
    const again = withProvenance(await engine.describe(sql), rollupRead('2024-03-01T00:00:00Z'));
    assert.equal(again.schema, first.schema);
    assert.deepEqual(JSON.parse(first.schema.metadata.get(provenanceKey)!), rollupRead('2024-03-01T00:00:00Z'));
    // Another provenance, another schema: each result says what it read.
    const other = withProvenance(await engine.describe(sql), rollupRead('2024-04-01T00:00:00Z'));
    assert.notEqual(other.schema, first.schema);
    assert.deepEqual(JSON.parse(other.schema.metadata.get(provenanceKey)!), rollupRead('2024-04-01T00:00:00Z'));
  });

  it("puts an admin's pruned read (partitions and rows read) in one schema object per provenance", async () => {
    const pruned = () => ({
      resources: [],
      partitions: [{ table: 'log_entries', partitions: 2, skipped: 5, indexes: ['target'] }],
      rows_read: [{ table: 'log_entries', partitions: 1, rows: 1200, read: 40, index: 'target' }],
    });
    const sql = "SELECT 'cart' AS target, 3::BIGINT AS n";
    const first = withProvenance(await engine.describe(sql), pruned());
    const again = withProvenance(await engine.describe(sql), pruned());
    assert.equal(again.schema, first.schema);
    assert.deepEqual(JSON.parse(first.schema.metadata.get(provenanceKey)!), pruned());
  });

  it('keeps one object through both changes: count(*) renamed, then provenance', async () => {
    const sql = "SELECT count(*) FROM range(3) WHERE range > 0 AND 'x' = 'x'";
    const made = async () =>
      withProvenance(dataFusionNames(await engine.describe(sql)), rollupRead('2024-03-01T00:00:00Z'));
    const first = await made();
    assert.equal((await made()).schema, first.schema);
    assert.deepEqual(
      first.schema.fields.map((f) => f.name),
      ['count(*)'],
    );
    assert.ok(first.schema.metadata.has(provenanceKey));
  });
});
