// Large log_entries sets for bench/resources (GENERATE=1): ingesting 100 M entries through OTLP takes hours
// here, so the partition files are written by DuckDB directly, with the columns, types and COPY options of
// the materializer's (one partition as the server wrote it is the template: its schema hash and columns),
// and registered as the materializer registers them (commitPartitions, in the server's Postgres). Each
// partition gets an insert-time hour of its own ten days back: the daemon's passes look at the last two days
// (nothing merges them) and retention at 90 days. The rows are those the OTLP path writes for the same
// (day, j): bench.mjs's queries and answers do not change with the way the data got there.
import { mkdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { commitPartitions } from '../../dist/src/lakehouse/index.js';
import { MetadataStore } from '../../dist/src/metadata/index.js';

const hourNanos = 3_600_000_000_000n;

/**
 * Writes and registers `days` days of `perDay` entries each in partitions of at most `perPartition` rows:
 * day d is service svc-d, `processes` processes, event time `base` + d days + j ms, the message `messageSql`
 * (of `day` and `j`), level 4 - j % 4, pod-(j % 50). Returns the count of partitions written.
 */
export async function generateLogEntries({ dataDir, days, perDay, perPartition, processes, base, messageSql, log }) {
  const password = (await readFile(join(dataDir, 'postgres', 'orrery-password'), 'utf8')).trim();
  const serverLog = await readFile(join(dataDir, 'server.log'), 'utf8');
  const port = /embedded Postgres ready on 127\.0\.0\.1:(\d+)/.exec(serverLog)?.[1];
  if (!port) throw new Error('no embedded Postgres port in the server log');
  const connectionString = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/orrery`;
  const metadata = await MetadataStore.open({ connectionString, dataDir });
  const duck = await DuckDBInstance.create(':memory:');
  const connection = await duck.connect();
  const rows = async (sql) => (await connection.runAndReadAll(sql)).getRows();
  let written = 0;
  try {
    const {
      rows: [template],
    } = await metadata.query(
      `SELECT file_path, file_schema_hash FROM lakehouse_partitions
        WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time LIMIT 1`,
    );
    if (!template) throw new Error('no log_entries partition to take as the template');
    const lake = join(dataDir, 'lake');
    mkdirSync(join(lake, 'views/log_entries/global/generated'), { recursive: true });
    const columns = (await rows(`DESCRIBE SELECT * FROM read_parquet('${join(lake, template.file_path)}')`)).map(
      ([name, type]) => ({ name, type }),
    );
    const firstHour = ((BigInt(Date.now()) * 1_000_000n) / hourNanos) * hourNanos - 240n * hourNanos;
    const started = Date.now();
    for (let day = 0; day < days; day++) {
      for (let first = 0; first < perDay; first += perPartition) {
        const count = Math.min(perPartition, perDay - first);
        const begin = firstHour + BigInt(written) * hourNanos;
        const key = `views/log_entries/global/generated/${day}-${first}.parquet`;
        const path = join(lake, key);
        const values = {
          process_id: `'proc-' || ${day} || '-' || (j % ${processes})`,
          stream_id: `'stream-' || ${day} || '-' || (j % ${processes})`,
          block_id: `'block-' || ${day} || '-' || (j // 5000)`,
          insert_time: `make_timestamp_ns(${begin})`,
          exe: `'svc-${day}'`,
          time: `make_timestamp_ns(${base + BigInt(day) * 86_400_000_000_000n} + j * 1000000)`,
          target: `'app'`,
          level: '4 - j % 4',
          msg: messageSql,
          properties: `'{"pod":"pod-' || (j % 50) || '"}'`,
          process_properties: `'{"service.name":"svc-${day}"}'`,
          audience: `'public'`,
        };
        const select = columns
          .map(({ name, type }) => `CAST(${values[name] ?? 'NULL'} AS ${type}) AS "${name}"`)
          .join(', ');
        await rows(
          `COPY (SELECT ${select} FROM (SELECT ${day} AS day, range AS j FROM range(${first}, ${first + count})))
             TO '${path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)`,
        );
        const [[minNs, maxNs]] = await rows(
          `SELECT epoch_ns(min(time)), epoch_ns(max(time)) FROM read_parquet('${path}')`,
        );
        await commitPartitions(
          metadata,
          [
            {
              viewSetName: 'log_entries',
              viewInstanceId: 'global',
              beginInsertTime: begin,
              endInsertTime: begin + hourNanos,
              minEventTime: BigInt(minNs),
              maxEventTime: BigInt(maxNs),
              filePath: key,
              fileSize: statSync(path).size,
              schemaHash: template.file_schema_hash,
              sourceCount: 0n,
              numRows: count,
              sortOrder: null,
            },
          ],
          { begin, end: begin + hourNanos },
          0,
        );
        written++;
      }
      log(
        `bench: generated day ${day + 1}/${days} (${written} partitions, ${((Date.now() - started) / 1000).toFixed(0)} s)`,
      );
    }
  } finally {
    connection.closeSync();
    duck.closeSync();
    await metadata.close();
  }
  return written;
}
