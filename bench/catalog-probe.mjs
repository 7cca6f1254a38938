// What the probes that count Postgres statements share (bench/ducklake-cost, bench/rollups/probe.mjs):
// a temporary folder, the embedded Postgres restarted once with pg_stat_statements preloaded, `orrery
// serve` processes from any built tree on that Postgres and one lake, and the Postgres statements a
// statement runs, by kind.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';

export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
export const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/**
 * A probe's folder, Postgres (with pg_stat_statements) and servers. `root` is the tree whose client and
 * embedded Postgres the probe loads. `close()` stops everything it started and removes the folder.
 */
export async function catalogProbe(root, prefix) {
  const load = (path) => import(pathToFileURL(join(root, path)).href);
  const { FlightSqlClient } = await load('dist/src/client/index.js');
  const { EmbeddedPostgres } = await load('dist/src/metadata/index.js');
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cleanups = [];
  const close = async () => {
    for (const done of cleanups.reverse()) await done().catch((e) => console.error(`bench: ${e.message}`));
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('SIGINT', () => void close().then(() => process.exit(130)));
  try {
    let postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    const setup = new pg.Client({ connectionString: postgres.connectionString });
    await setup.connect();
    await setup.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
    await setup.end();
    await postgres.close();
    postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    cleanups.push(() => postgres.close());
    const admin = new pg.Client({ connectionString: postgres.connectionString });
    await admin.connect();
    cleanups.push(() => admin.end());
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const lake = join(dir, 'lake');

    /** Each server's process by name (signals to a preloaded probe: bench/latency/lake-phases.mjs). */
    const servers = new Map();
    /**
     * `orrery serve` from `tree` in a process of its own, on the probe's Postgres and lake; its client.
     * `nodeArgs` go before the script (`--import` of a probe), `env` over the server's environment.
     */
    const startServer = async (tree, name, { nodeArgs = [], env = {} } = {}) => {
      const server = spawn(process.execPath, [...nodeArgs, join(tree, 'dist/src/orrery.cjs'), 'serve'], {
        env: {
          ...process.env,
          ...env,
          MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString,
          MICROMEGAS_OBJECT_STORE_URI: pathToFileURL(lake).href,
          MICROMEGAS_API_KEYS: JSON.stringify([{ name: 'admin', key: 'admin-key-0123' }]),
          MICROMEGAS_ADMINS: JSON.stringify(['admin']),
          ORRERY_DATA_DIR: join(dir, name),
          ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
          ORRERY_HTTP_ADDR: '127.0.0.1:0',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      servers.set(name, server);
      let log = '';
      server.stdout.on('data', (d) => (log += d));
      server.stderr.on('data', (d) => (log += d));
      const exited = new Promise((done) => server.once('exit', done));
      cleanups.push(async () => {
        server.kill('SIGINT');
        await exited;
      });
      for (let i = 0; i < 1200; i++) {
        const port = /Flight SQL listening on 127\.0\.0\.1:(\d+)/.exec(log)?.[1];
        if (port) {
          const client = await FlightSqlClient.connect({ address: `127.0.0.1:${port}`, apiKey: 'admin-key-0123' });
          cleanups.push(async () => client.close());
          return client;
        }
        if (server.exitCode !== null) break;
        await sleep(100);
      }
      throw new Error(`${name} did not start:\n${log}`);
    };

    /**
     * The Postgres statements each case's statement runs (pg_stat_statements, reset before each case,
     * `counted` runs): calls and execution time per statement by kind, and each query's calls.
     */
    const postgresPerStatement = async (cases, counted) => {
      const perStatement = [];
      for (const c of cases) {
        await admin.query('SELECT pg_stat_statements_reset()');
        for (let i = 0; i < counted; i++) await c.run();
        const { rows: stats } = await admin.query(
          `SELECT query, calls::int, total_exec_time FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'`,
        );
        const kinds = {};
        for (const row of stats) {
          const kind = (kinds[kindOf(row.query)] ??= { calls: 0, ms: 0 });
          kind.calls += row.calls / counted;
          kind.ms += row.total_exec_time / counted;
        }
        perStatement.push({ kinds, queries: stats.map((r) => ({ per: r.calls / counted, query: r.query })) });
      }
      return perStatement;
    };
    return { dir, postgres, admin, lake, servers, startServer, postgresPerStatement, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Cases timed alternately (A, B, A, B, ...: a loaded machine's drift hits all): each one's times in ms. A case's
 * `before`, if any, runs untimed before each of its runs.
 */
export async function alternately(cases, repeats) {
  const times = cases.map(() => []);
  for (let i = 0; i < repeats; i++) {
    for (const [k, c] of cases.entries()) {
      if (c.before) await c.before();
      const start = process.hrtime.bigint();
      await c.run();
      times[k].push(Number(process.hrtime.bigint() - start) / 1e6);
    }
  }
  return times;
}

/** The kinds of Postgres statements: a pool's checks and COMMIT, DuckLake's snapshot and catalog reads, Orrery's own. */
function kindOf(query) {
  const text = query.trim();
  if (/^BEGIN/i.test(text)) return 'BEGIN';
  if (/^(COMMIT|ROLLBACK|DISCARD)|^SELECT \$1$/i.test(text)) return 'pool+COMMIT';
  if (/ducklake_/i.test(text) && /^COPY/i.test(text))
    return /ducklake_snapshot\b/i.test(text) ? 'DuckLake snapshot' : 'DuckLake catalog';
  return 'Orrery';
}

/** One line per case: its median and its Postgres statements by kind; the queries themselves with VERBOSE set. */
export function printCases(cases, medians, perStatement, width = 22) {
  console.log(`${'case'.padEnd(width)} median ms   Postgres statements per statement (calls, exec ms)`);
  for (const [k, c] of cases.entries()) {
    const kinds = Object.entries(perStatement[k].kinds)
      .sort()
      .map(([kind, v]) => `${kind} ${v.calls.toFixed(1)} (${v.ms.toFixed(2)})`)
      .join(', ');
    console.log(`${c.name.padEnd(width)} ${medians[c.name].toFixed(2).padStart(9)}   ${kinds}`);
  }
  if (process.env.VERBOSE)
    for (const [k, c] of cases.entries()) {
      console.log(`-- ${c.name}`);
      for (const q of perStatement[k].queries)
        console.log(`  ${q.per.toFixed(2)}x ${q.query.replace(/\s+/g, ' ').slice(0, 200)}`);
    }
}
