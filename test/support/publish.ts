// `orrery publish --dir <folder>` against a started Orrery, as the admin, its output kept.
import { runResourcesCli } from '../../src/resources/index.js';
import { adminKey } from './orrery-process.js';

/** Runs `orrery publish --dir <dir>` (and more arguments) against `address`; its status and output lines. */
export async function publishFolder(
  address: string,
  dir: string,
  ...args: string[]
): Promise<{ status: number; out: string[]; err: string[]; text: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const env = { ORRERY_FLIGHT_SQL_ADDR: address, ORRERY_API_KEY: adminKey.key };
  const status = await runResourcesCli(
    ['--dir', dir, ...args],
    { env, out: (l) => out.push(l), err: (l) => err.push(l) },
    'publish',
  );
  return { status, out, err, text: out.join('\n') };
}
