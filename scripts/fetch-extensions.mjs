// Obtains the signed DuckDB extensions series tables need (ducklake, postgres_scanner, httpfs) for
// exactly the DuckDB build in node_modules, into a cache folder outside the clone: from DuckDB's
// own extension repository where it is reachable, else from their PyPI packages
// (duckdb-extension-<name>==<version>, fetched with pip). Each file obtained is LOADed once with
// signature checks on before it is kept. Never fails the install: when an extension cannot be had,
// it says what is missing and how to supply it (start-up says it again), and the rest still runs.
// Run by ensure-built.mjs after compiling (it uses dist/src/engine).
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

/** Copies the one wheel member whose path ends with argv[2] to argv[3]. */
const unzipMember = `
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as wheel:
    names = [n for n in wheel.namelist() if n.endswith('/' + sys.argv[2])]
    if len(names) != 1: sys.exit('the wheel holds no ' + sys.argv[2])
    with wheel.open(names[0]) as source, open(sys.argv[3], 'wb') as target: shutil.copyfileobj(source, target)
`;

const engine = await import(new URL('../dist/src/engine/index.js', import.meta.url).href);
const build = await engine.duckdbBuild();

if (process.env.ORRERY_DUCKDB_EXTENSION_DIR) {
  const folder = process.env.ORRERY_DUCKDB_EXTENSION_DIR;
  const { missing } = engine.findExtensions(folder);
  if (missing.length > 0)
    console.log(`orrery: ${engine.missingExtensionsHelp(build, folder, `missing ${missing.join(', ')}`)}`);
  process.exit(0);
}

const folder = engine.extensionCacheFolder(build);
const wanted = engine.lakeExtensions.filter(({ name }) => !existsSync(engine.extensionFile(folder, name)));
if (wanted.length === 0) process.exit(0);
mkdirSync(folder, { recursive: true });

const failures = [];
for (const extension of wanted) {
  console.log(`orrery: fetching the DuckDB extension ${extension.name} for ${build.version} (${build.platform})`);
  const scratch = mkdtempSync(join(tmpdir(), 'orrery-extension-'));
  try {
    const reasons = [];
    const file = (await fromDuckDBRepository(extension, scratch, reasons)) ?? fromPyPI(extension, scratch, reasons);
    if (!file) {
      failures.push(`${extension.name} (${reasons.join('; ')})`);
      continue;
    }
    const refused = await loadError(file);
    if (refused) {
      failures.push(`${extension.name} (the file obtained does not load: ${refused})`);
      continue;
    }
    // Into place by rename, so a folder never holds half a file.
    const partial = join(folder, `.${extension.name}.${process.pid}.partial`);
    copyFileSync(file, partial);
    renameSync(partial, engine.extensionFile(folder, extension.name));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
if (failures.length > 0) {
  console.log(`orrery: ${engine.missingExtensionsHelp(build, folder, `could not obtain ${failures.join(', ')}`)}`);
}

/** DuckDB's INSTALL, into a scratch extension directory. */
async function fromDuckDBRepository(extension, scratch, reasons) {
  const instance = await DuckDBInstance.create(':memory:', {
    extension_directory: scratch,
    allow_unsigned_extensions: 'false',
  });
  try {
    const connection = await instance.connect();
    await connection.run(`INSTALL ${extension.name}`);
    connection.closeSync();
    const file = engine.extensionFile(join(scratch, build.version, build.platform), extension.name);
    if (existsSync(file)) return file;
    reasons.push('DuckDB installed no file');
  } catch (error) {
    reasons.push(`DuckDB's repository: ${firstLine(error)}`);
  } finally {
    instance.closeSync();
  }
  return null;
}

/** The PyPI wheel duckdb-extension-<package>==<version> for this platform, unpacked. */
function fromPyPI(extension, scratch, reasons) {
  const requirement = `duckdb-extension-${extension.pypiPackage}==${build.version.replace(/^v/, '')}`;
  const python = ['python3', 'python'].find((p) => commandWorks(p, ['-m', 'pip', '--version']));
  if (!python) {
    reasons.push(`PyPI: no pip to fetch ${requirement} with`);
    return null;
  }
  try {
    execFileSync(
      python,
      ['-m', 'pip', 'download', '--quiet', '--no-deps', '--only-binary=:all:', '--dest', scratch, requirement],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    const wheel = readdirSync(scratch).find((f) => f.endsWith('.whl'));
    const member = `extensions/${build.version}/${extension.pypiPackage}.duckdb_extension`;
    const out = join(scratch, `${extension.name}.duckdb_extension`);
    execFileSync(python, ['-c', unzipMember, join(scratch, wheel), member, out]);
    return out;
  } catch (error) {
    reasons.push(
      `PyPI ${requirement}: ${String(error.stderr || error.message)
        .trim()
        .split('\n')
        .pop()}`,
    );
    return null;
  }
}

/** Why DuckDB refuses to LOAD a file (signature, version, platform), or null when it loads. */
async function loadError(file) {
  const instance = await DuckDBInstance.create(':memory:', { allow_unsigned_extensions: 'false' });
  try {
    const connection = await instance.connect();
    await connection.run(`LOAD '${file.replaceAll("'", "''")}'`);
    connection.closeSync();
    return null;
  } catch (error) {
    return firstLine(error);
  } finally {
    instance.closeSync();
  }
}

function commandWorks(command, args) {
  try {
    execFileSync(command, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function firstLine(error) {
  return String(error.message ?? error).split('\n')[0];
}
