import { hash as oneShotHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config.js';

/** Who a key belongs to and what it may read. */
export interface Principal {
  readonly name: string;
  readonly admin: boolean;
  /** Audiences whose rows the key reads (always including `public`); the first stamps what it ingests. */
  readonly audiences: readonly string[];
}

export interface ApiKey {
  readonly name: string;
  readonly key: string;
  readonly audiences: readonly string[];
}

const audiencePattern = /^[A-Za-z0-9_-]{1,255}$/;

/** Parses MICROMEGAS_API_KEYS; every problem names the variable and the entry. */
export function parseApiKeys(text: string, variable = 'MICROMEGAS_API_KEYS'): ApiKey[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${variable} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed))
    throw new ConfigError(`${variable} must be a JSON array of {"name", "key", "audiences"?}`);
  const names = new Set<string>();
  const keys = new Set<string>();
  return parsed.map((entry, i) => {
    const where = `${variable}[${i}]`;
    if (typeof entry !== 'object' || entry === null) throw new ConfigError(`${where} must be an object`);
    const { name, key, audiences } = entry as Record<string, unknown>;
    if (typeof name !== 'string' || name.length === 0)
      throw new ConfigError(`${where}: "name" must be a non-empty string`);
    if (typeof key !== 'string' || key.length < 8)
      throw new ConfigError(`${where} (${name}): "key" must be a string of at least 8 characters`);
    if (names.has(name)) throw new ConfigError(`${variable}: duplicate key name '${name}'`);
    if (keys.has(key)) throw new ConfigError(`${variable}: key of '${name}' is also used by another entry`);
    names.add(name);
    keys.add(key);
    let list: string[] = ['public'];
    if (audiences !== undefined) {
      if (!Array.isArray(audiences) || audiences.some((a) => typeof a !== 'string')) {
        throw new ConfigError(`${where} (${name}): "audiences" must be an array of strings`);
      }
      for (const audience of audiences as string[]) {
        if (!audiencePattern.test(audience)) {
          throw new ConfigError(`${where} (${name}): audience '${audience}' must match [A-Za-z0-9_-]{1,255}`);
        }
      }
      if (audiences.length > 0) list = [...new Set(audiences as string[])];
    }
    return { name, key, audiences: list };
  });
}

/** Parses MICROMEGAS_ADMINS: a JSON array of key names that exist. */
export function parseAdmins(text: string, keys: readonly ApiKey[], variable = 'MICROMEGAS_ADMINS'): Set<string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError(`${variable} is not valid JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(parsed) || parsed.some((n) => typeof n !== 'string')) {
    throw new ConfigError(`${variable} must be a JSON array of key names`);
  }
  const known = new Set(keys.map((k) => k.name));
  for (const name of parsed as string[]) {
    if (!known.has(name))
      throw new ConfigError(`${variable} names '${name}', which is not a key name in MICROMEGAS_API_KEYS`);
  }
  return new Set(parsed as string[]);
}

/** The generated admin key used when no keys are configured. */
export function loadOrCreateLocalCredentials(dataDir: string): { key: ApiKey; created: boolean; path: string } {
  const path = join(dataDir, 'credentials.json');
  if (existsSync(path)) {
    const [key] = parseApiKeys(readFileSync(path, 'utf8'), path);
    if (!key) throw new ConfigError(`${path} holds no key`);
    return { key, created: false, path };
  }
  mkdirSync(dataDir, { recursive: true });
  const key: ApiKey = { name: 'admin', key: `orr_${randomBytes(24).toString('base64url')}`, audiences: ['public'] };
  // Written whole under a temporary name, then linked into place: a process starting at the
  // same moment either wins the link or reads the other's complete file.
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify([key], null, 2)}\n`, { mode: 0o600 });
  try {
    linkSync(temporary, path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return loadOrCreateLocalCredentials(dataDir);
  } finally {
    unlinkSync(temporary);
  }
  return { key, created: true, path };
}

// One call, not createHash().update().digest(): a key is hashed at every call (ADBC, JDBC and Grafana send it with each).
const digest = (key: string): Buffer => oneShotHash('sha256', key, 'buffer');

/** Looks keys up by their hash, comparing in constant time. */
export class Keyring {
  private readonly byDigest = new Map<string, { digest: Buffer; principal: Principal }>();

  constructor(keys: readonly ApiKey[], admins: ReadonlySet<string>) {
    for (const key of keys) {
      const hash = digest(key.key);
      const audiences = key.audiences.includes('public') ? key.audiences : [...key.audiences, 'public'];
      this.byDigest.set(hash.toString('hex'), {
        digest: hash,
        principal: { name: key.name, admin: admins.has(key.name), audiences },
      });
    }
  }

  /** The principal of a key, or null. */
  byKey(key: string): Principal | null {
    const hash = digest(key);
    const entry = this.byDigest.get(hash.toString('hex'));
    return entry && timingSafeEqual(entry.digest, hash) ? entry.principal : null;
  }

  /** The principal when name and key belong together, or null. */
  byNameAndKey(name: string, key: string): Principal | null {
    const principal = this.byKey(key);
    return principal && principal.name === name ? principal : null;
  }
}
