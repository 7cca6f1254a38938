// Every package the code imports is declared in package.json (issue 8): src/ from `dependencies`,
// build scripts, tests and benchmarks from either list. A package that is only there because
// another one pulls it in can disappear or change with that other package's next release.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The packages the source files under `folder` import (static, dynamic or require.resolve). */
function importedPackages(folder: string): Map<string, string> {
  const found = new Map<string, string>();
  const files = readdirSync(join(root, folder), { recursive: true, withFileTypes: true }).filter(
    (entry) =>
      entry.isFile() &&
      /\.(ts|mjs|js)$/.test(entry.name) &&
      !join(entry.parentPath, entry.name).includes('node_modules'),
  );
  for (const file of files) {
    const path = join(file.parentPath, file.name);
    const text = readFileSync(path, 'utf8');
    for (const match of text.matchAll(
      /(?:\bfrom\s+|\bimport\s*\(\s*|\bimport\s+|require(?:\.resolve)?\(\s*)['"]([^'"./][^'"]*)['"]/g,
    )) {
      const specifier = match[1];
      if (specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]) || specifier.includes('${'))
        continue;
      const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
      if (!found.has(name)) found.set(name, path.slice(root.length));
    }
  }
  return found;
}

describe('declared dependencies', () => {
  it('src/ imports only packages listed in dependencies', () => {
    const missing = [...importedPackages('src')].filter(([name]) => !(name in manifest.dependencies));
    assert.deepEqual(missing, [], 'imported (package, first file) but not in dependencies');
  });

  it('build scripts, tests and benchmarks import only declared packages', () => {
    const declared = { ...manifest.dependencies, ...manifest.devDependencies };
    const missing = [...importedPackages('scripts'), ...importedPackages('test'), ...importedPackages('bench')].filter(
      ([name]) => !(name in declared),
    );
    assert.deepEqual(missing, [], 'imported (package, first file) but not declared');
  });

  it('@duckdb/node-bindings is declared at the version @duckdb/node-api is built against', () => {
    const require = createRequire(join(root, 'package.json'));
    const api = JSON.parse(readFileSync(require.resolve('@duckdb/node-api/package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    assert.equal(manifest.dependencies['@duckdb/node-bindings'], api.dependencies['@duckdb/node-bindings']);
  });
});
