// Every DuckDB call a server makes through @duckdb/node-api, timed (issue 10): preloaded into `orrery serve`
// (NODE_OPTIONS="--import <this file>", which the bench scripts' servers inherit), it wraps DuckDBConnection's
// run, runAndReadAll and prepare and appends one line per call to $DUCKDB_CALLS_OUT.<pid>.tsv: milliseconds,
// method, statement text (whitespace folded; runAndReadAll calls run, so its statement is listed twice). The native exporter's runs of prepared statements are not
// among them. PROFILE.md (eighth and ninth passes) reads such files:
//
//   NODE_OPTIONS="--import $PWD/bench/latency/duckdb-calls.mjs" DUCKDB_CALLS_OUT=/tmp/calls node bench/latency/lake-phases.mjs
//   awk -F'\t' '$2 == "run" && $3 == "COMMIT" { print $1 }' /tmp/calls.*.tsv | sort -n    # the COMMITs' times
import { appendFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// The bindings of the tree this file is in (the server's own when it runs from this tree).
const require = createRequire(join(import.meta.dirname, '..', '..', 'package.json'));
const { DuckDBConnection } = await import(require.resolve('@duckdb/node-api'));
const out = `${process.env.DUCKDB_CALLS_OUT ?? '/tmp/duckdb-calls'}.${process.pid}.tsv`;

for (const method of ['run', 'runAndReadAll', 'prepare']) {
  const original = DuckDBConnection.prototype[method];
  DuckDBConnection.prototype[method] = async function (sql, ...rest) {
    const start = performance.now();
    try {
      return await original.call(this, sql, ...rest);
    } finally {
      const ms = (performance.now() - start).toFixed(3);
      appendFileSync(out, `${ms}\t${method}\t${String(sql).replace(/\s+/g, ' ')}\n`);
    }
  };
}
