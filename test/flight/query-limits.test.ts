// Issue 9, item 3: one caller's statements are bounded. A statement timeout stops DuckDB's work
// (DEADLINE_EXCEEDED), the client's gRPC deadline does too, each key runs a bounded number of
// statements with a bounded queue behind them (RESOURCE_EXHAUSTED beyond), and another key is not
// held up by a key that has used up its share.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeSchema } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';
import { cpuSettles } from '../support/cpu-settles.js';
import { doGetSql, failure, hugeCrossJoin } from '../support/statement-calls.js';
import { scrapeMetrics } from '../support/metric-value.js';

/** Runs forever (a counter with no stop). */
const endlessRecursion = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r';
const timeoutMessage =
  'statement timeout: the statement did not finish within 1 s (ORRERY_QUERY_TIMEOUT_SECONDS) and was stopped';

describe('issue 9: statement timeout (ORRERY_QUERY_TIMEOUT_SECONDS)', { timeout: 180_000 }, () => {
  const fixture = useOrrery({ ORRERY_QUERY_TIMEOUT_SECONDS: '1', ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY: '1' });

  for (const [name, sql] of [
    ['a recursive CTE that never ends', endlessRecursion],
    ['a cross join of 10^16 pairs', hugeCrossJoin],
  ]) {
    it(`stops ${name} with DEADLINE_EXCEEDED, and DuckDB stops working on it`, async () => {
      const error = await failure(fixture.reader.client.query(sql));
      assert.equal(error.status, 'DEADLINE_EXCEEDED');
      assert.equal(error.details, timeoutMessage);
      await cpuSettles();
      // The key's only slot is free again: its next statement runs.
      assert.equal(Number((await fixture.reader.query('SELECT 41 + 1 AS n')).getChild('n')?.get(0)), 42);
    });
  }

  it('stops an update sent through DoPut', async () => {
    const error = await failure(fixture.admin.updateCount(`CREATE TABLE timed_out AS ${hugeCrossJoin}`));
    assert.equal(error.status, 'DEADLINE_EXCEEDED');
    assert.equal(error.details, timeoutMessage);
    await cpuSettles();
    const tables = await fixture.admin.query(
      "SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = 'timed_out'",
    );
    assert.equal(Number(tables.getChild('n')?.get(0)), 0);
  });

  it('stops a statement whose result streams for longer than the timeout', async () => {
    let rows = 0;
    const error = await failure(
      (async () => {
        for await (const batch of fixture.reader.client.queryBatches('SELECT range AS n FROM range(1000000000000)'))
          rows += batch.numRows;
      })(),
    );
    assert.equal(error.status, 'DEADLINE_EXCEEDED');
    assert.equal(error.details, timeoutMessage);
    assert.ok(rows > 0, 'some rows arrived before the stop');
    await cpuSettles();
  });

  it("ends a result whose client stops reading at the timeout: the key's slot is free while the client still waits", async () => {
    const stalled = fixture.reader.client
      .queryBatches('SELECT range AS n FROM range(1000000000000)')
      [Symbol.asyncIterator]();
    assert.equal((await stalled.next()).done, false);
    // The client reads nothing more. The key has one slot: its next statement, sent once the stalled one's
    // timeout has passed, runs (before, it waited in the queue until its own timeout passed).
    await sleep(1200);
    assert.equal(Number((await fixture.reader.query('SELECT 41 + 1 AS n')).getChild('n')?.get(0)), 42);
    // Read again, the stalled call ends with why after what it had buffered.
    const error = await failure(
      (async () => {
        for (let next = await stalled.next(); !next.done; next = await stalled.next());
      })(),
    );
    assert.equal(error.status, 'DEADLINE_EXCEEDED');
    assert.equal(error.details, timeoutMessage);
    // RESULT_NOT_READ when the deadline found the statement waiting for the client to drain; under a loaded
    // machine it can still be producing the batch that fills the window, and ends as a plain timeout.
    assert.ok(['RESULT_NOT_READ', 'QUERY_DEADLINE_EXCEEDED'].includes(String(error.errorCode)), error.errorCode);
    await cpuSettles();
  });

  it('honours a client deadline shorter than the timeout: the statement stops when it passes', async () => {
    const error = await failure(fixture.reader.client.query(endlessRecursion, { deadline: Date.now() + 300 }));
    assert.equal(error.status, 'DEADLINE_EXCEEDED');
    await cpuSettles();
    assert.equal((await fixture.reader.query('SELECT 1 AS n')).numRows, 1);
  });
});

describe(
  'issue 9: per-key concurrency (ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY, ORRERY_MAX_QUEUED_QUERIES_PER_KEY)',
  { timeout: 180_000 },
  () => {
    const fixture = useOrrery({
      ORRERY_QUERY_TIMEOUT_SECONDS: '2',
      ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY: '1',
      ORRERY_MAX_QUEUED_QUERIES_PER_KEY: '1',
    });
    const gauge = async (name: string): Promise<number> => {
      const text = await scrapeMetrics(fixture.orrery.httpPort);
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    const until = async (name: string, value: number): Promise<void> => {
      while ((await gauge(name)) !== value) await sleep(20);
    };

    it("queues a statement beyond the key's limit, refuses one beyond its queue, and lets another key through", async () => {
      // DoGet of the SQL text (one call per statement, as micromegas clients send them), so each
      // statement takes its slot once.
      const running = failure(doGetSql(fixture.reader.client, hugeCrossJoin));
      await until('orrery_queries_running', 1);
      const queued = failure(doGetSql(fixture.reader.client, hugeCrossJoin));
      await until('orrery_queries_queued', 1);

      const refused = await failure(fixture.reader.client.query('SELECT 1'));
      assert.equal(refused.status, 'RESOURCE_EXHAUSTED');
      assert.equal(
        refused.details,
        "too many statements from key 'reader': 1 running and 1 waiting (ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY=1, " +
          'ORRERY_MAX_QUEUED_QUERIES_PER_KEY=1); retry when one has finished',
      );
      // Another key has slots of its own.
      assert.equal(Number((await fixture.admin.query('SELECT 7 AS n')).getChild('n')?.get(0)), 7);

      // Both heavy statements end at their timeout (the second one waited, then ran or timed out in line).
      assert.equal((await running).status, 'DEADLINE_EXCEEDED');
      assert.equal((await queued).status, 'DEADLINE_EXCEEDED');
      await until('orrery_queries_running', 0);
      assert.equal(await gauge('orrery_queries_queued'), 0);
      assert.equal((await fixture.reader.query('SELECT 1 AS n')).numRows, 1);
    });

    it('a statement whose client gives up while it waits leaves the queue', async () => {
      const running = failure(doGetSql(fixture.reader.client, hugeCrossJoin));
      await until('orrery_queries_running', 1);
      const gaveUp = await failure(fixture.reader.client.query('SELECT 2', { deadline: Date.now() + 200 }));
      assert.equal(gaveUp.status, 'DEADLINE_EXCEEDED');
      await until('orrery_queries_queued', 0);
      assert.equal((await running).status, 'DEADLINE_EXCEEDED');
      await until('orrery_queries_running', 0);
    });
  },
);

// A text prepared again is answered as it was the first time, without planning (PlanCache.remember), but within
// the key's limits as any other statement (s21-review2's G7).
describe('issue 9: a text prepared again counts against the key', { timeout: 120_000 }, () => {
  const fixture = useOrrery({ ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY: '1', ORRERY_MAX_QUEUED_QUERIES_PER_KEY: '0' });

  it("is refused while the key's one slot is taken", async () => {
    const sql = 'SELECT 42 AS n';
    await fixture.reader.prepare(sql);
    // A result the client stops reading holds the key's slot until the client ends it.
    const held = fixture.reader.client.queryBatches('SELECT range AS n FROM range(1000000000000)');
    try {
      assert.equal((await held.next()).done, false);
      const refused = await failure(fixture.reader.prepare(sql));
      assert.equal(refused.status, 'RESOURCE_EXHAUSTED');
      assert.equal(
        refused.details,
        "too many statements from key 'reader': 1 running and 0 waiting (ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY=1, " +
          'ORRERY_MAX_QUEUED_QUERIES_PER_KEY=0); retry when one has finished',
      );
    } finally {
      await held.return(undefined);
    }
  });
});

// A text prepared again while its key's slot is taken is answered once it has the slot, as things are then (s23: the
// answer was matched against what was read before the wait, and a change made meanwhile left the old one served).
describe('issue 9: a text prepared again after waiting for a slot', { timeout: 180_000 }, () => {
  const fixture = useOrrery({ ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY: '1', ORRERY_MAX_QUEUED_QUERIES_PER_KEY: '1' });
  const columns = async (prepared: Promise<{ datasetSchema: Uint8Array }>): Promise<string[]> =>
    decodeSchema((await prepared).datasetSchema).fields.map((f) => f.name);

  it('is described as the table is when it runs, not as before a change made while it waited', async () => {
    await fixture.admin.updateCount("CREATE TABLE waited AS SELECT 1::BIGINT AS id, 'ada' AS name");
    const sql = 'SELECT * FROM waited';
    assert.deepEqual(await columns(fixture.reader.prepare(sql)), ['id', 'name']);
    // A result the client stops reading holds the key's slot until the client ends it.
    const held = fixture.reader.client.queryBatches('SELECT range AS n FROM range(1000000000000)');
    let waiting: Promise<string[]> | undefined;
    try {
      assert.equal((await held.next()).done, false);
      waiting = columns(fixture.reader.prepare(sql));
      waiting.catch(() => {}); // awaited below, once the slot is free
      const deadline = Date.now() + 120_000;
      while (!/^orrery_queries_queued 1$/m.test(await scrapeMetrics(fixture.orrery.httpPort))) {
        assert.ok(Date.now() < deadline, 'the second prepare never waited for the slot');
        await sleep(20);
      }
      await fixture.admin.updateCount('ALTER TABLE waited ADD COLUMN age INTEGER');
    } finally {
      await held.return(undefined);
    }
    assert.deepEqual(await waiting, ['id', 'name', 'age']);
  });
});
