// A rollup's refresh job held off a suite's own refreshes and counts. create_rollup makes the job due at once,
// whatever its schedule, and the runner looks every second; set_job_schedule puts the next run one schedule after
// the last. A test that counts what refresh_rollup recomputes, what stays pending or what a read sets up makes the
// schedule a day and waits for the job's first run: from then on no run of it lands among the test's statements.
import { plainRows, pollUntil } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from './flight-client.js';

/** set_job_schedule(`rollup`, 1 day): its answer ("… refreshes every 1 day"). */
export async function scheduleDaily(client: TestFlightClient, rollup: string): Promise<string> {
  const [{ msg }] = await plainRows(client, `SELECT set_job_schedule('${rollup}', INTERVAL '1 day') AS msg`);
  return String(msg);
}

/**
 * Waits until `rollup`'s job has run and is next due a schedule after that run (a failed run is retried within
 * 10 s, so it waits for the retry). The job row as it is then.
 */
export async function jobRunOnSchedule(client: TestFlightClient, rollup: string): Promise<Record<string, unknown>> {
  const [job] = await pollUntil(
    `a run of ${rollup}'s refresh job on its schedule`,
    () =>
      plainRows(
        client,
        `SELECT kind, target, schedule, last_status, last_error, next_run - last_run = schedule AS on_schedule
           FROM snouttime.jobs WHERE target = '${rollup}'`,
      ),
    (rows) => rows[0]?.on_schedule === true,
    { timeoutMs: 120_000, intervalMs: 200 },
  );
  return job;
}

/** scheduleDaily then jobRunOnSchedule: `rollup`'s job has run and runs again a day later. */
export async function jobLeftForADay(client: TestFlightClient, rollup: string): Promise<void> {
  await scheduleDaily(client, rollup);
  await jobRunOnSchedule(client, rollup);
}
