import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

/**
 * The DuckDB extensions series tables need, by the name DuckDB loads them under, with the
 * package each comes in on PyPI (`duckdb-extension-<package>`). None is built into the
 * node package; each is signed by DuckDB and loaded with signature checks on.
 */
export const lakeExtensions: ReadonlyArray<{ readonly name: string; readonly pypiPackage: string }> = [
  { name: 'ducklake', pypiPackage: 'ducklake' },
  { name: 'postgres_scanner', pypiPackage: 'postgres' },
  { name: 'httpfs', pypiPackage: 'httpfs' },
];

/** The DuckDB build extensions must match: its version (`v1.5.5`) and platform (`linux_amd64`). */
export interface DuckDBBuild {
  readonly version: string;
  readonly platform: string;
}

export async function duckdbBuild(): Promise<DuckDBBuild> {
  const instance = await DuckDBInstance.create(':memory:');
  try {
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll('SELECT version(), (SELECT platform FROM pragma_platform())');
    const [version, platform] = reader.getRows()[0].map(String);
    connection.closeSync();
    return { version, platform };
  } finally {
    instance.closeSync();
  }
}

/**
 * Where the install step keeps the extensions: outside the clone, shared by every checkout of
 * the same DuckDB build. The layout is DuckDB's own extension directory's
 * (`<root>/<version>/<platform>/<name>.duckdb_extension`).
 */
export function extensionCacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'orrery', 'duckdb-extensions');
}

export function extensionCacheFolder(build: DuckDBBuild, env: NodeJS.ProcessEnv = process.env): string {
  return join(extensionCacheRoot(env), build.version, build.platform);
}

export const extensionFile = (folder: string, name: string): string => join(folder, `${name}.duckdb_extension`);

/** The extension files present in a folder, and the names of those missing. */
export function findExtensions(folder: string): { files: string[]; missing: string[] } {
  const files: string[] = [];
  const missing: string[] = [];
  for (const { name } of lakeExtensions) {
    const file = extensionFile(folder, name);
    if (existsSync(file)) files.push(file);
    else missing.push(name);
  }
  return { files, missing };
}

/** What to tell someone whose extensions are missing or do not load: what, where, and how to supply them. */
export function missingExtensionsHelp(build: DuckDBBuild, folder: string, problem: string): string {
  const pyVersion = build.version.replace(/^v/, '');
  const packages = lakeExtensions.map((e) => `duckdb-extension-${e.pypiPackage}==${pyVersion}`).join(' ');
  return (
    `series tables are unavailable: ${problem} (DuckDB ${build.version}, ${build.platform}, folder ${folder}). ` +
    `Run 'node scripts/fetch-extensions.mjs' where DuckDB's extension repository or PyPI is reachable, ` +
    `or put the signed files ${lakeExtensions.map((e) => `${e.name}.duckdb_extension`).join(', ')} for DuckDB ${build.version} ` +
    `in a folder named by ORRERY_DUCKDB_EXTENSION_DIR (they come in the PyPI wheels ${packages}, ` +
    `as extensions/${build.version}/<name>.duckdb_extension; save postgres.duckdb_extension as postgres_scanner.duckdb_extension). ` +
    'Everything else runs without them.'
  );
}
