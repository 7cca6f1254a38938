// `orrery publish` of a bench's publication folder, as the CLI runs it: the seconds it took (install and backfill).
import { runResourcesCli } from '../../dist/src/resources/index.js';

/** Publishes folder `dir` to the server at `address` with `apiKey`; throws with the CLI's errors when it fails. */
export async function publishSeconds(dir, address, apiKey) {
  const started = Date.now();
  const err = [];
  const status = await runResourcesCli(
    ['--dir', dir],
    { env: { ORRERY_FLIGHT_SQL_ADDR: address, ORRERY_API_KEY: apiKey }, out: () => {}, err: (l) => err.push(l) },
    'publish',
  );
  if (status !== 0) throw new Error(`publish failed: ${err.join('\n')}`);
  return (Date.now() - started) / 1000;
}
