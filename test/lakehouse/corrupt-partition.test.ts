// Issue 9: a partition file of the lake that cannot be read (truncated, overwritten with garbage) must
// not fail the queries, merges and SQL-defined view sets that read its view set. It is quarantined
// (taken out of the partitions, recorded for admins, counted in a metric), its range is rebuilt from
// its source, and every row comes back through Flight SQL.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { version } from '../../src/app.js';
import { deleteOrphans } from '../../src/lakehouse/index.js';
import { adminKey } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';
import {
  adminAndTeams,
  clientFor,
  metricLines,
  partitionFiles,
  postLogRecord,
  rowValues,
  sharedEnv,
  sleep,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const keyList = adminAndTeams('corrupt');

describe('issue 9: a partition file that cannot be read is quarantined and its range rebuilt from source', () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  let serve: InProcessOrrery;
  let admin: TestFlightClient;
  let a: TestFlightClient;
  let b: TestFlightClient;
  let range: string;
  /** The log_entries partition files, one per second of arrival: a's first row, b's row, a's second row. */
  let files: string[];

  const values = rowValues;
  const messages = async (sql: string): Promise<string[]> => [...(await admin.query(sql)).getChild('msg')!] as string[];
  const postLog = (key: string, body: string): Promise<void> => postLogRecord(serve.httpPort, key, body);
  const logFiles = (view = 'log_entries'): Promise<string[]> => partitionFiles(serve, view);
  const quarantined = async (): Promise<unknown[][]> =>
    values(
      admin,
      'SELECT file_path, view_set_name, view_instance_id, num_rows, orrery_version FROM list_quarantined_partitions() ORDER BY quarantined_at',
    );
  const gauge = (): Promise<string[]> => metricLines(serve.httpPort, 'orrery_quarantined_partitions');
  const allRows = [['a one'], ['a two'], ['b one']];

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-corrupt-lake-'));
    const env = sharedEnv({
      keys: keyList,
      admins: [adminKey.name],
      connectionString: postgres.connectionString,
      lakeDir,
    });
    serve = await startRole('serve', env);
    [admin, a, b] = keyList.map((key) => clientFor(serve.flightPort, key));
    // One block per second of arrival, so that one-second partitions hold one team's row each.
    await postLog(keyList[1].key, 'a one');
    await sleep(1100);
    await postLog(keyList[2].key, 'b one');
    await sleep(1100);
    await postLog(keyList[1].key, 'a two');
    const minute = Math.floor(Date.now() / 60_000) * 60;
    const iso = (s: number): string => `'${new Date(s * 1000).toISOString()}'`;
    range = `${iso(minute - 60)}, ${iso(minute + 120)}`;
    for (const view of ['blocks', 'processes', 'streams']) {
      await messages(`SELECT * FROM materialize_partitions('${view}', ${range}, 180)`);
    }
    await messages(`SELECT * FROM materialize_partitions('log_entries', ${range}, 1)`);
    files = await logFiles();
    assert.equal(files.length, 3);
  });

  after(async () => {
    for (const client of [admin, a, b]) client?.close();
    await serve?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('a query over a truncated partition file answers every row: the file is contained first', async () => {
    truncateSync(serve.store.location(files[1]), 100);
    assert.deepEqual(await values(b, 'SELECT msg FROM log_entries'), [['b one']]);
    assert.deepEqual(await values(admin, 'SELECT msg FROM log_entries ORDER BY msg'), allRows);
    assert.deepEqual(await quarantined(), [[files[1], 'log_entries', 'global', 1, version]]);
    const [error] = (await values(admin, 'SELECT error FROM list_quarantined_partitions()'))[0];
    assert.match(String(error), /No magic bytes found at end of file/);
    assert.deepEqual(await gauge(), ['orrery_quarantined_partitions{view_set="log_entries"} 1']);
    // The file left the partitions (a new one holds its range) and stays where it was, for inspection.
    assert.equal((await logFiles()).includes(files[1]), false);
    assert.equal((await logFiles()).length, 3);
    await deleteOrphans(serve.metadata, serve.store, 0); // housekeeping keeps it too
    assert.equal(existsSync(serve.store.location(files[1])), true);
    await assert.rejects(a.query('SELECT * FROM list_quarantined_partitions()'), {
      code: 7,
      details: 'permission denied: list_quarantined_partitions is an admin function',
    });
  });

  it('a merge over a partition file overwritten with garbage rebuilds that range and merges', async () => {
    const garbage = files[2];
    writeFileSync(serve.store.location(garbage), randomBytes(statSync(serve.store.location(garbage)).size));
    const out = await messages(`SELECT * FROM materialize_partitions('log_entries', ${range}, 180)`);
    assert.match(out.at(-1)!, /^log_entries \[.*\): merged$/);
    assert.equal((await logFiles()).length, 1);
    assert.deepEqual(await values(admin, 'SELECT msg FROM log_entries ORDER BY msg'), allRows);
    assert.deepEqual((await quarantined()).at(-1), [garbage, 'log_entries', 'global', 1, version]);
    assert.deepEqual(await gauge(), ['orrery_quarantined_partitions{view_set="log_entries"} 2']);
  });

  it('log_stats, defined in SQL over log_entries, builds over a partition file that cannot be read', async () => {
    const [merged] = await logFiles();
    truncateSync(serve.store.location(merged), 10);
    const out = await messages(`SELECT * FROM materialize_partitions('log_stats', ${range}, 180)`);
    assert.match(out.at(-1)!, /^log_stats \[.*\): created$/);
    assert.deepEqual(await values(admin, 'SELECT sum(count)::INT FROM log_stats'), [[3]]);
    assert.deepEqual((await quarantined()).at(-1), [merged, 'log_entries', 'global', 3, version]);
    assert.deepEqual(await values(a, 'SELECT msg FROM log_entries ORDER BY msg'), [['a one'], ['a two']]);
  });
});
