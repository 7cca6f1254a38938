// Builds the native addon (src/engine/native: the Arrow exporter, bulk ingest, the sketch
// aggregates, the OTLP logs scan and the OTLP logs payload table function) into dist/native/arrow_export.node with the machine's C++
// compiler, linked against the libduckdb that @duckdb/node-bindings ships.
// Without a compiler or on an unsupported platform it says so and leaves results to the
// JavaScript converter. Dependency-free, like ensure-built.mjs which runs it.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const sourceDir = join(root, 'src', 'engine', 'native');
const sources = [
  'arrow-export.cc',
  'arrow-ingest.cc',
  'arrow-ingest.h',
  'sketch-aggregates.cc',
  'sketch-aggregates.h',
  'logs-scan.cc',
  'logs-scan.h',
  'logs-seal.cc',
  'logs-seal.h',
  'logs-json.cc',
  'logs-json.h',
  'otlp-logs-table.cc',
  'otlp-logs-table.h',
  'payload-zstd.cc',
  'payload-zstd.h',
  'parquet-writer.h',
  'thread-priority.cc',
  'thread-priority.h',
  'group-write.cc',
  'group-write.h',
  'tail-rows.cc',
  'tail-rows.h',
  'duckdb-c-api.h',
].map((f) => join(sourceDir, f));
const output = join(root, 'dist', 'native', 'arrow_export.node');

const newestSource = () => Math.max(...sources.map((f) => statSync(f).mtimeMs));

function skip(reason) {
  // An addon built from older sources may not keep the contract today's JavaScript expects: gone, not used.
  if (existsSync(output) && statSync(output).mtimeMs < newestSource()) rmSync(output);
  console.log(`orrery: native Arrow exporter not built (${reason}); results use the JavaScript converter`);
  process.exit(0);
}

if (process.platform !== 'linux') skip(`no build recipe for ${process.platform}`);
const require = createRequire(join(root, 'package.json'));
let libraryDir;
let includeDirs;
try {
  libraryDir = dirname(require.resolve(`@duckdb/node-bindings-linux-${process.arch}/libduckdb.so`));
  includeDirs = [
    dirname(require.resolve('node-api-headers/include/node_api.h')),
    dirname(require.resolve('node-addon-api/napi.h')),
  ];
} catch (error) {
  skip(`missing package: ${error.message.split('\n')[0]}`);
}

if (existsSync(output) && statSync(output).mtimeMs >= newestSource()) process.exit(0);

const compiler = process.env.CXX || 'g++';
console.log(`orrery: compiling the native Arrow exporter (${compiler})`);
mkdirSync(dirname(output), { recursive: true });
const partial = `${output}.${process.pid}.tmp`;
try {
  execFileSync(
    compiler,
    [
      '-std=c++17',
      '-O3',
      '-shared',
      '-fPIC',
      '-Wall',
      '-Wextra',
      '-DNAPI_CPP_EXCEPTIONS',
      '-fvisibility=hidden',
      ...includeDirs.map((d) => `-I${d}`),
      join(sourceDir, 'arrow-export.cc'),
      join(sourceDir, 'arrow-ingest.cc'),
      join(sourceDir, 'sketch-aggregates.cc'),
      join(sourceDir, 'logs-scan.cc'),
      join(sourceDir, 'logs-seal.cc'),
      join(sourceDir, 'logs-json.cc'),
      join(sourceDir, 'otlp-logs-table.cc'),
      join(sourceDir, 'payload-zstd.cc'),
      join(sourceDir, 'thread-priority.cc'),
      join(sourceDir, 'group-write.cc'),
      join(sourceDir, 'tail-rows.cc'),
      '-o',
      partial,
      `-L${libraryDir}`,
      '-l:libduckdb.so',
      `-Wl,-rpath,$ORIGIN/${relative(dirname(output), libraryDir)}`,
    ],
    { stdio: 'inherit' },
  );
} catch (error) {
  skip(error.code === 'ENOENT' ? `no ${compiler} on this machine` : `${compiler} failed`);
}
renameSync(partial, output);
