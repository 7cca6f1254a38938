// Issue 16: log_entries' rows of logs payloads stored as received come out of the native addon's
// __orrery_otlp_logs_ordered already in time order, with their blocks' columns (a merge of the payloads by
// first time, so neither DuckDB's join with __blocks nor its sort runs). Its rows must be exactly those of the
// extract that joins and sorts (the path for payloads whose times overlap too much), in time order: checked in
// a real DuckDB engine over random bodies whose records are out of order within a payload and overlap across
// payloads, in every stored form (decompressed on the read's decode thread), equal times in several payloads,
// payloads without records, NULL block columns; a payload that does not decode fails the statement naming it;
// first times that do not hold fail rather than yield rows out of order.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { DuckDBEngine, engineErrors } from '../../src/engine/index.js';
import { isErrorOf } from '../../src/errors/index.js';
import {
  builtinViewSets,
  orderedBlocks,
  orderedEnumFields,
  orderedProtobufLogs,
  orderedFirstTimeRefused,
  orderedGzipLengthRefused,
  payloadRows,
  protobufPayloadName,
  quoteLiteral,
  typedColumns,
} from '../../src/views/index.js';
import { brotliStored, protobufOf, random, randomRequest, t0, zstdStored } from '../support/otlp-logs-corpus.js';
import { firstTimes } from '../support/first-times.js';

const logEntries = builtinViewSets.find((v) => v.name === 'log_entries')!;
const source = logEntries.source as { extract: string; ordered: string };

describe('issue 16: log_entries rows in time order from the payloads, without a join or a sort', () => {
  let dir: string;
  let engine: DuckDBEngine;
  let files = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-ordered-logs-'));
    engine = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir });
  });
  after(async () => {
    await engine?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The payloads one after the other in one file, as the materializer lays them out. */
  const bundle = (payloads: readonly Uint8Array[]): { file: string; sizes: number[] } => {
    const file = join(dir, `bundle${files++}`);
    writeFileSync(file, Buffer.concat(payloads));
    return { file, sizes: payloads.map((p) => p.length) };
  };

  /**
   * __blocks as the materializer makes it: one row per payload, its `path` and `payload` index; some NULLs. With
   * `oneProcess`, the blocks of one process (its columns the same in every block, username NULL in all) but the
   * last, whose computer differs.
   */
  const blocks = (file: string, count: number, oneProcess = false): string =>
    oneProcess
      ? `CREATE OR REPLACE TEMP TABLE __blocks AS
       SELECT 'a-process-id-longer-than-twelve' AS process_id, 'a-stream-id-longer-than-twelve' AS stream_id,
              'block-' || i AS block_id, make_timestamp_ns(1700000000000000000 + i * 1000) AS insert_time,
              '/usr/bin/a-long-executable' AS exe, NULL::VARCHAR AS username,
              CASE WHEN i = ${count - 1} THEN 'another-host-name' ELSE 'the-host-of-the-process' END AS computer,
              json_object('service.name', 'a-service', 'quote', 'a"b\\c') AS process_properties,
              'public-audience' AS audience, ${quoteLiteral(file)} || '#' || i AS path, i::UBIGINT AS payload
         FROM range(${count}) t(i)`
      : `CREATE OR REPLACE TEMP TABLE __blocks AS
       SELECT 'process-' || (i % 3) AS process_id, 'stream-' || (i % 2) AS stream_id, 'block-' || i AS block_id,
              make_timestamp_ns(1700000000000000000 + i * 1000) AS insert_time, 'exe "' || i || '"' AS exe,
              CASE WHEN i % 2 = 0 THEN NULL ELSE 'user' END AS username, CASE WHEN i % 3 = 0 THEN NULL ELSE 'host' END AS computer,
              json_object('service.name', 'svc' || i, 'quote', 'a"b\\c', 'n', i) AS process_properties,
              CASE WHEN i % 4 = 0 THEN 'team_x' ELSE 'public' END AS audience,
              ${quoteLiteral(file)} || '#' || i AS path, i::UBIGINT AS payload
         FROM range(${count}) t(i)`;

  async function rows(sql: string, setup: string[]): Promise<unknown[][]> {
    const { batches } = await engine.query(sql, { setup });
    const out: unknown[][] = [];
    for await (const batch of batches)
      for (let i = 0; i < batch.numRows; i++) out.push(batch.schema.fields.map((_, c) => batch.getChildAt(c)?.get(i)));
    return out;
  }

  const text = (rows: unknown[][]): string[] => rows.map((row) => JSON.stringify(row.map(String)));
  const selectAll = (sql: string): string =>
    `SELECT * REPLACE (properties::VARCHAR AS properties, process_properties::VARCHAR AS process_properties) FROM (${typedColumns(logEntries.columns, sql)})`;

  /** The ordered read's rows, and the join-and-sort extract's, over the same payloads and blocks. */
  async function bothWays(payloads: readonly Uint8Array[], given?: bigint[], oneProcess = false) {
    const { file, sizes } = bundle(payloads);
    const setup = [blocks(file, payloads.length, oneProcess)];
    const first = given ?? firstTimes(payloads);
    const ordered = await rows(
      selectAll(source.ordered.replaceAll('{payloads}', orderedProtobufLogs(file, sizes, first))),
      [...setup, orderedBlocks],
    );
    const sorted = await rows(
      selectAll(source.extract.replaceAll('{payloads}', payloadRows('log', [], { file, sizes }))),
      setup,
    );
    return { file, ordered, sorted };
  }

  const time = logEntries.columns.findIndex((c) => c.name === 'time');
  const assertInTimeOrder = (rows: unknown[][], what: string): void => {
    for (let i = 1; i < rows.length; i++)
      assert.ok((rows[i - 1][time] as bigint) <= (rows[i][time] as bigint), `${what}: row ${i} before the one above`);
  };

  it('gives the rows of the join and sort, in time order, on random overlapping payloads', async () => {
    const next = random(1616);
    let total = 0;
    for (let round = 0; round < 12; round++) {
      const bodies = Array.from({ length: 25 }, () => protobufOf(randomRequest(next)));
      // In every stored form, mixed as in a lake written by servers of before and after the 0xcf and 0xd7 marks:
      // each payload is decompressed on the read's own decode thread.
      const forms = [
        (b: Uint8Array) => zstdStored(b),
        (b: Uint8Array) => brotliStored(b),
        (b: Uint8Array) => brotliStored(b, false),
        gzipSync,
        (b: Uint8Array) => b,
      ];
      const payloads = bodies.map((b, i) => forms[(i + round) % forms.length](b));
      const { ordered, sorted } = await bothWays(payloads, firstTimes(bodies));
      assert.ok(ordered.length > 0);
      assertInTimeOrder(ordered, `round ${round}`);
      assert.deepEqual(text(ordered).sort(), text(sorted).sort(), `round ${round}`);
      total += ordered.length;
    }
    assert.ok(total > 1000, `${total} rows compared`);
  });

  it('keeps equal times in the order of the payloads, then of their records; skips payloads without records', async () => {
    const record = (time: bigint, body: string): object => ({
      timeUnixNano: String(time),
      body: { stringValue: body },
    });
    const request = (records: object[]): Uint8Array =>
      protobufOf({ resourceLogs: [{ scopeLogs: [{ scope: { name: 's' }, logRecords: records }] }] });
    const payloads = [
      request([record(t0 + 5n, 'a5'), record(t0 + 1n, 'a1'), record(t0 + 5n, 'a5b')]),
      request([]),
      request([record(t0 + 5n, 'b5'), record(t0 + 3n, 'b3')]),
      request([record(t0 + 1n, 'c1')]),
    ];
    const { ordered, sorted } = await bothWays(payloads);
    const msg = logEntries.columns.findIndex((c) => c.name === 'msg');
    // By first time: a (1), c (1), b (3); equal times by that order, then by the record's place.
    assert.deepEqual(
      ordered.map((r) => r[msg]),
      ['a1', 'c1', 'b3', 'a5', 'a5b', 'b5'],
    );
    assert.deepEqual(text(ordered).sort(), text(sorted).sort());
  });

  it('gives every row in the order of one pop of the earliest payload per row, on runs and ties across many payloads', async () => {
    // Each row leaves as the earliest of the held payloads' next rows, equal times by the payloads' order by first
    // time (then by index), and a payload's rows by time then by place. The merge takes several rows from one
    // payload without a heap operation while it stays the earliest (SinkTop): the order must be that one exactly.
    const next = random(2020);
    for (let round = 0; round < 4; round++) {
      const records = Array.from({ length: 40 }, (_, p) => {
        // Payloads of 1 to 60 records over a shared span of 50 ns: long runs of one payload, and many equal times.
        const start = BigInt(Math.floor(next() * 30));
        return Array.from({ length: 1 + Math.floor(next() * 60) }, (_, i) => ({
          time: t0 + start + BigInt(Math.floor(next() * (round % 2 === 0 ? 20 : 4))),
          body: `${p}:${i}`,
        }));
      });
      const payloads = records.map((rs) =>
        protobufOf({
          resourceLogs: [
            {
              scopeLogs: [
                {
                  scope: { name: 's' },
                  logRecords: rs.map((r) => ({ timeUnixNano: String(r.time), body: { stringValue: r.body } })),
                },
              ],
            },
          ],
        }),
      );
      const firsts = records.map((rs) => rs.reduce((min, r) => (r.time < min ? r.time : min), rs[0].time));
      const place = records
        .map((_, p) => p)
        .sort((a, b) => (firsts[a] < firsts[b] ? -1 : firsts[a] > firsts[b] ? 1 : a - b));
      const rank = new Map(place.map((p, at) => [p, at]));
      const expected = records
        .flatMap((rs, p) => rs.map((r, i) => ({ ...r, p, i })))
        .sort((a, b) =>
          a.time !== b.time ? (a.time < b.time ? -1 : 1) : a.p !== b.p ? rank.get(a.p)! - rank.get(b.p)! : a.i - b.i,
        )
        .map((r) => r.body);
      const { ordered, sorted } = await bothWays(payloads);
      const msg = logEntries.columns.findIndex((c) => c.name === 'msg');
      assert.deepEqual(
        ordered.map((r) => r[msg]),
        expected,
        `round ${round}`,
      );
      assert.deepEqual(text(ordered).sort(), text(sorted).sort(), `round ${round}`);
    }
  });

  it('writes the block columns a chunk of rows shares (one process) as the rows of the join and sort, through Parquet', async () => {
    // Within a chunk the merge yields a block column whose value every row shares as one constant value; the
    // Parquet writer's buffer copies it once. Four payloads interleaved record by record, then a last one alone
    // whose computer differs (chunks of one value, chunks of two), username NULL in every block. No two records
    // share a time (the last payload's are 4 modulo 8), so the join and sort give one order.
    const record = (time: bigint, i: number): object => ({
      timeUnixNano: String(time),
      body: { stringValue: `record ${i}` },
    });
    const request = (times: bigint[]): Uint8Array =>
      protobufOf({
        resourceLogs: [{ scopeLogs: [{ scope: { name: 's' }, logRecords: times.map((t, i) => record(t, i)) }] }],
      });
    const payloads = [
      ...[0, 1, 2, 3].map((k) => request(Array.from({ length: 1500 }, (_, i) => t0 + BigInt(i * 8 + k)))),
      request(Array.from({ length: 3000 }, (_, i) => t0 + 11908n + BigInt(i * 8))),
    ];
    const { file, ordered, sorted } = await bothWays(payloads, undefined, true);
    assert.equal(ordered.length, 9000);
    assert.deepEqual(text(ordered), text(sorted));
    const parquet = join(dir, 'one-process.parquet');
    const read = source.ordered.replaceAll(
      '{payloads}',
      orderedProtobufLogs(
        file,
        payloads.map((p) => p.length),
        firstTimes(payloads),
      ),
    );
    await rows(`COPY (${selectAll(read)}) TO ${quoteLiteral(parquet)} (FORMAT parquet)`, [
      blocks(file, payloads.length, true),
      orderedBlocks,
    ]);
    assert.deepEqual(text(await rows(`SELECT * FROM read_parquet(${quoteLiteral(parquet)})`, [])), text(sorted));
  });

  it('writes the process columns as ENUMs, read back as the VARCHARs of the join and sort, up to 256 values', async () => {
    // ENUMs of each range's values (NULLs among them: username and computer), written to Parquet uncast as the
    // materializer writes them. With 300 payloads exe (one value per payload) has too many values to be one.
    const next = random(1717);
    for (const count of [25, 300]) {
      const payloads = Array.from({ length: count }, () => protobufOf(randomRequest(next)));
      const { file, sizes } = bundle(payloads);
      const setup = [blocks(file, count)];
      const read = source.ordered.replaceAll(
        '{payloads}',
        orderedProtobufLogs(file, sizes, firstTimes(payloads), orderedEnumFields),
      );
      const [types] = await rows(
        `SELECT ${orderedEnumFields.map((f) => `typeof(${f})`).join(', ')} FROM (${read}) LIMIT 1`,
        [...setup, orderedBlocks],
      );
      const enums = (types as string[]).map((t) => t.startsWith('ENUM('));
      // username is NULL in the even blocks, computer in every third; exe differs in each.
      assert.deepEqual(enums, [true, true, count <= 256, true, true, true], `${count} payloads: ${types.join(', ')}`);
      const parquet = join(dir, `enums-${count}.parquet`);
      await rows(
        `COPY (${typedColumns(logEntries.columns, read, [], new Set(orderedEnumFields))}) TO ${quoteLiteral(parquet)} (FORMAT parquet)`,
        [...setup, orderedBlocks],
      );
      const back = await rows(`SELECT * FROM read_parquet(${quoteLiteral(parquet)})`, []);
      const sorted = await rows(
        selectAll(source.extract.replaceAll('{payloads}', payloadRows('log', [], { file, sizes }))),
        setup,
      );
      assertInTimeOrder(back, `${count} payloads`);
      assert.deepEqual(text(back).sort(), text(sorted).sort(), `${count} payloads`);
      const [[varchar]] = await rows(
        `SELECT bool_and(column_type = 'VARCHAR') FROM (DESCRIBE SELECT * FROM read_parquet(${quoteLiteral(parquet)}))
          WHERE column_name IN (${orderedEnumFields.map(quoteLiteral).join(', ')})`,
        [],
      );
      assert.equal(varchar, true);
    }
  });

  it('gives the rows of the join and sort to a COPY on two threads, a row group at a time, each in time order', async () => {
    // With row_group_size, two DuckDB threads take the merged rows in turns of a row group and the COPY (PRESERVE_ORDER
    // false) encodes each thread's row group on that thread: what the materializer runs with two maintenance threads.
    // Sixteen payloads interleaved record by record (their times overlap all along), 24,000 rows in 2,048-row turns.
    const two = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir, threads: 2 });
    try {
      const record = (time: bigint, i: number): object => ({
        timeUnixNano: String(time),
        body: { stringValue: `record ${i}` },
        attributes: [{ key: 'i', value: { intValue: String(i) } }],
      });
      const payloads = Array.from({ length: 16 }, (_, k) =>
        protobufOf({
          resourceLogs: [
            {
              scopeLogs: [
                {
                  scope: { name: 's' },
                  logRecords: Array.from({ length: 1500 }, (_, i) => record(t0 + BigInt(i * 16 + k), i)),
                },
              ],
            },
          ],
        }),
      );
      const { file, sizes } = bundle(payloads);
      const setup = [blocks(file, payloads.length)];
      const parquet = join(dir, 'two-threads.parquet');
      // The COPY of the read over these payloads, two threads taking turns of 2,048 rows.
      const copy = (at: { file: string; sizes: number[] }): Promise<number> =>
        two.execute(
          `COPY (${typedColumns(
            logEntries.columns,
            source.ordered.replaceAll(
              '{payloads}',
              orderedProtobufLogs(at.file, at.sizes, firstTimes(payloads), orderedEnumFields, 2048),
            ),
            [],
            new Set(orderedEnumFields),
          )}) TO ${quoteLiteral(parquet)} (FORMAT parquet, ROW_GROUP_SIZE 2048, PRESERVE_ORDER false)`,
          { setup: [blocks(at.file, payloads.length), orderedBlocks] },
        );
      assert.equal(await copy({ file, sizes }), 24000);
      const back = await rows(`SELECT * FROM read_parquet(${quoteLiteral(parquet)})`, []);
      const sorted = await rows(
        selectAll(source.extract.replaceAll('{payloads}', payloadRows('log', [], { file, sizes }))),
        setup,
      );
      assert.deepEqual(text(back).sort(), text(sorted).sort());
      const groups = await rows(
        `SELECT DISTINCT row_group_id, row_group_num_rows FROM parquet_metadata(${quoteLiteral(parquet)}) ORDER BY 1`,
        [],
      );
      assert.ok(groups.length >= 12, `${groups.length} row groups`);
      let at = 0;
      for (const [id, count] of groups) {
        assertInTimeOrder(back.slice(at, at + Number(count)), `row group ${String(id)}`);
        at += Number(count);
      }
      // A payload that does not decode fails the statement on both threads (the other one waits for no turn).
      await assert.rejects(
        copy(bundle([...payloads.slice(0, 8), payloads[8].subarray(0, 100), ...payloads.slice(9)])),
        (error: Error) => isErrorOf(error, engineErrors, 'QUERY_INVALID') && error.message.includes('#8'),
      );
    } finally {
      await two.close();
    }
  });

  it('fails on a payload that does not decode, naming it, and on a first time its records do not hold', async () => {
    const good = protobufOf(randomRequest(random(3)));
    const cut = good.subarray(0, good.length - 3);
    await assert.rejects(
      bothWays([good, cut, good], [t0, t0, t0]),
      (error: Error) => isErrorOf(error, engineErrors, 'QUERY_INVALID') && error.message.includes('#1'),
    );
    // A first time after the payload's earliest record: its rows would leave time order, so the read fails.
    const { file, sizes } = bundle([good]);
    const [first] = firstTimes([good]);
    await assert.rejects(
      rows(selectAll(source.ordered.replaceAll('{payloads}', orderedProtobufLogs(file, sizes, [first + 1n]))), [
        blocks(file, 1),
        orderedBlocks,
      ]),
      (error: Error) =>
        isErrorOf(error, engineErrors, 'QUERY_INVALID') &&
        error.message.includes(`${protobufPayloadName(file, 0)}: ${orderedFirstTimeRefused}`),
    );
  });

  it('refuses a gzip body whose trailer misstates what it holds, having inflated no more than it states', async () => {
    // Stored as received before ingestion checked the trailer (3f89ea9): the materializer sizes the read's hold by
    // it, so a body holding more than it states would lift the hold. gunzip takes bytes after the end and further
    // members, whose trailer a client writes: four zero bytes state 0, and so does an empty last member.
    const good = protobufOf(randomRequest(random(5)));
    const stated = gzipSync(good);
    const misstating = [
      Buffer.concat([stated, Buffer.alloc(4)]),
      Buffer.concat([stated, gzipSync(Buffer.alloc(0))]),
      Buffer.concat([stated, Buffer.from([1, 0, 0, 0])]),
      Buffer.concat([gzipSync(good.subarray(0, 100)), gzipSync(good.subarray(100))]),
    ];
    for (const [i, body] of misstating.entries()) {
      const { file, sizes } = bundle([stated, body]);
      await assert.rejects(
        rows(selectAll(source.ordered.replaceAll('{payloads}', orderedProtobufLogs(file, sizes, [t0, t0]))), [
          blocks(file, 2),
          orderedBlocks,
        ]),
        (error: Error) =>
          isErrorOf(error, engineErrors, 'QUERY_INVALID') &&
          error.message.includes(`${protobufPayloadName(file, 1)}: ${orderedGzipLengthRefused}`),
        `body ${i}`,
      );
    }
    // Read through the sort, each gives the rows gunzip finds in it (good's): the materializer's way around them.
    const sorted = async (payloads: readonly Uint8Array[]): Promise<unknown[][]> => {
      const { file, sizes } = bundle(payloads);
      const extract = source.extract.replaceAll('{payloads}', payloadRows('log', [], { file, sizes }));
      return rows(selectAll(extract), [blocks(file, payloads.length)]);
    };
    const once = (await sorted([stated])).length;
    assert.ok(once > 0);
    assert.equal((await sorted(misstating)).length, misstating.length * once);
  });

  it('fails the statement, not the process, when a payload cannot be held in memory', async () => {
    // The payloads are decoded on a thread of the addon's own: memory refused there (here a size no string can
    // hold, std::length_error; under load std::bad_alloc) used to abort the process.
    const { file } = bundle([protobufOf(randomRequest(random(4)))]);
    await assert.rejects(
      rows(`SELECT * FROM ${orderedProtobufLogs(file, [2 ** 63], [t0])}`, [blocks(file, 1), orderedBlocks]),
      (error: Error) =>
        isErrorOf(error, engineErrors, 'QUERY_INVALID') && error.message.includes(protobufPayloadName(file, 0)),
    );
  });

  it('reads only files in the folder it was registered with', async () => {
    await assert.rejects(
      engine.values(
        `SELECT * FROM __orrery_otlp_logs_ordered('/etc/passwd', [1]::UBIGINT[], [0]::BIGINT[], ['a','b','c','0','e','f','g','{}','i'])`,
      ),
      /reads only the materializer's scratch files/,
    );
  });
});
