// Issue 12, item 1: the signed DuckDB extensions series tables need come with the install and load
// with signature checks on; without them the server says what is missing and still runs.
import assert from 'node:assert/strict';
import { closeSync, copyFileSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  DuckDBEngine,
  duckdbBuild,
  extensionCacheFolder,
  extensionFile,
  findExtensions,
} from '../../src/engine/index.js';
import { OrreryError } from '../../src/errors/index.js';
import { clientFor, scalar, startRole } from '../lakehouse/lakehouse-fixtures.js';

async function rows(engine: DuckDBEngine, sql: string): Promise<unknown[][]> {
  const { batches } = await engine.query(sql);
  const out: unknown[][] = [];
  for await (const batch of batches) for (const row of batch) out.push(row.toArray());
  return out;
}

describe('DuckDB extensions (issue 12)', () => {
  let folder: string;
  let scratch: string;
  before(async () => {
    folder = extensionCacheFolder(await duckdbBuild());
    scratch = mkdtempSync(join(tmpdir(), 'orrery-extensions-'));
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it('the install step put ducklake, postgres_scanner and httpfs for this DuckDB build in its cache', () => {
    assert.deepEqual(findExtensions(folder).missing, []);
  });

  it('they load with signature checks on', async () => {
    const engine = await DuckDBEngine.create({ extensions: findExtensions(folder).files });
    try {
      // What each one adds (duckdb_extensions() reads the extension directory, which the sandbox closes).
      const added = await rows(
        engine,
        `SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_name IN ('ducklake_snapshots', 'postgres_query')
         UNION ALL SELECT name FROM duckdb_settings() WHERE name = 's3_region' ORDER BY 1`,
      );
      assert.deepEqual(added, [['ducklake_snapshots'], ['postgres_query'], ['s3_region']]);
      assert.deepEqual(await rows(engine, `SELECT current_setting('allow_unsigned_extensions')`), [[false]]);
    } finally {
      await engine.close();
    }
  });

  it('a file altered by one byte is refused: the engine does not start with it', async () => {
    const altered = extensionFile(scratch, 'httpfs');
    copyFileSync(extensionFile(folder, 'httpfs'), altered);
    const fd = openSync(altered, 'r+');
    const byte = Buffer.alloc(1);
    readSync(fd, byte, 0, 1, 4096);
    byte[0] ^= 0xff;
    writeSync(fd, byte, 0, 1, 4096);
    closeSync(fd);
    await assert.rejects(DuckDBEngine.create({ extensions: [altered] }), (error: unknown) => {
      assert.ok(error instanceof OrreryError);
      assert.equal(error.code, 'EXTENSION_LOAD_FAILED');
      assert.equal(error.status, 'UNAVAILABLE');
      assert.match(error.message, /cannot load the DuckDB extension .*httpfs\.duckdb_extension: .*signature/i);
      return true;
    });
  });

  it('start-up without them says what is missing and how to supply them, and queries still run', async () => {
    const empty = mkdtempSync(join(scratch, 'empty-'));
    const key = { name: 'admin', key: 'admin-key-0123', audiences: ['public'] };
    const orrery = await startRole('serve', {
      MICROMEGAS_API_KEYS: JSON.stringify([key]),
      MICROMEGAS_ADMINS: JSON.stringify(['admin']),
      ORRERY_DUCKDB_EXTENSION_DIR: empty,
    });
    const client = clientFor(orrery.flightPort, key);
    try {
      const warning = orrery.lines.find((line) => line.startsWith('warn series tables are unavailable'));
      assert.ok(warning, orrery.lines.join('\n'));
      assert.match(warning, /missing ducklake, postgres_scanner, httpfs/);
      assert.ok(warning.includes(empty));
      assert.match(warning, /ORRERY_DUCKDB_EXTENSION_DIR/);
      assert.match(warning, /duckdb-extension-ducklake==1\.5\.5/);
      assert.equal(await scalar(client, 'SELECT 6 * 7'), 42);
    } finally {
      client.close();
      await orrery.close();
    }
  });
});
