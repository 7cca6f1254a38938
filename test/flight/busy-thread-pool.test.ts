// A large result streams on while libuv's thread pool is taken by other work (#10 item 3): once the native
// exporter's fetching thread builds a result's batches, each one is taken on the JavaScript thread, and a
// wait for the next wakes that thread alone. Before, every batch was a trip through the pool (a pool
// thread took it from the fetching thread, then woke the JavaScript thread), queued behind whatever else
// the pool ran (other statements, OTLP ingestion, file reads): two wake-ups per batch, and a result that
// stopped while the pool was busy. Here every thread of the pool blocks (opening FIFOs nobody writes to
// yet) after the result's first batch, and the rest of the result still reaches a client over a socket.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import { FlightSqlServer, type FlightSqlBackend, type QueryResult } from '../../src/flight/index.js';
import { TestFlightClient } from '../support/flight-client.js';

const rows = 1_000_000;
const poolSize = Number(process.env.UV_THREADPOOL_SIZE || 4);

describe("a large result while libuv's thread pool is busy", () => {
  let engine: DuckDBEngine;
  let server: FlightSqlServer<string>;
  let client: TestFlightClient;
  const dir = mkdtempSync(join(tmpdir(), 'orrery-busy-pool-'));
  const fifos = Array.from({ length: poolSize }, (_, i) => join(dir, `fifo-${i}`));
  /** The pool's threads, each blocked in open(2) on a FIFO until a writer opens it (unblock). */
  let blocked: Promise<FileHandle>[] = [];
  let batchesSent = 0;

  /** Blocks `count` more of the pool's threads (all by default), in the order their opens are queued. */
  const blockPool = (count = poolSize): void => {
    blocked.push(...fifos.slice(blocked.length, blocked.length + count).map((fifo) => open(fifo, 'r')));
  };
  const unblockPool = async (): Promise<void> => {
    // A FIFO opened for reading and writing never blocks, and lets every reader's open return.
    const writers = fifos.map((fifo) => openSync(fifo, constants.O_RDWR));
    for (const handle of await Promise.all(blocked)) await handle.close();
    for (const fd of writers) closeSync(fd);
    blocked = [];
  };

  before(async () => {
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    engine = await DuckDBEngine.create({ threads: 2 });
    const executeQuery = async (_: unknown, { query }: { query: string }): Promise<QueryResult> => {
      if (query.startsWith('SELECT 1')) return smallResult(query);
      const result = await engine.query(query);
      return {
        schema: result.schema,
        batches: (async function* () {
          let sent = 0;
          for await (const batch of result.batches) {
            yield batch;
            // The result's first batch is out (its fetching thread runs): the pool is taken from here on.
            if (++sent === 1) blockPool();
          }
          batchesSent = sent;
        })(),
      };
    };
    // A small statement as the server runs it: prepared and held at GetFlightInfo (the pool free then), run by the
    // DoGet on the held statement, whose run and first batch are one trip through the pool: the pool's last free
    // thread. A blocked open queued right behind that trip takes the thread once it is done, so the pool is all
    // blocked from the first batch on, before anything after it could be queued.
    const smallResult = async (query: string): Promise<QueryResult> => {
      const { description, held } = await engine.describeAndHold(query);
      blockPool(poolSize - 1);
      const result = await engine.query(query, { held }, description);
      const batches = result.batches[Symbol.asyncIterator]();
      const first = batches.next();
      blockPool(1);
      return {
        schema: result.schema,
        batches: (async function* () {
          for (let next = await first; !next.done; next = await batches.next()) yield next.value;
        })(),
      };
    };
    const backend = { authenticateBearer: async () => 'tester', executeQuery };
    server = new FlightSqlServer(backend as unknown as FlightSqlBackend<string>, { address: '127.0.0.1:0' });
    const { port } = await server.start();
    client = new TestFlightClient(`127.0.0.1:${port}`);
    client.headers.authorization = 'Bearer x';
  });
  after(async () => {
    if (blocked.length) await unblockPool();
    client.close();
    await server.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // Without the change the DoGet never ends while the pool is blocked: the test's timeout is what fails it.
  it(
    'reaches the client whole, batch after batch, while every pool thread is blocked',
    { timeout: 120_000 },
    async () => {
      const sql = `SELECT range AS i, 'v' || (range % 100) AS s FROM range(${rows})`;
      const { table, messages } = await client.doGet(new TextEncoder().encode(sql));
      assert.equal(blocked.length, poolSize, 'the pool was blocked during the result');
      assert.equal(table.numRows, rows);
      assert.equal(table.getChild('i')!.get(rows - 1), BigInt(rows - 1));
      assert.equal(table.getChild('s')!.get(rows - 1), `v${(rows - 1) % 100}`);
      assert.ok(batchesSent > 3, `several batches (${batchesSent})`);
      assert.equal(messages, 1 + batchesSent);
      await unblockPool();
    },
  );

  // A result that ends within its first batch: the native exporter learns its end with that batch, so the DoGet
  // ends without another trip through the pool. Before, the end was a second trip queued behind whatever held the
  // pool (here blocked opens): the DoGet never ended while they did, and the test's timeout failed it.
  it('ends a result of one batch, whole, with no other trip through the pool', { timeout: 120_000 }, async () => {
    for (const [sql, count] of [
      ['SELECT 1 AS one', 1],
      ['SELECT 1 + range AS i FROM range(2048)', 2048],
    ] as const) {
      const { table, messages } = await client.doGet(new TextEncoder().encode(sql));
      assert.equal(blocked.length, poolSize, 'the pool was blocked from the first batch on');
      assert.equal(messages, 2, 'the schema and one batch');
      assert.equal(table.numRows, count);
      assert.equal(BigInt(table.getChildAt(0)!.get(count - 1) as number | bigint), BigInt(count));
      await unblockPool();
    }
  });
});
