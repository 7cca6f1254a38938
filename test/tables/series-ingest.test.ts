// Issue 12: bulk ingest (CommandStatementIngest, as ADBC's adbc_ingest sends it), transactions
// (BeginTransaction / EndTransaction) and prepared writes into series tables, over a real socket.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  Binary,
  Bool,
  DateDay,
  Decimal,
  Dictionary,
  Field,
  Float32,
  Float64,
  Int8,
  Int32,
  LargeUtf8,
  TimeMicrosecond,
  TimestampMillisecond,
  TimestampSecond,
  Uint16,
  Uint64,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampNanosecond,
  Utf8,
  makeData,
  makeVector,
  vectorFromArray,
} from 'apache-arrow';
import { DuckDBEngine } from '../../src/engine/index.js';
import { Flight } from '../../src/wire/index.js';
import { plainRows, refusal, scalar, sleep, useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import { nextSettled } from '../support/counted-calls.js';
import { FlightSql, packAny, tableToFlightData, unpackAny, type TestFlightClient } from '../support/flight-client.js';
import { dataFrame, grpcMessage, headersFrame, rawHttp2, rstStreamFrame } from '../support/raw-http2.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-ingest-0001', audiences: ['ops'] };
const teamA: TestKey = { name: 'team-a', key: 'team-a-key-ingest-0001', audiences: ['team-a'] };

/** ADBC's ingest modes as TableDefinitionOptions (if_not_exist, if_exists). */
const modes = {
  create: { ifNotExist: 1, ifExists: 1 },
  append: { ifNotExist: 2, ifExists: 2 },
  replace: { ifNotExist: 1, ifExists: 3 },
  createAppend: { ifNotExist: 1, ifExists: 2 },
  /** No TableDefinitionOptions at all, as micromegas's bulk_ingest sends. */
  none: undefined,
};

async function ingest(
  client: TestFlightClient,
  table: string,
  mode: keyof typeof modes,
  data: Table,
  transactionId?: Uint8Array,
): Promise<number> {
  const [meta] = await client.doPut(
    packAny('CommandStatementIngest', { table, tableDefinitionOptions: modes[mode], transactionId }),
    data,
  );
  return Number(
    (
      FlightSql.DoPutUpdateResult.toObject(FlightSql.DoPutUpdateResult.decode(meta), { longs: Number }) as {
        recordCount: number;
      }
    ).recordCount,
  );
}

async function update(client: TestFlightClient, query: string, transactionId?: Uint8Array): Promise<number> {
  const [meta] = await client.doPut(packAny('CommandStatementUpdate', { query, transactionId }));
  return Number(
    (
      FlightSql.DoPutUpdateResult.toObject(FlightSql.DoPutUpdateResult.decode(meta), { longs: Number }) as {
        recordCount: number;
      }
    ).recordCount,
  );
}

async function begin(client: TestFlightClient): Promise<Uint8Array> {
  const [body] = await client.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
  const any = unpackAny(body)!;
  return (FlightSql.ActionBeginTransactionResult.decode(any.value) as unknown as { transactionId: Uint8Array })
    .transactionId;
}

async function end(client: TestFlightClient, transactionId: Uint8Array, commit: boolean): Promise<void> {
  await client.doAction(
    'EndTransaction',
    packAny('ActionEndTransactionRequest', { transactionId, action: commit ? 1 : 2 }),
  );
}

/** `rows` deploys starting at `first`, in batches of `batchRows`. */
function deploys(first: number, rows: number, batchRows = rows): Table {
  const batches: RecordBatch[] = [];
  for (let start = first; start < first + rows; start += batchRows) {
    const n = Math.min(batchRows, first + rows - start);
    const ids = Array.from({ length: n }, (_, i) => start + i);
    batches.push(
      new Table({
        ts: makeVector({
          type: new TimestampNanosecond('UTC'),
          data: BigInt64Array.from(ids, (i) => 1_714_557_600_000_000_000n + BigInt(i) * 1_000_000_000n),
        } as never),
        service: vectorFromArray(
          ids.map((i) => `svc-${i % 3}`),
          new Utf8(),
        ),
        version: vectorFromArray(
          ids.map((i) => (i % 5 === 0 ? null : `v${i}`)),
          new Utf8(),
        ),
        duration: vectorFromArray(
          ids.map((i) => i / 4),
          new Float64(),
        ),
        attempts: makeVector(BigInt64Array.from(ids, (i) => BigInt(i % 7))),
        ok: vectorFromArray(
          ids.map((i) => i % 2 === 0),
          new Bool(),
        ),
      } as never).batches[0],
    );
  }
  return new Table(batches);
}

/**
 * Five rows of every common Arrow type, with nulls (row 2 is null in every nullable column, row 4
 * in some), as pyarrow or another client sends them.
 */
function everyType(): Table {
  const valid = [true, true, false, true, true];
  const nulled = <T>(values: T[]): Array<T | null> => values.map((v, i) => (valid[i] ? v : null));
  return new Table({
    seen: makeVector({
      type: new TimestampMillisecond(),
      data: BigInt64Array.from([0n, 1000n, 2000n, 3000n, 4000n], (ms) => 1_714_557_600_000n + ms),
    } as never),
    i8: vectorFromArray(nulled([-128, -1, 0, 1, 127]), new Int8()),
    u16: vectorFromArray(nulled([0, 1, 2, 3, 65535]), new Uint16()),
    i32: vectorFromArray(nulled([-2147483648, 0, 0, 7, 2147483647]), new Int32()),
    u64: makeVector({
      type: new Uint64(),
      data: BigUint64Array.from([0n, 1n, 2n, 3n, 18446744073709551615n]),
      nullBitmap: Uint8Array.from([0b11011]),
      nullCount: 1,
    } as never),
    f32: vectorFromArray(nulled([0.5, -1.25, 0, 3, 1024]), new Float32()),
    d32: makeVector({
      type: new DateDay(),
      data: Int32Array.from([0, 19_844, 0, 1, -1]),
      nullBitmap: Uint8Array.from([0b11011]),
      nullCount: 1,
    } as never),
    clock: makeVector({
      type: new TimeMicrosecond(),
      data: BigInt64Array.from([0n, 1n, 0n, 3_600_000_000n, 86_399_999_999n]),
      nullBitmap: Uint8Array.from([0b11011]),
      nullCount: 1,
    } as never),
    stamp: makeVector({
      type: new TimestampSecond('UTC'),
      data: BigInt64Array.from([0n, 1n, 2n, 1_714_557_600n, -1n]),
      nullBitmap: Uint8Array.from([0b11011]),
      nullCount: 1,
    } as never),
    amount: makeVector({
      type: new Decimal(2, 10, 128),
      data: Uint32Array.from([
        12345, 0, 0, 0, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0, 0, 0, 0, 1, 0, 0, 0, 99999, 0, 0, 0,
      ]),
      nullBitmap: Uint8Array.from([0b11011]),
      nullCount: 1,
    } as never),
    blob: vectorFromArray(
      nulled([Uint8Array.from([0, 255]), new Uint8Array(0), null, Uint8Array.from([1]), Uint8Array.from([2, 3])]),
      new Binary(),
    ),
    note: vectorFromArray(nulled(['long', 'é', 'x', '', 'ünïcode ✓']), new LargeUtf8()),
    kind: vectorFromArray(nulled(['a', 'b', 'a', 'a', 'c']), new Dictionary(new Utf8(), new Int32())),
  } as never);
}

const everyTypeRows = [
  [
    '2024-05-01 10:00:00',
    '-128',
    '0',
    '-2147483648',
    '0',
    '0.5',
    '1970-01-01',
    '00:00:00',
    '1970-01-01 00:00:00+00',
    '123.45',
    '\\x00\\xFF',
    'long',
    'a',
  ],
  [
    '2024-05-01 10:00:01',
    '-1',
    '1',
    '0',
    '1',
    '-1.25',
    '2024-05-01',
    '00:00:00.000001',
    '1970-01-01 00:00:01+00',
    '-0.01',
    '',
    'é',
    'b',
  ],
  ['2024-05-01 10:00:02', null, null, null, null, null, null, null, null, null, null, null, null],
  [
    '2024-05-01 10:00:03',
    '1',
    '3',
    '7',
    '3',
    '3.0',
    '1970-01-02',
    '01:00:00',
    '2024-05-01 10:00:00+00',
    '0.01',
    '\\x01',
    '',
    'a',
  ],
  [
    '2024-05-01 10:00:04',
    '127',
    '65535',
    '2147483647',
    '18446744073709551615',
    '1024.0',
    '1969-12-31',
    '23:59:59.999999',
    '1969-12-31 23:59:59+00',
    '999.99',
    '\\x02\\x03',
    'ünïcode ✓',
    'c',
  ],
];

describe('series table ingest and transactions (issue 12)', () => {
  const lake = useLakeOrrery({ keys: [admin, teamA] });
  let asAdmin: TestFlightClient;
  let asTeamA: TestFlightClient;

  before(async () => {
    asAdmin = lake.client(admin);
    asTeamA = lake.client(teamA);
  });

  it('mode create makes a series table from the stream (admin); the rows read back exactly', async () => {
    assert.equal(await ingest(asAdmin, 'deploys', 'create', deploys(0, 10, 4)), 10);
    assert.deepEqual(await plainRows(asAdmin, `SELECT column_name, column_type AS data_type FROM (DESCRIBE deploys)`), [
      { column_name: 'ts', data_type: 'TIMESTAMP WITH TIME ZONE' },
      { column_name: 'service', data_type: 'VARCHAR' },
      { column_name: 'version', data_type: 'VARCHAR' },
      { column_name: 'duration', data_type: 'DOUBLE' },
      { column_name: 'attempts', data_type: 'BIGINT' },
      { column_name: 'ok', data_type: 'BOOLEAN' },
      { column_name: 'audience', data_type: 'VARCHAR' },
    ]);
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT epoch_ns(ts) AS ns, service, version, duration, attempts, ok, audience FROM deploys WHERE duration IN (0, 1.75) ORDER BY ts`,
      ),
      [
        {
          ns: 1_714_557_600_000_000_000,
          service: 'svc-0',
          version: null,
          duration: 0,
          attempts: 0,
          ok: true,
          audience: 'public',
        },
        {
          ns: 1_714_557_607_000_000_000,
          service: 'svc-1',
          version: 'v7',
          duration: 1.75,
          attempts: 0,
          ok: false,
          audience: 'public',
        },
      ],
    );
    assert.equal((await refusal(ingest(asAdmin, 'deploys', 'create', deploys(0, 1)))).code, 6);
  });

  it('every common Arrow type, with nulls and in sliced batches, reads back exactly', async () => {
    const data = everyType();
    assert.equal(await ingest(asAdmin, 'typed', 'create', data), 5);
    // Batches that start inside their buffers (Arrow offsets), as a client slicing a table sends them.
    assert.equal(
      await ingest(asAdmin, 'typed', 'append', new Table([...data.slice(1, 3).batches, ...data.slice(3).batches])),
      4,
    );
    const columns = [
      'seen',
      'i8',
      'u16',
      'i32',
      'u64',
      'f32',
      'd32',
      'clock',
      'stamp',
      'amount',
      'blob',
      'note',
      'kind',
    ];
    const rows = await plainRows(
      asAdmin,
      `SELECT ${columns.map((c) => `${c}::VARCHAR AS ${c}`).join(', ')} FROM typed ORDER BY seen, audience`,
    );
    const expected = [0, 1, 1, 2, 2, 3, 3, 4, 4].map((i) => everyTypeRows[i]);
    assert.deepEqual(
      rows.map((row) => columns.map((c) => row[c])),
      expected,
    );
  });

  it('any key appends; a non-admin cannot create or replace; its rows carry its audience', async () => {
    assert.equal(await ingest(asTeamA, 'deploys', 'append', deploys(100, 5)), 5);
    const withAudience = new Table({
      ts: deploys(200, 1).getChild('ts')!,
      audience: vectorFromArray(['public'], new Utf8()),
    } as never);
    assert.equal(await ingest(asTeamA, 'deploys', 'append', withAudience), 1);
    assert.deepEqual(await plainRows(asAdmin, 'SELECT audience, count(*) AS n FROM deploys GROUP BY 1 ORDER BY 1'), [
      { audience: 'public', n: 10 },
      { audience: 'team-a', n: 6 },
    ]);
    assert.equal((await refusal(ingest(asTeamA, 'other', 'create', deploys(0, 1)))).code, 7);
    assert.equal((await refusal(ingest(asTeamA, 'deploys', 'replace', deploys(0, 1)))).code, 7);
    assert.equal((await refusal(ingest(asTeamA, 'missing', 'append', deploys(0, 1)))).code, 5);
  });

  it('without table options (micromegas bulk_ingest) rows are appended to a table that exists', async () => {
    const before = await scalar(asAdmin, 'SELECT count(*) FROM deploys');
    assert.equal(await ingest(asAdmin, 'deploys', 'none', deploys(300, 3)), 3);
    assert.equal(Number(await scalar(asAdmin, 'SELECT count(*) FROM deploys')), Number(before) + 3);
    const missing = await refusal(ingest(asAdmin, 'missing', 'none', deploys(0, 1)));
    assert.deepEqual(
      [missing.code, missing.details],
      [5, "series table 'missing' does not exist (ingest with mode create to create it)"],
    );
    for (const mode of ['none', 'create'] as const) {
      const viewSet = await refusal(ingest(asAdmin, 'processes', mode, deploys(0, 1)));
      assert.deepEqual(
        [viewSet.code, viewSet.details],
        [
          3,
          "ingest: 'processes' is a view set or static table, not a series table (bulk ingest writes series tables only)",
        ],
      );
    }
  });

  it('a mistyped or unknown column is INVALID_ARGUMENT naming it, and nothing of the stream is written', async () => {
    const before = await scalar(asAdmin, 'SELECT count(*) FROM deploys');
    const mistyped = new Table({
      ts: deploys(0, 2).getChild('ts')!,
      duration: vectorFromArray(['fast', 'slow'], new Utf8()),
    } as never);
    const wrongType = await refusal(ingest(asAdmin, 'deploys', 'append', mistyped));
    assert.equal(wrongType.code, 3);
    assert.match(wrongType.details, /column 'duration': VARCHAR .* cannot be stored in DOUBLE/);
    const unknown = new Table({
      ts: deploys(0, 1).getChild('ts')!,
      colour: vectorFromArray(['red'], new Utf8()),
    } as never);
    assert.match(
      (await refusal(ingest(asAdmin, 'deploys', 'append', unknown))).details,
      /column 'colour' is not in series table 'deploys'/,
    );
    // A bad value in the last of several batches: the whole stream is rolled back.
    const good = deploys(300, 4, 2);
    const bad = new Table({
      ts: deploys(400, 1).getChild('ts')!,
      audience: vectorFromArray([null], new Utf8()),
    } as never);
    const mixed = new Table([
      ...good.batches.map(
        (b) =>
          new RecordBatch(
            new Schema([b.schema.fields[0], new Field('audience', new Utf8(), true)]),
            makeData({
              type: new Struct([b.schema.fields[0], new Field('audience', new Utf8(), true)]),
              length: b.numRows,
              nullCount: 0,
              children: [
                b.getChildAt(0)!.data[0],
                vectorFromArray(
                  Array.from({ length: b.numRows }, () => 'ops'),
                  new Utf8(),
                ).data[0],
              ],
            }),
          ),
      ),
      ...bad.batches,
    ]);
    const failed = await refusal(ingest(asAdmin, 'deploys', 'append', mixed));
    assert.equal(failed.code, 3);
    assert.match(failed.details, /audience/);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM deploys'), before);
  });

  it('a client gone mid-upload leaves the table as it was, and the server goes on ingesting', async () => {
    const before = await scalar(asAdmin, 'SELECT count(*) FROM deploys');
    // The client sends its schema and 20 of 40 batches, then stalls past its deadline: the deadline passes mid-upload.
    const all = tableToFlightData(deploys(100_000, 200_000, 5_000));
    const messages = (async function* () {
      yield* all.slice(0, 21);
      await sleep(1500);
      yield* all.slice(21);
    })();
    const cmd = packAny('CommandStatementIngest', { table: 'deploys', tableDefinitionOptions: modes.append });
    const upload = asAdmin.client.doPut(cmd, messages, { deadline: Date.now() + 500 });
    assert.equal((await refusal(upload)).code, 4);
    // The server ends the statement and rolls it back: none of what arrived is ever visible. (The server sees the
    // upload end like a finished one before it learns of the cancel: this fails if the write commits regardless.)
    await sleep(1000);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM deploys'), before);
    assert.equal(await ingest(asAdmin, 'deploys', 'append', deploys(2_000_000, 1)), 1);
    assert.equal(await update(asAdmin, 'DELETE FROM deploys WHERE duration = 500000'), 1);
  });

  it('an upload reset by its client is not kept, also when the reset comes right behind a finished-looking end', async () => {
    const count = async (): Promise<number> => Number(await scalar(asAdmin, 'SELECT count(*) FROM deploys'));
    const before = await count();
    const cmd = packAny('CommandStatementIngest', { table: 'deploys', tableDefinitionOptions: modes.append });
    const upload = (first: number): Buffer =>
      Buffer.concat(
        tableToFlightData(deploys(first, 1)).map((m, i) =>
          grpcMessage(
            Flight.FlightData.encode(
              Flight.FlightData.fromObject(i === 0 ? { ...m, flightDescriptor: { type: 2, cmd } } : m),
            ).finish(),
          ),
        ),
      );
    const doPut = headersFrame(1, {
      ':method': 'POST',
      ':scheme': 'http',
      ':path': '/arrow.flight.protocol.FlightService/DoPut',
      ':authority': 'localhost',
      'content-type': 'application/grpc',
      te: 'trailers',
      authorization: `Bearer ${admin.key}`,
    });
    /** Sends the frames on a connection of their own; the ingest's end: 'COMMIT', or 'ROLLBACK'. */
    const outcome = async (
      frames: (first: Buffer) => Buffer[],
      beforePingAnswer?: () => Buffer[],
    ): Promise<unknown> => {
      const ended = nextSettled(DuckDBEngine.prototype, 'execute', (sql) => sql === 'COMMIT' || sql === 'ROLLBACK');
      const connection = await rawHttp2(lake.orrery.flightPort, beforePingAnswer);
      connection.send(doPut, ...frames(upload(3_000_000)));
      try {
        return await ended;
      } finally {
        connection.close();
      }
    };
    // grpc-go and grpc-java cancel with RST_STREAM alone: the upload never ends.
    assert.equal(await outcome((body) => [dataFrame(1, body), rstStreamFrame(1)]), 'ROLLBACK');
    // Node's client ends the upload (END_STREAM) and resets it one write later. Here the reset is already on its way
    // when the server asks (a PING) whether the client is still there: without that question, the server sees a
    // finished upload and commits it (COMMIT !== ROLLBACK).
    const cut = await outcome(
      (body) => [dataFrame(1, body, true)],
      () => [rstStreamFrame(1)],
    );
    assert.equal(cut, 'ROLLBACK');
    assert.equal(await count(), before);
    // The same upload, not reset, is kept.
    assert.equal(await outcome((body) => [dataFrame(1, body, true)]), 'COMMIT');
    assert.equal(await count(), before + 1);
    assert.equal(await update(asAdmin, 'DELETE FROM deploys WHERE duration = 750000'), 1);
  });

  it('an upload that ended before its deadline, whose write was still running when it passed, is not kept', async () => {
    const before = await scalar(asAdmin, 'SELECT count(*) FROM deploys');
    // Two batches of two fixed-width columns: on the wire in a moment, and longer to write than the deadline
    // gives. (On a loaded machine the deadline may pass during the upload instead: nothing may be kept either way.)
    const rows = 1_000_000;
    const batch = (first: number): Table =>
      new Table({
        ts: makeVector({
          type: new TimestampNanosecond('UTC'),
          data: BigInt64Array.from({ length: rows }, (_, i) => 1_714_557_600_000_000_000n + BigInt(first + i)),
        } as never),
        attempts: makeVector(BigInt64Array.from({ length: rows }, (_, i) => BigInt(i % 7))),
      });
    const messages = tableToFlightData(new Table([...batch(0).batches, ...batch(rows).batches]));
    const cmd = packAny('CommandStatementIngest', { table: 'deploys', tableDefinitionOptions: modes.append });
    const upload = asAdmin.client.doPut(cmd, messages, { deadline: Date.now() + 200 });
    assert.equal((await refusal(upload)).code, 4);
    await sleep(2000);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM deploys'), before);
  });

  it('mode replace swaps the table (admin); create_append creates or appends', async () => {
    assert.equal(await ingest(asAdmin, 'deploys', 'replace', deploys(0, 3)), 3);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM deploys'), 3);
    assert.equal(await ingest(asAdmin, 'fresh', 'createAppend', deploys(0, 2)), 2);
    assert.equal(await ingest(asAdmin, 'fresh', 'createAppend', deploys(2, 2)), 2);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM fresh'), 4);
  });

  it('transactions: what a transaction writes is seen by others only after COMMIT, and never after ROLLBACK', async () => {
    const tx = await begin(asTeamA);
    assert.equal(
      await update(asTeamA, `INSERT INTO deploys (ts, service) VALUES ('2024-06-01 00:00:00+00', 'tx-1')`, tx),
      1,
    );
    assert.equal(await ingest(asTeamA, 'deploys', 'append', deploys(500, 3), tx), 3);
    assert.equal(
      await scalar(asAdmin, `SELECT count(*) FROM deploys WHERE service = 'tx-1' OR ts >= '2024-05-01 10:08:20+00'`),
      0,
    );
    await end(asTeamA, tx, true);
    assert.equal(
      await scalar(asAdmin, `SELECT count(*) FROM deploys WHERE service = 'tx-1' OR ts >= '2024-05-01 10:08:20+00'`),
      4,
    );

    const rolled = await begin(asAdmin);
    assert.equal(await update(asAdmin, `DELETE FROM deploys`, rolled), 7);
    assert.equal(await ingest(asAdmin, 'deploys', 'append', deploys(600, 2), rolled), 2);
    await end(asAdmin, rolled, false);
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM deploys'), 7);
    // A transaction is its key's alone, and ends once.
    const mine = await begin(asAdmin);
    assert.equal((await refusal(update(asTeamA, `INSERT INTO deploys (ts) VALUES (now())`, mine))).code, 3);
    await end(asAdmin, mine, true);
    assert.equal((await refusal(end(asAdmin, mine, true))).code, 3);
  });

  it('a prepared INSERT with several parameter rows (executemany) writes them all, as one transaction', async () => {
    const prepared = await asTeamA.prepare('INSERT INTO deploys (ts, service, attempts) VALUES (?, ?, ?)');
    assert.equal(prepared.isUpdate, true);
    const parameters = new Table({
      ts: vectorFromArray(['2024-07-01 00:00:00+00', '2024-07-02 00:00:00+00'], new Utf8()),
      service: vectorFromArray(['p-1', 'p-2'], new Utf8()),
      attempts: vectorFromArray([1, 2], new Int32()),
    });
    const [meta] = await asTeamA.doPut(
      packAny('CommandPreparedStatementUpdate', { preparedStatementHandle: prepared.handle }),
      parameters,
    );
    const result = FlightSql.DoPutUpdateResult.toObject(FlightSql.DoPutUpdateResult.decode(meta), {
      longs: Number,
    }) as { recordCount: number };
    assert.equal(result.recordCount, 2);
    assert.deepEqual(
      await plainRows(asAdmin, `SELECT service, attempts, audience FROM deploys WHERE service LIKE 'p-%' ORDER BY 1`),
      [
        { service: 'p-1', attempts: 1, audience: 'team-a' },
        { service: 'p-2', attempts: 2, audience: 'team-a' },
      ],
    );
  });

  it('SqlInfo says transactions and ingest are supported, savepoints not', async () => {
    const { table } = await asAdmin.command('CommandGetSqlInfo', { info: [8, 10, 11, 563, 572] });
    const values = new Map(table.toArray().map((row) => [Number(row.info_name), row.value]));
    assert.equal(values.get(8), 1);
    assert.equal(values.get(10), true);
    assert.equal(values.get(11), true);
    assert.equal(values.get(563), true);
    assert.equal(values.get(572), true);
  });
});
