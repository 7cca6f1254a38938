// Issue 16: the native writer of log_entries partition files (writeOrderedLogsPartition) writes, from the ordered
// read's inputs, the file the materializer's statement writes over __orrery_otlp_logs_ordered: checked in a real
// DuckDB engine over random payloads in every stored form (more than one row group), by what DuckDB reads back from
// both files: the rows in the same order, the same Parquet schema and types, every row group's statistics (both min/max
// forms, null counts: what pruning and the partition's event-time bounds read), the compression, and the bloom filters
// of the columns DuckDB writes them for; block fields NULL in some blocks or in all. It writes nothing for blocks it does
// not write as the statement does (a process field of more than 256 values), and fails, naming the payload, on one that
// does not decode.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DuckDBEngine, nativeOrderedLogsWriter } from '../../src/engine/index.js';
import {
  builtinViewSets,
  orderedBlocks,
  orderedEnumFields,
  orderedProtobufLogs,
  quoteLiteral,
  typedColumns,
} from '../../src/views/index.js';
import { brotliStored, protobufOf, random, randomRequest, t0, zstdStored } from '../support/otlp-logs-corpus.js';
import { firstTimes } from '../support/first-times.js';

const logEntries = builtinViewSets.find((v) => v.name === 'log_entries')!;
const source = logEntries.source as { ordered: string };
const rowGroup = 131072;

describe('issue 16: the native writer of log_entries partitions writes the statement file', () => {
  let dir: string;
  let engine: DuckDBEngine;
  let files = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-native-writer-'));
    // One thread, as the statement's row groups then reach the file in order (PRESERVE_ORDER false, one writer).
    engine = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir, threads: 1 });
  });
  after(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * __blocks as the materializer makes it, one row per payload: username NULL in every block and computer in some
   * (OTLP requests carry neither), or, with `manyExes`, an exe of its own per block.
   */
  const blocks = (file: string, count: number, manyExes = false): string =>
    `CREATE OR REPLACE TEMP TABLE __blocks AS
       SELECT 'process-' || (i % 3) AS process_id, 'stream-' || (i % 2) AS stream_id, 'block-' || i AS block_id,
              make_timestamp_ns(1700000000000000000 + i * 1000) AS insert_time,
              'exe "' || (i % ${manyExes ? count : 5}) || '"' AS exe, NULL::VARCHAR AS username,
              CASE WHEN i % 3 = 0 THEN NULL ELSE 'host-' || (i % 4) END AS computer,
              json_object('service.name', 'svc' || i, 'quote', 'a"b\\c', 'n', i) AS process_properties,
              CASE WHEN i % 4 = 0 THEN 'team_x' ELSE 'public' END AS audience,
              ${quoteLiteral(file)} || '#' || i AS path, i::UBIGINT AS payload
         FROM range(${count}) t(i)`;

  async function values(sql: string, setup: string[] = []): Promise<unknown[][]> {
    const { batches } = await engine.query(sql, { setup });
    const out: unknown[][] = [];
    for await (const batch of batches)
      for (let i = 0; i < batch.numRows; i++) out.push(batch.schema.fields.map((_, c) => batch.getChildAt(c)?.get(i)));
    return out;
  }

  /** The payloads' file, and both files written from it: the statement's (as Materializer.write runs it) and the writer's. */
  async function bothWays(
    bodies: readonly Uint8Array[],
    stored: readonly Uint8Array[],
    manyExes = false,
    rowGroupBytes?: number,
  ) {
    const file = join(dir, `bundle${files}`);
    writeFileSync(file, Buffer.concat(stored));
    const sizes = stored.map((p) => p.length);
    const first = firstTimes(bodies);
    const setup = [blocks(file, stored.length, manyExes), orderedBlocks];
    const statement = join(dir, `statement${files}.parquet`);
    const native = join(dir, `native${files++}.parquet`);
    const rows = orderedProtobufLogs(file, sizes, first, orderedEnumFields, rowGroup);
    const body = typedColumns(
      logEntries.columns,
      source.ordered.replaceAll('{payloads}', rows),
      [],
      new Set(orderedEnumFields),
    );
    const copied = await engine.execute(
      `COPY (${body}) TO ${quoteLiteral(statement)} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${rowGroup}, PRESERVE_ORDER false)`,
      { setup },
    );
    const [[fields]] = await values(`SELECT getvariable('__orrery_blocks')`, setup);
    const written = await nativeOrderedLogsWriter()!(
      file,
      sizes,
      first.map(String),
      [...(fields as Iterable<string | null>)],
      native,
      'Orrery version test',
      ...(rowGroupBytes === undefined ? [] : [rowGroupBytes]),
    );
    return { file, sizes, first, statement, native, copied, written };
  }

  /** Rows of `a` not in `b`, each row with its place in its file: 0 when both hold the same rows in the same order. */
  const rowsNotIn = async (a: string, b: string): Promise<number> => {
    const read = (f: string) => `SELECT * FROM read_parquet(${quoteLiteral(f)}, file_row_number = true)`;
    const [[n]] = await values(`SELECT count(*) FROM (${read(a)} EXCEPT ALL ${read(b)})`);
    return Number(n);
  };

  /** What `select` gives of `from`(file) for a file and not the other, either way. */
  const differing = async (select: string, from: string, a: string, b: string): Promise<number> => {
    const of = (f: string) => `SELECT ${select} FROM ${from}(${quoteLiteral(f)})`;
    const [[n]] = await values(
      `SELECT (SELECT count(*) FROM (${of(a)} EXCEPT ALL ${of(b)})) + (SELECT count(*) FROM (${of(b)} EXCEPT ALL ${of(a)}))`,
    );
    return Number(n);
  };

  it('writes the rows, order, schema, statistics, compression and bloom filters of the statement', async () => {
    const next = random(2626);
    const bodies = Array.from({ length: 400 }, () => protobufOf(randomRequest(next)));
    // Random requests hold a few records each: large ones too, so the file has more than one row group.
    const big = (p: number): Uint8Array =>
      protobufOf({
        resourceLogs: [
          {
            resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${p}` } }] },
            scopeLogs: [
              {
                scope: { name: 'lib' },
                logRecords: Array.from({ length: 1000 }, (_, j) => ({
                  timeUnixNano: String(t0 + BigInt(j * 160 + p)),
                  severityNumber: (j % 24) + 1,
                  body: { stringValue: `message ${p} ${j % 97}` },
                  attributes: [{ key: 'j', value: { intValue: String(j % 13) } }],
                  ...(j % 3 ? { traceId: Buffer.alloc(16, p), spanId: Buffer.alloc(8, j % 7) } : {}),
                })),
              },
            ],
          },
        ],
      });
    for (let p = 0; p < 160; p++) bodies.push(big(p));
    const forms = [zstdStored, (b: Uint8Array) => brotliStored(b), gzipSync, (b: Uint8Array) => b];
    const stored = bodies.map((b, i) => forms[i % forms.length](b));
    const { statement, native, copied, written } = await bothWays(bodies, stored);
    assert.ok(copied > rowGroup, `${copied} rows: more than one row group`);
    assert.equal(written, copied);
    assert.equal(await rowsNotIn(statement, native), 0);
    assert.equal(await rowsNotIn(native, statement), 0);
    // Parquet's schema (physical, converted and logical types) and the types DuckDB reads.
    assert.equal(
      await differing('name, type, repetition_type, converted_type, logical_type', 'parquet_schema', statement, native),
      0,
    );
    const [[described]] = await values(
      `SELECT (SELECT list(column_type ORDER BY column_name) FROM (DESCRIBE SELECT * FROM read_parquet(${quoteLiteral(statement)})))
            = (SELECT list(column_type ORDER BY column_name) FROM (DESCRIBE SELECT * FROM read_parquet(${quoteLiteral(native)})))`,
    );
    assert.equal(described, true);
    // Every row group's and column's statistics, both forms (the materializer reads stats_min/stats_max of time),
    // and the compression.
    assert.equal(
      await differing(
        'row_group_id, row_group_num_rows, path_in_schema, stats_min, stats_max, stats_min_value, stats_max_value, stats_null_count, compression',
        'parquet_metadata',
        statement,
        native,
      ),
      0,
    );
    // Bloom filters of the block columns DuckDB writes them for (the VARCHARs with a dictionary): in the same chunks,
    // and a value of a row group not excluded from it, a value in none excluded from all.
    const blooms = (f: string) =>
      `SELECT row_group_id, path_in_schema FROM parquet_metadata(${quoteLiteral(f)})
        WHERE bloom_filter_offset IS NOT NULL AND path_in_schema IN ('block_id', 'process_properties')`;
    const [[withBloom]] = await values(`SELECT count(*) FROM (${blooms(native)})`);
    assert.ok(
      Number(withBloom) >= 4,
      `${Number(withBloom)} chunks of block_id and process_properties with a bloom filter`,
    );
    const [[bloomsDiffer]] = await values(
      `SELECT count(*) FROM ((${blooms(statement)} EXCEPT ALL ${blooms(native)}) UNION ALL (${blooms(native)} EXCEPT ALL ${blooms(statement)}))`,
    );
    assert.equal(Number(bloomsDiffer), 0);
    // The row groups each value is excluded from by its bloom filter: a value in none (block-none) from all.
    const excluded = async (f: string, column: string, value: string): Promise<unknown> =>
      (
        await values(
          `SELECT coalesce(string_agg(row_group_id::VARCHAR, ',' ORDER BY row_group_id) FILTER (WHERE bloom_filter_excludes), '')
             FROM parquet_bloom_probe(${quoteLiteral(f)}, ${quoteLiteral(column)}, ${quoteLiteral(value)})`,
        )
      )[0][0];
    assert.equal(await excluded(native, 'block_id', 'block-none'), '0,1');
    for (const [column, value] of [
      ['block_id', 'block-7'],
      ['block_id', 'block-500'],
      ['process_properties', '{"service.name":"svc3","quote":"a\\"b\\\\c","n":3}'],
    ])
      assert.equal(
        await excluded(native, column, value),
        await excluded(statement, column, value),
        `${column} = ${value}`,
      );
  });

  it('writes a row group early once its text reaches the bytes given, the rows and their order unchanged', async () => {
    // A column's offsets into a row group's text are 32-bit: a row group of 131072 records of long messages (a
    // tenant's) would wrap them at 4 GiB; the writer cuts row groups by their text's bytes too (256 MiB by default).
    const next = random(2627);
    const bodies = Array.from({ length: 300 }, () => protobufOf(randomRequest(next)));
    const { statement, native, copied, written } = await bothWays(bodies, bodies, false, 64 * 1024);
    assert.ok(copied < rowGroup, `${copied} rows: one row group by rows`);
    assert.equal(written, copied);
    assert.equal(await rowsNotIn(statement, native), 0);
    assert.equal(await rowsNotIn(native, statement), 0);
    const groups = async (f: string) =>
      Number((await values(`SELECT count(DISTINCT row_group_id) FROM parquet_metadata(${quoteLiteral(f)})`))[0][0]);
    assert.equal(await groups(statement), 1);
    assert.ok((await groups(native)) > 1, `${await groups(native)} row groups`);
  });

  it('writes nothing when a process field has more values than the statement takes as an ENUM', async () => {
    const next = random(1627);
    const bodies = Array.from({ length: 300 }, () => protobufOf(randomRequest(next)));
    const { native, written, copied } = await bothWays(bodies, bodies, true);
    assert.ok(copied > 0);
    assert.equal(written, null);
    assert.equal(existsSync(native), false);
  });

  it('fails, naming the payload, on one that does not decode', async () => {
    const next = random(1628);
    const bodies = Array.from({ length: 6 }, () => protobufOf(randomRequest(next)));
    const stored = bodies.map((b, i) => (i === 3 ? Buffer.concat([b.subarray(0, 10), Buffer.from([0xff, 0xff])]) : b));
    const file = join(dir, `bundle${files++}`);
    writeFileSync(file, Buffer.concat(stored));
    const [[fields]] = await values(`SELECT getvariable('__orrery_blocks')`, [
      blocks(file, stored.length),
      orderedBlocks,
    ]);
    await assert.rejects(
      nativeOrderedLogsWriter()!(
        file,
        stored.map((p) => p.length),
        firstTimes(bodies).map(String),
        [...(fields as Iterable<string | null>)],
        join(dir, 'damaged.parquet'),
        'Orrery version test',
      ),
      (error: Error) => error.message.includes(`${file}#3`),
    );
  });
});
