// What bench.mjs and integer.mjs share: their options and client, timing, medians of statements run alternately,
// load average.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';

/** The options (--flight-port, --rows, --hosts, --repeats) and an admin's client of the server they name. */
export async function benchSetup() {
  const { values } = parseArgs({
    options: {
      'flight-port': { type: 'string' },
      rows: { type: 'string', default: '2000000' },
      hosts: { type: 'string', default: '50' },
      repeats: { type: 'string', default: '5' },
    },
  });
  const client = await FlightSqlClient.connect({
    address: `127.0.0.1:${values['flight-port']}`,
    apiKey: 'admin-key-0123',
  });
  return { rows: Number(values.rows), hosts: Number(values.hosts), repeats: Number(values.repeats), client };
}

const seconds = (start) => Number(process.hrtime.bigint() - start) / 1e9;

/** Runs `work`, and answers its time (s) and result. */
export const timed = async (work) => {
  const start = process.hrtime.bigint();
  const result = await work();
  return { seconds: seconds(start), result };
};

export const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];

/** The machine's load averages (1, 5, 15 minutes), as /proc/loadavg gives them. */
export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/**
 * Statements timed alternately (A, B, A, B, ...: a loaded machine's drift hits all), `repeats` rounds: each one's
 * median time (s) and last result.
 */
export const alternately = async (client, repeats, ...statements) => {
  const times = statements.map(() => []);
  const tables = [];
  for (let i = 0; i < repeats; i++) {
    for (const [k, sql] of statements.entries()) {
      const { seconds: s, result } = await timed(() => client.query(sql));
      times[k].push(s);
      tables[k] = result;
    }
  }
  return times.map((t, k) => ({ seconds: median(t), table: tables[k] }));
};

/** The first column of a statement's first row, as a number. */
export const scalarOf = (client) => async (sql) => Number(Object.values((await client.query(sql)).get(0).toJSON())[0]);

/** The figures of the never-stale read (sections 2, 3 and 5) both benches print, by their JSON names. */
export const tailFigures = (f) => ({
  never_stale_seconds: f.neverStale.seconds,
  materialized_seconds: f.materialized.seconds,
  never_stale_ratio: f.neverStale.seconds / f.materialized.seconds,
  never_stale_tail_rows: f.tailRows,
  never_stale_after_write_seconds: f.neverStaleAfterWrite,
  materialized_after_write_seconds: f.materializedAfterWrite,
  never_stale_after_write_ratio: f.neverStaleAfterWrite / f.materializedAfterWrite,
  rows_per_minute: f.perMinute,
  refresh_per_minute_seconds: f.refreshMinute.seconds,
  refresh_per_minute_ranges: f.refreshMinute.result,
});
