// Installs dependencies and compiles when they are missing or stale, so that `npm start`
// and `npm test` work on a fresh clone (dependencies, TypeScript, the native addon, the DuckDB
// extensions series tables need). Dependency-free on purpose: it runs before them.
import { execSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const force = process.argv.includes('--force');
const run = (command) => execSync(command, { cwd: root, stdio: 'inherit' });

if (!existsSync(join(root, 'node_modules', '.package-lock.json'))) {
  console.log('orrery: installing dependencies (npm ci)');
  run('npm ci --no-audit --no-fund');
}

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const built = join(root, 'dist', 'src', 'cli.js');
const sources = ['src', 'test', 'bench'].filter((d) => existsSync(join(root, d))).map((d) => newest(join(root, d)));
if (force || !existsSync(built) || Math.max(...sources) > statSync(built).mtimeMs) {
  console.log('orrery: compiling TypeScript');
  run('npx tsc -p tsconfig.json');
}
run('node scripts/build-native.mjs');
run('node scripts/fetch-extensions.mjs');
