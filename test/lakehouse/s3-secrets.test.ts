// Issue 15: on an s3:// lake DuckDB signs with a secret Orrery creates at start-up on its own
// engines. No statement of a key, admin or not, reads another URL (other buckets, other prefixes of
// the lake's bucket, http://), changes the secret's reach, or sees the secret: not through
// duckdb_secrets(), which_secret(), current_setting(), a setting, nor any error text.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { S3ObjectStore, s3Settings } from '../../src/lakehouse/index.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { s3LakeEnv, testS3, type TestS3 } from '../support/s3-server.js';

/** What a call answered, rows or error, as one text to search for leaks. */
async function answer(client: TestFlightClient, sql: string): Promise<{ ok: boolean; code?: number; text: string }> {
  try {
    const table = await client.query(sql);
    return { ok: true, text: JSON.stringify(table.toArray(), (_, v: unknown) => (typeof v === 'bigint' ? `${v}` : v)) };
  } catch (error) {
    const { code, details, message } = error as { code?: number; details?: string; message: string };
    return { ok: false, code, text: `${message} ${details ?? ''}` };
  }
}

describe('S3 lake: the secret and other URLs stay out of reach (issue 15)', () => {
  let s3: TestS3;
  let lake: Record<string, string>;
  const fixture = useOrrery(async () => {
    s3 = await testS3();
    lake = s3LakeEnv(s3);
    return { ...lake, ORRERY_RETIRE_DELAY_SECONDS: '0' };
  }, 'serve');
  const secret = (): string => s3.env.AWS_SECRET_ACCESS_KEY;
  const endpoint = (): string => s3.env.AWS_ENDPOINT_URL;
  const lakeUrl = (): string => lake.MICROMEGAS_OBJECT_STORE_URI;
  let range: string;

  before(async () => {
    const logs = [{ time: BigInt(Date.now()) * 1_000_000n, severity: 9, body: 'on s3' }];
    assert.equal(
      (await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': 's3' }, logs)))
        .status,
      200,
    );
    const now = Math.floor(Date.now() / 1000);
    range = `'${new Date((now - 120) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 180`;
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);
    assert.equal(Number((await fixture.reader.query('SELECT count(*) FROM log_entries')).getChildAt(0)!.get(0)), 1);
  });

  it('answers every probe of the secret without it, and refuses the reader outright', async () => {
    const probes = [
      'SELECT * FROM duckdb_secrets()',
      'SELECT * FROM duckdb_secrets(redact := false)',
      `SELECT * FROM which_secret('${lakeUrl()}/x', 's3')`,
      "SELECT current_setting('s3_secret_access_key'), current_setting('s3_access_key_id')",
      "SELECT value FROM duckdb_settings() WHERE name LIKE 's3%'",
      "SELECT current_setting('allow_unredacted_secrets')",
      'SET allow_unredacted_secrets = true',
      "SET s3_endpoint = 'example.com'",
      'DROP SECRET orrery_object_store',
      'drop temporary secret if exists orrery_object_store',
      "/* c */ CREATE OR REPLACE SECRET orrery_object_store (TYPE s3, KEY_ID 'k', SECRET 's')",
      `CREATE TEMPORARY SECRET narrower (TYPE s3, KEY_ID 'k', SECRET 's', ENDPOINT 'example.com', SCOPE '${lakeUrl()}/views/')`,
    ];
    for (const sql of probes) {
      const forReader = await answer(fixture.reader, sql);
      assert.equal(forReader.ok, false, sql);
      assert.equal(forReader.code, 7, `${sql}: ${forReader.text}`);
      const forAdmin = await answer(fixture.admin, sql);
      assert.ok(!forAdmin.text.includes(secret()), `${sql} showed the secret: ${forAdmin.text}`);
      if (/\bsecret\b/i.test(sql) && /^\W*\w+ (\w+ )*secret/i.test(sql.replace(/\/\*.*?\*\//, '')))
        assert.match(forAdmin.text, /SECRET and DROP SECRET are not available/, sql);
    }
    // The admin's listing shows that a secret exists, redacted.
    const listing = await answer(fixture.admin, 'SELECT secret_string FROM duckdb_secrets()');
    assert.match(listing.text, /secret=redacted/);
    assert.equal((await answer(fixture.admin, 'SELECT * FROM duckdb_secrets(redact := false)')).ok, false);
    // The secret is still there and still signs: the view sets read on.
    assert.equal(Number((await fixture.reader.query('SELECT count(*) FROM log_entries')).getChildAt(0)!.get(0)), 1);
  });

  it('reads no URL but the lake: other buckets, other prefixes of its bucket, http://, for any key', async () => {
    const { bucket } = s3;
    const other = `s3://${bucket}/not-the-lake-${randomUUID()}`;
    const outside = new S3ObjectStore(s3Settings(other, s3.env));
    await outside.put('x.csv', Buffer.from('a\n1\n'));
    outside.close();
    const urls = [
      `${other}/x.csv`,
      `s3://other-bucket/x.csv`,
      `${lakeUrl()}/../${other.slice(`s3://${bucket}/`.length)}/x.csv`,
      `${endpoint()}/${bucket}/${other.slice(`s3://${bucket}/`.length)}/x.csv`,
      `https://example.com/x.csv`,
    ];
    for (const url of urls) {
      for (const sql of [`SELECT * FROM read_csv('${url}')`, `SELECT * FROM '${url}'`, `COPY (SELECT 1) TO '${url}'`]) {
        const forReader = await answer(fixture.reader, sql);
        assert.equal(forReader.code, 7, `${sql}: ${forReader.text}`);
        const forAdmin = await answer(fixture.admin, sql);
        assert.equal(forAdmin.ok, false, `an admin read ${url}`);
        assert.ok(!forAdmin.text.includes(secret()), forAdmin.text);
      }
    }
  });

  it("a failing lake read tells the reader neither the endpoint nor the bucket's URL nor the secret", async () => {
    // A partition file no statement has read yet: DuckDB answers from what it kept of a file it has read without
    // asking S3 again (partition files never change), so only the deletion of an unread file fails a read.
    const logs = [{ time: BigInt(Date.now()) * 1_000_000n, severity: 9, body: 'on s3, again' }];
    await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': 's3' }, logs));
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);
    const { rows } = await fixture.orrery.metadata.query<{ file_path: string }>(
      "SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
    );
    const file = rows[0].file_path;
    const bytes = await fixture.orrery.store.get(file);
    await fixture.orrery.store.delete(file);
    // A missing file is contained (quarantined, its range rebuilt) and the statement answers: Postgres refuses
    // the quarantine record here, so the read fails and its error reaches the keys.
    await fixture.orrery.metadata.query(
      'ALTER TABLE quarantined_partitions ADD CONSTRAINT refuse_in_test CHECK (file_path IS NULL) NOT VALID',
    );
    try {
      const failure = await answer(fixture.reader, 'SELECT count(*) FROM log_entries');
      assert.equal(failure.ok, false);
      for (const hidden of [secret(), endpoint(), endpoint().replace('http://', ''), lakeUrl(), `s3://${s3.bucket}`])
        assert.ok(!failure.text.includes(hidden), `the reader saw '${hidden}': ${failure.text}`);
      const forAdmin = await answer(fixture.admin, 'SELECT count(*) FROM log_entries');
      assert.equal(forAdmin.ok, false);
      assert.ok(!forAdmin.text.includes(secret()), forAdmin.text);
    } finally {
      await fixture.orrery.metadata.query('ALTER TABLE quarantined_partitions DROP CONSTRAINT refuse_in_test');
    }
    await fixture.orrery.store.put(file, bytes);
    assert.equal(Number((await fixture.reader.query('SELECT count(*) FROM log_entries')).getChildAt(0)!.get(0)), 2);
  });
});
