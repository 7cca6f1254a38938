// Driver of bench/isolation/run.sh (see there): latency of a small query and of an OTLP POST from
// the key `small`, idle and while heavy keys keep N heavy queries running; prints both phases side
// by side with their ratio, then one JSON line. Exits 1 on a wrong answer or a failed request.
import { execFileSync } from 'node:child_process';
import { loadavg, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { FlightSqlClient } from '../../dist/src/client/index.js';

const { values: args } = parseArgs({
  options: {
    'http-port': { type: 'string' },
    'flight-port': { type: 'string' },
    'server-pid': { type: 'string' },
    heavy: { type: 'string', default: '4' },
    'heavy-keys': { type: 'string', default: '1' },
    idle: { type: 'string', default: '10' },
    loaded: { type: 'string', default: '20' },
  },
});
const httpPort = Number(args['http-port']);
const address = `127.0.0.1:${args['flight-port']}`;
const heavyCount = Number(args.heavy);
const heavyKeys = Number(args['heavy-keys']);
const log = (line) => process.stderr.write(`${line}\n`);

/** A cross join of 10^16 pairs: hours of DuckDB work, a few bytes of answer. */
const heavySql = 'SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range < 0';
const smallSql = "SELECT count(*) AS n FROM log_entries WHERE exe = 'isolation-bench'";
let sequence = 0;

/** 100 log records of the process isolation-bench, OTLP/JSON. */
function logsBody() {
  const base = BigInt(Date.now()) * 1_000_000n;
  const n = sequence++;
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'isolation-bench' } }] },
        scopeLogs: [
          {
            scope: { name: 'bench' },
            logRecords: Array.from({ length: 100 }, (_, i) => ({
              timeUnixNano: String(base + BigInt(i)),
              severityNumber: 9,
              body: { stringValue: `request ${n} record ${i}` },
            })),
          },
        ],
      },
    ],
  });
}

/** A call that takes longer than this counts as failed (a stalled server would otherwise hang the run). */
const callTimeoutMs = 30_000;

async function postLogs() {
  const response = await fetch(`http://127.0.0.1:${httpPort}/v1/logs`, {
    signal: AbortSignal.timeout(callTimeoutMs),
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer small-key-0123' },
    body: logsBody(),
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`OTLP POST answered ${response.status}`);
}

const small = new FlightSqlClient({ address, apiKey: 'small-key-0123' });
async function smallQuery() {
  const table = await small.query(smallSql, { deadline: Date.now() + callTimeoutMs });
  if (table.numRows !== 1) throw new Error(`the small query answered ${table.numRows} rows`);
}

/**
 * Runs `action` back to back until `until` (ms since the epoch), 20 ms apart; the latency of each,
 * in ms. A call that fails by timing out counts with its time (at least the timeout); any other
 * failure ends the run.
 */
async function measure(action, until, failures) {
  const latencies = [];
  while (Date.now() < until) {
    const start = performance.now();
    try {
      await action();
    } catch (error) {
      const timedOut = error?.name === 'TimeoutError' || error?.status === 'DEADLINE_EXCEEDED';
      if (!timedOut) throw error;
      failures.timeouts++;
    }
    latencies.push(performance.now() - start);
    await sleep(20);
  }
  return latencies;
}

function summary(latencies) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  return {
    count: sorted.length,
    p50_ms: round(at(0.5)),
    p99_ms: round(at(0.99)),
    max_ms: round(sorted[sorted.length - 1]),
  };
}
const round = (x) => Math.round(x * 10) / 10;

/** GET /health: the event loop alone (no DuckDB, no Postgres), for telling what a slow call waited on. */
async function health() {
  const response = await fetch(`http://127.0.0.1:${httpPort}/health`, { signal: AbortSignal.timeout(callTimeoutMs) });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`GET /health answered ${response.status}`);
}

/** SELECT 1 as `small`: Flight SQL, admission and DuckDB without a view set or a file read. */
async function selectOne() {
  const table = await small.query('SELECT 1 AS one', { deadline: Date.now() + callTimeoutMs });
  if (table.numRows !== 1) throw new Error(`SELECT 1 answered ${table.numRows} rows`);
}

async function phase(seconds) {
  const until = Date.now() + seconds * 1000;
  const failed = { query: { timeouts: 0 }, post: { timeouts: 0 }, one: { timeouts: 0 }, health: { timeouts: 0 } };
  const [query, post, one, healthy] = await Promise.all([
    measure(smallQuery, until, failed.query),
    measure(postLogs, until, failed.post),
    measure(selectOne, until, failed.one),
    measure(health, until, failed.health),
  ]);
  return {
    query: { ...summary(query), ...failed.query },
    post: { ...summary(post), ...failed.post },
    one: { ...summary(one), ...failed.one },
    health: { ...summary(healthy), ...failed.health },
  };
}

/** Keeps `heavyCount` heavy queries running over `heavyKeys` keys until stopped; counts how they ended. */
function startHeavy() {
  const clients = Array.from(
    { length: heavyKeys },
    (_, i) => new FlightSqlClient({ address, apiKey: `heavy-key-${i + 1}` }),
  );
  const outcomes = {};
  let stopping = false;
  const loops = Array.from({ length: heavyCount }, async (_, i) => {
    while (!stopping) {
      try {
        await clients[i % heavyKeys].query(heavySql);
        outcomes.ok = (outcomes.ok ?? 0) + 1;
      } catch (error) {
        if (stopping) break;
        const status = error.status ?? 'ERROR';
        outcomes[status] = (outcomes[status] ?? 0) + 1;
        await sleep(100);
      }
    }
  });
  return {
    outcomes,
    // grpc-js lets calls in flight run on after close(): the heavy queries end with the server,
    // which run.sh stops next.
    stop() {
      stopping = true;
      for (const client of clients) client.close();
      return loops;
    },
  };
}

async function gauge(name) {
  // /metrics answers an admin key only (run.sh's admin).
  const text = await (
    await fetch(`http://127.0.0.1:${httpPort}/metrics`, { headers: { authorization: 'Bearer admin-key-0123' } })
  ).text();
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

function gitState() {
  const git = (...a) => {
    try {
      return execFileSync('git', a, { cwd: new URL('../..', import.meta.url).pathname, encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  return {
    commit: process.env.ORRERY_REF_SHA || git('rev-parse', '--short', 'HEAD'),
    src_dirty: git('status', '--porcelain', '--', 'src') !== '',
  };
}

const load = loadavg()[0];
if (load > cpus().length)
  log(
    `bench: warning: the 1-minute load average is ${load.toFixed(1)} on ${cpus().length} cores; figures will be noisy`,
  );

// Warm up: a few of each, and data for the small query to count.
for (let i = 0; i < 5; i++) {
  await postLogs();
  await smallQuery();
}
log(`idle: ${args.idle} s of small queries and OTLP POSTs`);
const idle = await phase(Number(args.idle));
log(`loaded: ${heavyCount} heavy queries from ${heavyKeys} key(s), ${args.loaded} s`);
const heavy = startHeavy();
for (let i = 0; i < 200 && (await gauge('orrery_queries_running')) < Math.min(heavyCount, 4 * heavyKeys); i++)
  await sleep(50);
const heavyRunning = await gauge('orrery_queries_running');
const heavyQueued = await gauge('orrery_queries_queued');
const loaded = await phase(Number(args.loaded));
heavy.stop();
small.close();

const rows = [
  ['small query', idle.query, loaded.query],
  ['OTLP POST (100 records)', idle.post, loaded.post],
  ['  SELECT 1 (no view set)', idle.one, loaded.one],
  ['  GET /health (event loop)', idle.health, loaded.health],
];
console.log(
  `\n${heavyCount} heavy queries (${heavyRunning} running, ${heavyQueued} queued when measured) from ${heavyKeys} key(s), ${cpus().length} cores`,
);
console.log(
  'what                      idle p50   idle p99 | loaded p50  loaded p99  loaded max | p99 ratio   n idle/loaded  timed out (30 s)',
);
for (const [name, a, b] of rows) {
  console.log(
    `${name.padEnd(24)} ${String(a.p50_ms).padStart(8)} ms ${String(a.p99_ms).padStart(7)} ms | ${String(b.p50_ms).padStart(8)} ms ${String(b.p99_ms).padStart(8)} ms ${String(b.max_ms).padStart(8)} ms | ${(b.p99_ms / a.p99_ms).toFixed(1).padStart(7)}x   ${a.count}/${b.count}  ${a.timeouts}/${b.timeouts}`,
  );
}
const goal = loaded.query.p99_ms < 100 && loaded.post.p99_ms < 100;
console.log(
  `goal (loaded p99 < 100 ms for both): ${goal ? 'met' : 'NOT met'}; heavy outcomes: ${JSON.stringify(heavy.outcomes)}`,
);
console.log(
  JSON.stringify({
    bench: 'isolation',
    heavy: heavyCount,
    heavy_keys: heavyKeys,
    heavy_running: heavyRunning,
    heavy_queued: heavyQueued,
    idle,
    loaded,
    ratio_p99: {
      query: round(loaded.query.p99_ms / idle.query.p99_ms),
      post: round(loaded.post.p99_ms / idle.post.p99_ms),
    },
    goal_met: goal,
    loadavg_1m: round(load),
    cpus: cpus().length,
    ...gitState(),
  }),
);
process.exit(0);
