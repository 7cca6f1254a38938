// A view set's partition columns of readBackTypes are read without a cast (sessionRelation): each such type must
// read back from a Parquet file as the type DuckDB wrote, through the engine the server runs. HUGEINT, a type
// that does not, is the check's own check.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import { readBackTypes, sessionRelation, type ViewSet } from '../../src/views/index.js';

describe('types read back from Parquet as written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-read-back-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  const readBack = async (types: readonly string[]): Promise<string[]> => {
    await using engine = await DuckDBEngine.create({ threads: 1, readableDirectories: [dir] });
    const file = join(dir, `${types.length}.parquet`);
    const columns = types.map((type, i) => `NULL::${type} AS c${i}`).join(', ');
    await engine.execute(`COPY (SELECT ${columns}) TO '${file}' (FORMAT parquet)`);
    // typeof: DuckDB's own type name (JSON is one; Flight's type names say VARCHAR for it).
    const read = types.map((_, i) => `typeof(c${i})`).join(', ');
    const [row] = await engine.values(`SELECT ${read} FROM read_parquet('${file}')`);
    return row.map(String);
  };

  it('every type read without a cast', async () => {
    const types = [...readBackTypes];
    assert.deepEqual(await readBack(types), types);
  });

  it('a type that does not read back as written is cast', async () => {
    assert.deepEqual(await readBack(['HUGEINT']), ['DOUBLE']);
    const view = {
      name: 'v',
      columns: [
        { name: 'n', type: 'HUGEINT' },
        { name: 'audience', type: 'VARCHAR' },
      ],
      minTimeColumn: 't',
      maxTimeColumn: 't',
      audienceColumn: 'audience',
      mergeQuery: 'SELECT * FROM {source}',
    } as unknown as ViewSet;
    const sql = sessionRelation({ view, files: ['/x.parquet'] }, { kind: 'audiences', audiences: ['public'] });
    assert.match(sql, /^SELECT CAST\("n" AS HUGEINT\) AS "n", "audience" FROM \(/);
  });
});
