#!/usr/bin/env node
import { setFlagsFromString } from 'node:v8';
import type { Log } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { OrreryError } from './errors/index.js';

// Streaming a result allocates about 2 MiB of ArrayBuffers per batch (its body, sent to gRPC as it lies).
// V8 counts that external memory toward the old generation's limit, which for Orrery's small heap
// (~20 MB live) leaves ~10-20 MB of room: the server fell into back-to-back mark-compacts, one
// every few batches, and spent a third of its event loop marking. A heap that may grow to 4x its
// live size before the next one keeps them rare; with the concurrent marker off, the marking that
// remains does not fight DuckDB's threads for the cores. Measured on 2 cores
// (bench/flight-throughput, 10 M rows): computed result 0.95 -> 0.74 s, stored scan 1.0 -> 0.4 s.
setFlagsFromString('--heap-growing-percent=300');
setFlagsFromString('--no-concurrent-marking');

const usage = `usage: orrery <command>

commands:
  all       run every role in one process (what npm start runs)
  serve     answer Flight SQL queries and ingest OTLP/HTTP
  maintain  run the maintenance daemon (materialization, merges, retention)
  views     manage materialized view sets as code (orrery views help)
  resources database resources as code: validate, plan, status, prune (orrery resources help)
  publish   publish a folder of view sets and resources (orrery resources help)
  help      print this text

Settings come from the environment; the README lists them.`;

const textLog: Log = (level, message, error) => {
  const line = `${new Date().toISOString()} ${level.toUpperCase()} ${message}`;
  if (level === 'error') console.error(line, error ?? '');
  else console.log(line);
};

/** ORRERY_LOG_FORMAT=json: one JSON object per line (time, level, message, error), errors on stderr. */
const jsonLog: Log = (level, message, error) => {
  const entry: Record<string, string> = { time: new Date().toISOString(), level, message };
  if (error !== undefined)
    entry.error = error instanceof Error ? (error.stack ?? error.message) : JSON.stringify(error);
  (level === 'error' ? process.stderr : process.stdout).write(`${JSON.stringify(entry)}\n`);
};

let log: Log = textLog;

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
  if (command === 'resources' || command === 'publish') {
    const { runResourcesCli } = await import('./resources/index.js');
    const io = {
      env: process.env,
      out: (line: string) => process.stdout.write(`${line}\n`),
      err: (line: string) => process.stderr.write(`${line}\n`),
    };
    return runResourcesCli(argv.slice(1), io, command);
  }
  if (command !== 'all' && command !== 'serve' && command !== 'maintain') {
    console.error(`orrery: unknown command '${command}'\n\n${usage}`);
    return 2;
  }
  // Loaded only here, so `orrery views` does not start DuckDB and the rest of the server.
  const { startOrrery } = await import('./app.js');
  // Listening from the start: a signal that comes while starting stops the server once it is up.
  const stopSignal = new Promise<string>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  });
  const config = loadConfig();
  log = config.logFormat === 'json' ? jsonLog : textLog;
  if (config.logFormat === 'json') {
    // Node's own warnings (a dependency's deprecation notice, say) become log lines too.
    process.removeAllListeners('warning');
    process.on('warning', (warning) => log('warn', `${warning.name}: ${warning.message}`));
  }
  const orrery = await startOrrery(config, log, command);
  log('info', `${await stopSignal} received, shutting down`);
  try {
    await orrery.close();
  } catch (error) {
    // Every part was asked to close; the AggregateError names each one that failed.
    log('error', `shutdown incomplete: ${(error as Error).message}`);
    return 1;
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof ConfigError) console.error(`orrery: ${error.message}`);
    // Orrery's own errors (they carry a code) explain themselves; anything else is a bug, shown whole.
    else if (error instanceof OrreryError) {
      console.error(`orrery: failed to start: ${error.message}`);
    } else console.error('orrery: failed to start:', error);
    process.exit(error instanceof ConfigError ? 2 : 1);
  },
);
