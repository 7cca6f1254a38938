import { readFileSync } from 'node:fs';
import { Keyring, loadOrCreateLocalCredentials, parseAdmins, parseApiKeys, type Principal } from './auth/index.js';
import type { Config } from './config.js';
import { DuckDBEngine } from './engine/index.js';
import { FlightSqlServer } from './flight/index.js';
import { SqlService } from './sql/index.js';

export type Log = (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;

/** A running Orrery: the roles started by `orrery serve|maintain|all`. */
export interface Orrery {
  readonly flightPort: number;
  close(): Promise<void>;
}

export const version: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

/** Builds the keyring from the settings, or from the generated local admin key when none are set. */
export function keyringFromConfig(config: Config, log: Log): Keyring {
  if (config.apiKeysJson) {
    const keys = parseApiKeys(config.apiKeysJson);
    const admins = config.adminsJson ? parseAdmins(config.adminsJson, keys) : new Set<string>();
    if (admins.size === 0) log('warn', 'MICROMEGAS_ADMINS names no key: admin statements are refused for everyone');
    return new Keyring(keys, admins);
  }
  if (config.adminsJson) parseAdmins(config.adminsJson, []);
  const { key, created, path } = loadOrCreateLocalCredentials(config.dataDir);
  const [host, port] = [config.flightAddress.slice(0, config.flightAddress.lastIndexOf(':')), config.flightAddress.slice(config.flightAddress.lastIndexOf(':') + 1)];
  log(
    'info',
    `${created ? 'created' : 'using'} the local admin key in ${path} (no MICROMEGAS_API_KEYS set). Connect with:\n` +
      `  JDBC:    jdbc:arrow-flight-sql://${host}:${port}?useEncryption=false&user=${key.name}&password=${key.key}\n` +
      `  ADBC:    adbc_driver_flightsql.dbapi.connect("grpc://${host}:${port}", db_kwargs={"username": "${key.name}", "password": "${key.key}"})\n` +
      `  headers: authorization: Bearer ${key.key}`,
  );
  return new Keyring([key], new Set([key.name]));
}

/** Starts the query server: DuckDB engine behind the Flight SQL front end. */
export async function startOrrery(config: Config, log: Log): Promise<Orrery> {
  const keyring = keyringFromConfig(config, log);
  const engine = await DuckDBEngine.create({ threads: config.duckdbThreads, memoryLimit: config.duckdbMemoryLimit });
  const server = new FlightSqlServer<Principal>(new SqlService(keyring, engine, version), {
    address: config.flightAddress,
    tls: config.tls,
    log,
  });
  let port: number;
  try {
    ({ port } = await server.start());
  } catch (error) {
    engine.close();
    throw error;
  }
  const host = config.flightAddress.slice(0, config.flightAddress.lastIndexOf(':'));
  log('info', `Flight SQL listening on ${host}:${port}${config.tls ? ' (TLS)' : ''}`);
  let closing: Promise<void> | undefined;
  return {
    flightPort: port,
    close: () =>
      (closing ??= (async () => {
        await server.close();
        engine.close();
      })()),
  };
}
