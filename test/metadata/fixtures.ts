// Shared by the metadata tests: temporary data folders, process checks, throw-away databases.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { MetadataLog } from '../../src/metadata/index.js';

/** A temporary data folder; `remove` deletes it and everything the server wrote in it. */
export function tempDataDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-metadata-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A log that keeps its lines, for asserting on them. */
export function recordingLog(): { log: MetadataLog; lines: string[] } {
  const lines: string[] = [];
  return { log: (level, message) => lines.push(`${level}: ${message}`), lines };
}

/** True while the process exists and is not a zombie (Linux /proc). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** Waits until `condition` holds; false after `timeoutMs`. */
export async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

/** Creates an empty database on the server of `connectionString`; returns the string that reaches it. */
export async function freshDatabase(connectionString: string, name: string): Promise<string> {
  await withClient(connectionString, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(connectionString);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `work` on a client of its own, closed afterwards. */
export async function withClient<T>(connectionString: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString });
  client.on('error', () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Runs `work` on a pool of its own (one connection), ended afterwards. */
export async function withPool<T>(connectionString: string, work: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString, max: 1 });
  pool.on('error', () => {});
  try {
    return await work(pool);
  } finally {
    await pool.end();
  }
}
