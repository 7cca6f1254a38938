// Issue 16: a payload extract joins each row with its block's columns (__blocks) before sorting the rows by time.
// The partition file holds them as text (VARCHAR, JSON for process_properties: the properties object, not a JSON
// string of its text), each row with the columns of its own block, for two services sending at once. Written for
// a763dc7 (the columns as ENUMs while sorted, since reverted), where casting an ENUM to JSON directly failed it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { useOrrery, adminKey } from '../support/orrery-process.js';
import { partitionFiles } from './lakehouse-fixtures.js';
import { protobufOf } from '../support/otlp-logs-corpus.js';

const services = ['alpha', 'beta'];
const requests = 6;
const perRequest = 50;
const t0 = BigInt(Date.now() - 60_000) * 1_000_000n;

const request = (service: string, i: number): Uint8Array =>
  protobufOf({
    resourceLogs: [
      {
        resource: {
          attributes: [
            { key: 'service.name', value: { stringValue: service } },
            { key: 'host.name', value: { stringValue: `${service}-host` } },
            { key: 'process.owner', value: { stringValue: `${service}-owner` } },
          ],
        },
        scopeLogs: [
          {
            scope: { name: 'blocks' },
            logRecords: Array.from({ length: perRequest }, (_, j) => ({
              // Interleaved in time across requests and services, so the sort moves rows between blocks.
              timeUnixNano: String(t0 + BigInt(j * 1000 + i * 10 + services.indexOf(service))),
              severityNumber: 9,
              body: { stringValue: `${service}-${i}-${j}` },
            })),
          },
        ],
      },
    ],
  });

describe('block columns of materialized rows (issue 16)', () => {
  const fixture = useOrrery({});

  it("are the text of each row's own block, with process_properties a JSON object", async () => {
    const { httpPort } = fixture.orrery;
    await Promise.all(
      services.map(async (service) => {
        for (let i = 0; i < requests; i++) {
          const response = await fetch(`http://127.0.0.1:${httpPort}/v1/logs`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${adminKey.key}` },
            body: Buffer.from(request(service, i)),
          });
          assert.equal(response.status, 200, await response.text());
        }
      }),
    );
    const now = Math.floor(Date.now() / 1000);
    const range = `'${new Date((now - 600) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 660`;
    await fixture.admin.query(`SELECT * FROM materialize_partitions('blocks', ${range})`);
    await fixture.admin.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`);

    const [logs] = await partitionFiles(fixture.orrery, 'log_entries');
    const blocks = await partitionFiles(fixture.orrery, 'blocks');
    const duckdb = await DuckDBInstance.create(':memory:');
    const connection = await duckdb.connect();
    const list = (keys: readonly string[]): string =>
      `[${keys.map((k) => `'${fixture.orrery.store.location(k).replaceAll("'", "''")}'`).join(', ')}]`;
    try {
      const types = await connection.runAndReadAll(
        `SELECT name, type, converted_type FROM parquet_schema(${list([logs])})
          WHERE name IN ('process_id', 'stream_id', 'block_id', 'exe', 'username', 'computer', 'process_properties', 'audience')
          ORDER BY name`,
      );
      for (const [name, type, converted] of types.getRows())
        assert.match(`${String(type)} ${String(converted)}`, /^BYTE_ARRAY (UTF8|JSON)$/, `${String(name)} is text`);
      assert.equal(types.getRows().length, 8);
      const reader = await connection.runAndReadAll(
        `WITH l AS (SELECT * FROM read_parquet(${list([logs])})), b AS (SELECT * FROM read_parquet(${list(blocks)}))
         SELECT count(*)::BIGINT,
                count(*) FILTER (WHERE l.process_id = b.process_id AND l.stream_id = b.stream_id AND l.exe = b.exe
                                   AND l.username IS NOT DISTINCT FROM b.username AND l.computer IS NOT DISTINCT FROM b.computer
                                   AND l.audience IS NOT DISTINCT FROM b.audience AND l.insert_time = b.insert_time
                                   AND l.process_properties::VARCHAR = b.process_properties::VARCHAR)::BIGINT,
                count(*) FILTER (WHERE json_type(l.process_properties) = 'OBJECT'
                                   AND json_extract_string(l.process_properties, '$."service.name"') = split_part(l.msg, '-', 1)
                                   AND l.exe = split_part(l.msg, '-', 1))::BIGINT,
                count(DISTINCT l.block_id)::BIGINT,
                count(*) FILTER (WHERE l.time < l.previous)::BIGINT
           FROM (SELECT *, lag(time) OVER () AS previous FROM l) l JOIN b USING (block_id)`,
      );
      const n = BigInt(services.length * requests * perRequest);
      assert.deepEqual(reader.getRows()[0], [n, n, n, BigInt(services.length * requests), 0n]);
    } finally {
      connection.closeSync();
      duckdb.closeSync();
    }
  });
});
