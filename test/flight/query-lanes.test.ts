// Issue 9, item 3: heavy statements cannot take every core from small ones. A SELECT with no first
// batch within ORRERY_SMALL_QUERY_MS runs again in the heavy lane (an engine of its own, few threads),
// which runs at most ORRERY_MAX_HEAVY_QUERIES statements at once, one per key, the others waiting;
// the statement timeout and the per-key limits hold there too. Latency itself is measured by
// bench/isolation (compare.sh), not here.
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { metricValue } from '../support/metric-value.js';
import { useOrrery } from '../support/orrery-process.js';
import { cpuSettles } from '../support/cpu-settles.js';
import { doGetSql, failure, hugeCrossJoin } from '../support/statement-calls.js';

/** 2.5 * 10^7 pairs: work for the heavy lane's one thread, with an answer checked below. */
const side = 5_000;
const mediumCrossJoin = `SELECT count(*) AS n FROM range(${side}) a, range(${side}) b WHERE (a.range + b.range) % 7 = 0`;
const timeoutMessage =
  'statement timeout: the statement did not finish within 8 s (ORRERY_QUERY_TIMEOUT_SECONDS) and was stopped';

/** Where an engine of the server spills past its memory limit: a folder of its own in the server's scratch folder. */
const scratchSpill = (engine: 'query' | 'heavy'): RegExp =>
  new RegExp(`^${tmpdir().replaceAll('/', '\\/')}/orrery-scratch-[^/]+/${engine}-spill$`);

/** The lanes' metrics, read from the server's /metrics. */
function laneMetrics(httpPort: () => number) {
  const metric = (name: string): Promise<number> => metricValue(httpPort(), name);
  const until = async (name: string, value: number): Promise<void> => {
    while ((await metric(name)) !== value) await sleep(20);
  };
  return { metric, until };
}

// 1 ms: no statement with a real aggregation answers its first batch that soon, however idle the
// machine, so the demotion is certain (with 300 ms, a quiet machine finished the join in time).
describe('issue 9: a statement demoted to the heavy lane', { timeout: 180_000 }, () => {
  const fixture = useOrrery({
    ORRERY_SMALL_QUERY_MS: '1',
    ORRERY_QUERY_TIMEOUT_SECONDS: '120',
    ORRERY_DUCKDB_MEMORY_LIMIT: '1GiB',
  });
  const { metric } = laneMetrics(() => fixture.orrery.httpPort);

  it('a statement with no first batch in time runs again in the heavy lane and answers exactly', async () => {
    const residues = Array.from({ length: 7 }, (_, r) => Math.floor((side - 1 - r) / 7) + 1);
    const expected = residues.reduce((sum, n, r) => sum + n * residues[(7 - r) % 7], 0);
    const table = await fixture.reader.query(mediumCrossJoin);
    assert.equal(Number(table.getChild('n')?.get(0)), expected);
    assert.equal(await metric('orrery_query_demotions_total'), 1);
    assert.equal(await metric('orrery_heavy_queries_running'), 0);
  });

  it('a statement whose first batch is on its way when its time runs out answers, from the heavy lane', async () => {
    // At 1 ms, SELECT 7's batch is often filled as the timer stops the small run: its next step
    // failed as cancelled (CANCELLED: query cancelled) before the statement moved to the heavy lane.
    for (let i = 0; i < 20; i++)
      assert.equal(Number((await fixture.admin.query(`SELECT ${i} AS n`)).getChild('n')?.get(0)), i);
  });

  it("the heavy lane's engine has its own share of memory, a quarter of the query engine's limit, and spills to the server's scratch folder", async () => {
    const demotedBefore = await metric('orrery_query_demotions_total');
    const table = await fixture.admin.query(
      `SELECT current_setting('memory_limit') AS heavy, current_setting('temp_directory') AS spill, (${mediumCrossJoin}) AS n, count(*) AS one FROM range(1)`,
    );
    assert.equal(table.getChild('heavy')?.get(0), '256.0 MiB');
    // Not DuckDB's default for an in-memory database, `.tmp` under the server's working directory.
    assert.match(String(table.getChild('spill')?.get(0)), scratchSpill('heavy'));
    assert.equal(await metric('orrery_query_demotions_total'), demotedBefore + 1);
  });
});

describe('issue 9: the small and heavy lanes of statements', { timeout: 180_000 }, () => {
  const fixture = useOrrery({
    ORRERY_SMALL_QUERY_MS: '300',
    ORRERY_MAX_HEAVY_QUERIES: '2',
    ORRERY_QUERY_TIMEOUT_SECONDS: '8',
  });
  const { metric, until } = laneMetrics(() => fixture.orrery.httpPort);

  it("the query engine spills to the server's scratch folder", async () => {
    const demotedBefore = await metric('orrery_query_demotions_total');
    const table = await fixture.admin.query(`SELECT current_setting('temp_directory') AS spill`);
    // A loaded machine may take 300 ms to answer: then the heavy lane's engine answered.
    const demoted = (await metric('orrery_query_demotions_total')) > demotedBefore;
    assert.match(String(table.getChild('spill')?.get(0)), scratchSpill(demoted ? 'heavy' : 'query'));
  });

  it('runs at most ORRERY_MAX_HEAVY_QUERIES heavy statements, one per key; the timeout stops them running or waiting', async () => {
    const demotedBefore = await metric('orrery_query_demotions_total');
    const reader = [failure(doGetSql(fixture.reader.client, hugeCrossJoin))];
    await until('orrery_heavy_queries_running', 1);
    reader.push(failure(doGetSql(fixture.reader.client, hugeCrossJoin)));
    await until('orrery_heavy_queries_queued', 1); // the reader's second waits: one per key
    const admin = failure(doGetSql(fixture.admin.client, hugeCrossJoin));
    await until('orrery_heavy_queries_running', 2); // another key's runs beside it
    assert.equal(await metric('orrery_heavy_queries_queued'), 1);
    // A small statement of either key answers meanwhile, in the small lane.
    assert.equal(Number((await fixture.reader.query('SELECT 7 AS n')).getChild('n')?.get(0)), 7);
    for (const error of await Promise.all([...reader, admin])) {
      assert.equal(error.status, 'DEADLINE_EXCEEDED');
      assert.equal(error.details, timeoutMessage);
    }
    await until('orrery_heavy_queries_running', 0);
    assert.equal(await metric('orrery_heavy_queries_queued'), 0);
    // (A small statement slowed past ORRERY_SMALL_QUERY_MS by a loaded machine is demoted too: at least 3.)
    assert.ok((await metric('orrery_query_demotions_total')) - demotedBefore >= 3);
    await cpuSettles();
  });
});
