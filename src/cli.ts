#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';
import type { Log } from './app.js';
import { ConfigError, loadConfig } from './config.js';

// Streaming results allocates a large ArrayBuffer per batch, so V8 keeps starting major GCs for
// external memory. Its concurrent marker then fights DuckDB's threads for the cores and lags,
// and the server can stay in back-to-back mark-compacts; marking in main-thread steps finishes
// first. Measured on 2 cores (bench/flight-throughput, stored scan after computed results):
// 1.0 s per 10 M rows in that state, 0.45-0.6 s with this flag.
setFlagsFromString('--no-concurrent-marking');

const usage = `usage: orrery <command>

commands:
  all       run every role in one process (what npm start runs)
  serve     answer Flight SQL queries and ingest OTLP/HTTP
  maintain  run the maintenance daemon (materialization, merges, retention)
  views     manage materialized view sets as code (orrery views help)
  help      print this text

Settings come from the environment; the README lists them.`;

const log: Log = (level, message, error) => {
  const line = `${new Date().toISOString()} ${level.toUpperCase()} ${message}`;
  if (level === 'error') console.error(line, error ?? '');
  else console.log(line);
};

async function main(argv: string[]): Promise<number> {
  const command = argv[0] ?? 'all';
  if (command === 'help' || command === '--help' || command === '-h') {
    console.log(usage);
    return 0;
  }
  if (command === 'views') {
    const { runViewsCli } = await import('./views-cli/index.js');
    return runViewsCli(argv.slice(1), {
      env: process.env,
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
    });
  }
  if (command !== 'all' && command !== 'serve' && command !== 'maintain') {
    console.error(`orrery: unknown command '${command}'\n\n${usage}`);
    return 2;
  }
  // Loaded only here, so `orrery views` does not start DuckDB and the rest of the server.
  const { startOrrery } = await import('./app.js');
  const orrery = await startOrrery(loadConfig(), log, command);
  await new Promise<void>((resolve) => {
    const stop = (signal: string): void => {
      log('info', `${signal} received, shutting down`);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await orrery.close();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError) console.error(`orrery: ${error.message}`);
    // Orrery's own errors (they carry a status) explain themselves; anything else is a bug, shown whole.
    else if (error instanceof Error && typeof (error as { status?: unknown }).status === 'string') {
      console.error(`orrery: failed to start: ${error.message}`);
    } else console.error('orrery: failed to start:', error);
    process.exit(error instanceof ConfigError ? 2 : 1);
  },
);
