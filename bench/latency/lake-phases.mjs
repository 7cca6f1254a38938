// What a statement reading the lake costs at GetFlightInfo and at DoGet, apart (issue 10, plan once):
// `orrery serve` from this tree and, with --base <tree with dist/ built>, a second server from that tree
// on the same Postgres and lake (bench/catalog-probe.mjs: embedded Postgres with pg_stat_statements, a
// lake in a temporary folder); a series table of --rows rows over a day and its hourly rollup. For
// `SELECT 1`, a series read and a rollup read, GetFlightInfo and the DoGet of its ticket are timed apart
// (servers and statements alternated, medians of --repeats; "both": a statement's two RPCs, as a client
// waits for them one after the other), then the Postgres statements each RPC runs
// are counted. The servers run with phase-probe.mjs preloaded: last, the medians of the phases of each
// RPC (inclusive, nested: PROFILE.md, seventh pass, reads them), DuckDB's prepare and COMMIT among them.
//
//   node bench/latency/lake-phases.mjs [--repeats 41] [--rows 200000] [--base <tree>] [--gap <ms>]
//   (--gap: a pause after each statement, as between a dashboard's refreshes, instead of the next one at once)
//   node bench/latency/lake-phases.mjs --rollups --rows 2000000 --base <tree>
//   (--rollups: bench/rollups' data and reads instead, issue 17: --rows over 30 days, the hourly rollup refreshed,
//   a minute of rows after it; the materialized rows, the never-stale read and the dashboard, phase by phase)
//   node bench/latency/lake-phases.mjs --rollups --ingest --rows 2000000 --base <tree>
//   (--ingest: steady ingestion, bench/rollups' section 5: each statement right after a write of 100 rows at now()
//   through the same server, untimed, so every read is at a new snapshot with a new tail file; with
//   --write-through other, through the other server, as a writer in another process would; with --base, the median
//   write of each server and their ratio)
//   node bench/latency/lake-phases.mjs --rollups --refresh --rows 2000000 --base <tree>
//   (--refresh: before each statement, untimed, the same statement once and then refresh_rollup of the rollups, on
//   the same server, with nothing written since: each timed statement is a dashboard's next read after a refresh job's
//   run that found nothing to do; the servers' own refresh jobs are off, so no other refresh lands among them)
//   node bench/latency/lake-phases.mjs --rewrite --rows 1000000 --base <tree>
//   (--rewrite: bench/rollup-rewrite's table and rollups, issue 14: three of its panels, each rewritten onto a
//   rollup and as its raw twin, the same SQL over a subquery of the table, which no rollup answers)
//   node bench/latency/lake-phases.mjs --clients 16 [--seconds 4] --base <tree>
//   (also: --clients statements in flight at once on each server for --seconds, per statement, the servers in turn
//   A B B A; statements/s and the p50 of GetFlightInfo + DoGet)
//   VERBOSE=1 ...                                       # also each RPC's Postgres statements
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { catalogProbe, loadAverage, median } from '../catalog-probe.mjs';

const { values } = parseArgs({
  options: {
    repeats: { type: 'string', default: '41' },
    rows: { type: 'string', default: '200000' },
    base: { type: 'string' },
    gap: { type: 'string', default: '0' },
    clients: { type: 'string', default: '0' },
    seconds: { type: 'string', default: '4' },
    rollups: { type: 'boolean', default: false },
    ingest: { type: 'boolean', default: false },
    refresh: { type: 'boolean', default: false },
    'write-through': { type: 'string', default: 'same' },
    rewrite: { type: 'boolean', default: false },
  },
});
const [repeats, rows, gap] = [Number(values.repeats), Number(values.rows), Number(values.gap)];
const root = fileURLToPath(new URL('../..', import.meta.url));
const { packAny } = await import(pathToFileURL(join(root, 'dist/src/wire/index.js')).href);
const probe = await catalogProbe(root, 'orrery-lake-phases-');
try {
  // Each server with the phase probe preloaded (it loads the server's modules before orrery.cjs sizes
  // libuv's pool: sized here as it would be).
  const start = async (label, tree) => {
    const out = join(probe.dir, `phases-${label}.json`);
    const client = await probe.startServer(tree, label, {
      nodeArgs: ['--import', fileURLToPath(new URL('phase-probe.mjs', import.meta.url))],
      env: {
        PHASES_ROOT: tree,
        PHASES_OUT: out,
        UV_THREADPOOL_SIZE: '20',
        ...(values.refresh ? { ORRERY_ROLLUP_REFRESH_JOBS: 'off' } : {}),
      },
    });
    return { label, client, out, process: probe.servers.get(label) };
  };
  const servers = [await start('this', root), ...(values.base ? [await start('base', resolve(values.base))] : [])];
  const { client } = servers[0];
  const statements = values.rollups
    ? await rollupsData(client)
    : values.rewrite
      ? await rewriteData(client)
      : await seriesData(client);
  // One statement on one server: its GetFlightInfo, then the DoGet of its tickets, timed apart (ms).
  const writer = (server) =>
    values['write-through'] === 'other' ? (servers.find((s) => s !== server) ?? server) : server;
  const refreshed = values.rewrite ? ['requests_hourly', 'requests_daily'] : ['metrics_hourly'];
  // What comes before each statement, untimed: a write (--ingest), or a read and the rollups' refresh (--refresh).
  const write = async (server, name) => {
    if (values.ingest)
      await writer(server).client.executeUpdate(
        `INSERT INTO metrics SELECT now()::TIMESTAMP, 'host' || (i % 50), 1.0 FROM range(100) t(i)`,
      );
    if (values.refresh) {
      await read(server, name);
      for (const rollup of refreshed) await server.client.query(`select refresh_rollup('${rollup}')`);
    }
  };
  const read = async (server, name) => {
    let t = process.hrtime.bigint();
    const flight = await server.client.getFlightInfo(packAny('CommandStatementQuery', { query: statements[name] }));
    const infoMs = Number(process.hrtime.bigint() - t) / 1e6;
    t = process.hrtime.bigint();
    for (const endpoint of flight.endpoints)
      for await (const batch of server.client.readTicket(endpoint.ticket)) void batch;
    return [infoMs, Number(process.hrtime.bigint() - t) / 1e6];
  };
  const once = async (server, name) => {
    const t = process.hrtime.bigint();
    await write(server, name);
    const writeMs = Number(process.hrtime.bigint() - t) / 1e6;
    return [...(await read(server, name)), writeMs];
  };
  const cases = servers.flatMap((server) =>
    Object.keys(statements).map((name) => ({ server, name, info: [], doGet: [], both: [], write: [] })),
  );
  for (const c of cases) for (let i = 0; i < 3; i++) await once(c.server, c.name); // warm
  const loadBefore = loadAverage();
  for (let i = 0; i < repeats; i++)
    for (const c of cases) {
      const [infoMs, doGetMs, writeMs] = await once(c.server, c.name);
      if (gap > 0) await sleep(gap);
      c.info.push(infoMs);
      c.doGet.push(doGetMs);
      c.both.push(infoMs + doGetMs);
      c.write.push(writeMs);
    }
  const loadAfter = loadAverage();

  // Postgres statements per RPC: pg_stat_statements reset before each GetFlightInfo and before its DoGet.
  const counted = 5;
  const perRpc = async (c) => {
    const sums = { GetFlightInfo: {}, DoGet: {} };
    const add = async (rpc) => {
      const { rows: stats } = await probe.admin.query(
        `SELECT query, calls::int FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%'`,
      );
      for (const row of stats) {
        if (process.env.VERBOSE)
          console.log(
            `  ${c.server.label} ${c.name} ${rpc} ${row.calls}x ${row.query.replace(/\s+/g, ' ').slice(0, 160)}`,
          );
        const kind = /ducklake_/i.test(row.query) ? 'DuckLake' : 'other';
        sums[rpc][kind] = (sums[rpc][kind] ?? 0) + row.calls / counted;
      }
    };
    const statement = packAny('CommandStatementQuery', { query: statements[c.name] });
    for (let i = 0; i < counted; i++) {
      await write(c.server, c.name);
      await probe.admin.query('SELECT pg_stat_statements_reset()');
      const flight = await c.server.client.getFlightInfo(statement);
      await add('GetFlightInfo');
      await probe.admin.query('SELECT pg_stat_statements_reset()');
      for (const endpoint of flight.endpoints)
        for await (const batch of c.server.client.readTicket(endpoint.ticket)) void batch;
      await add('DoGet');
    }
    return sums;
  };
  const show = (counts) =>
    Object.entries(counts)
      .map(([kind, calls]) => `${kind} ${calls.toFixed(1)}`)
      .join(', ') || '-';
  console.log(
    `load average ${loadBefore} before timing, ${loadAfter} after; medians of ${repeats}; ${rows} rows; ${gap} ms between statements${values.ingest ? `; a write of 100 rows before each, through the ${values['write-through']} server` : ''}${values.refresh ? `; before each, the same statement and refresh_rollup of ${refreshed.join(', ')} with nothing new` : ''}`,
  );
  console.log(
    `${'server, statement'.padEnd(20)} GetFlightInfo ms  DoGet ms  both ms${values.ingest ? '  write before ms' : ''}   Postgres statements: GetFlightInfo | DoGet`,
  );
  for (const c of cases) {
    const counts = await perRpc(c);
    const writeMs = values.ingest ? ` ${median(c.write).toFixed(2).padStart(16)}` : '';
    console.log(
      `${`${c.server.label}, ${c.name}`.padEnd(20)} ${median(c.info).toFixed(2).padStart(16)} ${median(c.doGet).toFixed(2).padStart(9)} ${median(c.both).toFixed(2).padStart(8)}${writeMs}   ${show(counts.GetFlightInfo)} | ${show(counts.DoGet)}`,
    );
  }
  // Issue 17's goal: a never-stale read at most 1.2x a read of the materialized table.
  if (values.rollups)
    for (const server of servers) {
      const [stale, stored] = ['never-stale', 'materialized'].map((name) =>
        cases.find((c) => c.server === server && c.name === name),
      );
      console.log(
        `${server.label}: never-stale / materialized, both ${median(stale.both).toFixed(2)} / ${median(stored.both).toFixed(2)} ms = ${(median(stale.both) / median(stored.both)).toFixed(2)}x`,
      );
    }
  if (servers.length > 1)
    for (const name of Object.keys(statements)) {
      const [a, b] = servers.map((s) => cases.find((c) => c.server === s && c.name === name));
      console.log(
        `${name}: this / base GetFlightInfo ${(median(a.info) / median(b.info)).toFixed(2)}, DoGet ${(median(a.doGet) / median(b.doGet)).toFixed(2)}, both (one statement, GetFlightInfo + DoGet) ${(median(a.both) / median(b.both)).toFixed(2)}`,
      );
    }
  if (servers.length > 1 && values.ingest) {
    // Every write of a server's statements together (the write before each does not depend on the statement).
    const [a, b] = servers.map((s) => cases.filter((c) => c.server === s).flatMap((c) => c.write));
    console.log(
      `write of 100 rows: this ${median(a).toFixed(2)} ms / base ${median(b).toFixed(2)} ms = ${(median(a) / median(b)).toFixed(2)} (medians of ${a.length})`,
    );
  }

  const clients = Number(values.clients);
  if (clients > 0) {
    const seconds = Number(values.seconds);
    console.log(`${clients} statements at once, ${seconds} s per statement and server, servers in turn A B B A:`);
    for (const name of Object.keys(statements)) {
      const runs = new Map(servers.map((server) => [server, { done: 0, elapsed: 0, times: [] }]));
      const order = servers.length > 1 ? [servers[0], servers[1], servers[1], servers[0]] : [servers[0]];
      const loadAt = loadAverage();
      for (const server of order) {
        const run = runs.get(server);
        const until = performance.now() + seconds * 1000;
        const started = performance.now();
        await Promise.all(
          Array.from({ length: clients }, async () => {
            while (performance.now() < until) {
              const [infoMs, doGetMs] = await once(server, name);
              run.times.push(infoMs + doGetMs);
              run.done++;
            }
          }),
        );
        run.elapsed += (performance.now() - started) / 1000;
      }
      const rates = servers.map((server) => {
        const run = runs.get(server);
        return { label: server.label, perS: run.done / run.elapsed, p50: median(run.times) };
      });
      console.log(
        `  ${name.padEnd(12)} ` +
          rates.map((r) => `${r.label} ${r.perS.toFixed(1)}/s p50 ${r.p50.toFixed(2)} ms`).join(', ') +
          (rates.length > 1
            ? `; this / base: rate ${(rates[0].perS / rates[1].perS).toFixed(2)}, p50 ${(rates[0].p50 / rates[1].p50).toFixed(2)}`
            : '') +
          ` (load ${loadAt} -> ${loadAverage()})`,
      );
    }
  }

  // Phases: SIGUSR1 makes a probe forget what it recorded, SIGUSR2 write it (per RPC: [name, start, end], ns).
  console.log(`phases, medians of ${repeats} (ms, inclusive):`);
  for (const c of cases) {
    c.server.process.kill('SIGUSR1');
    await sleep(100);
    for (let i = 0; i < repeats; i++) await once(c.server, c.name);
    rmSync(c.server.out, { force: true });
    c.server.process.kill('SIGUSR2');
    // Written at once by the probe's signal handler: read once it parses whole.
    let recorded;
    while (!recorded) {
      await sleep(50);
      try {
        recorded = JSON.parse(readFileSync(c.server.out, 'utf8'));
      } catch {
        recorded = undefined;
      }
    }
    const byRpc = {};
    for (const rpc of recorded) {
      const sums = {};
      for (const [phase, t0, t1] of rpc.phases) sums[phase] = (sums[phase] ?? 0) + (t1 - t0) / 1e6;
      if (rpc.closed && rpc.stream) sums['stream open to closed'] = (rpc.closed - rpc.stream) / 1e6;
      for (const [phase, ms] of Object.entries(sums)) ((byRpc[rpc.path] ??= {})[phase] ??= []).push(ms);
    }
    for (const [path, phases] of Object.entries(byRpc))
      console.log(
        `  ${c.server.label}, ${c.name}, ${path}: ` +
          Object.entries(phases)
            .map(
              ([phase, list]) =>
                `${phase} ${median(list).toFixed(2)}${list.length < repeats ? ` (${list.length}x)` : ''}`,
            )
            .join('; '),
      );
  }
} finally {
  await probe.close();
}

/** A series table of --rows rows over a day and its hourly rollup; a series read and a rollup read. */
async function seriesData(client) {
  await client.executeUpdate(`CREATE TABLE metrics (ts TIMESTAMP, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
  await client.executeUpdate(
    `INSERT INTO metrics SELECT now()::TIMESTAMP - INTERVAL 1 DAY + to_microseconds(CAST(i * ${86400e6 / rows} AS BIGINT)),
       'host' || (i % 50), (hash(i) % 10000) / 100.0 FROM range(${rows}) t(i)`,
  );
  await client.query(`select create_rollup('metrics_hourly', 'metrics', interval '1 hour',
    select_list => 'host, count(*) as n, sum(cpu) as cpu_sum', group_by => 'host')`);
  await client.query(`select refresh_rollup('metrics_hourly')`);
  return {
    'SELECT 1': 'SELECT 1',
    'series read': `SELECT host, count(*) FROM metrics WHERE ts >= now()::TIMESTAMP - INTERVAL 1 HOUR GROUP BY host`,
    'rollup read': `SELECT bucket, host, n FROM metrics_hourly_materialized WHERE bucket >= now()::TIMESTAMP - INTERVAL 6 HOUR`,
  };
}

/** --rollups: bench/rollups' data (probe-data.mjs, --rows over 30 days) and explain.mjs's reads of it. */
async function rollupsData(client) {
  const { loadProbeData, probeStatements } = await import('../rollups/probe-data.mjs');
  await loadProbeData(client, { rows, hosts: 50 });
  return probeStatements;
}

/** --rewrite: bench/rollup-rewrite's data (--rows over 30 days, both rollups refreshed); three panels and their raw twins. */
async function rewriteData(client) {
  const { panels, requestsRollups, requestsTable } = await import('../rollup-rewrite/panels.mjs');
  for (const sql of requestsTable(rows)) await client.executeUpdate(sql);
  for (const sql of requestsRollups) await client.query(sql);
  await client.query(`select refresh_rollup('requests_hourly')`);
  await client.query(`select refresh_rollup('requests_daily')`);
  const statements = { 'SELECT 1': 'SELECT 1' };
  const named = {
    'requests per day, 30 days': 'daily',
    'max latency per hour, 24 h': 'hourly',
    'requests per service, last 7 days (raw edges)': 'open',
  };
  for (const [name, sql] of panels.filter(([n]) => n in named)) {
    statements[named[name]] = sql;
    statements[`${named[name]} raw`] = sql.replace(' from requests ', ' from (select * from requests) as requests ');
  }
  return statements;
}
