// The decode step of a log_entries materialization alone, in one process, alternately (issue 16): the same
// stored payloads (the bench's OTLP bodies, brotli-compressed after the marker as ingestion stores them)
// written to Parquet as the materializer's extract reads them, by
//   native: each payload decompressed on libuv's threads (storedLogsPayloadContent), all written to one file, as
//           the materializer does, then __orrery_otlp_logs (the addon decodes each payload on DuckDB's threads,
//           straight into columns);
//   js:     payloadLines on this thread (decompress + protobuf to NDJSON lines), then DuckDB's read_json of
//           the lines (the path with ORRERY_NATIVE=off, and before the addon's decoder);
// and, for reference, read_json of NDJSON lines already written (what DuckDB alone costs for the same rows).
// No server, Postgres or join: what is left of a materialization's time besides these is in bench/materialization
// run.sh's profile. Prints rows/s per run, the best of each and the ratio native / js; load average before and after.
//
//   node bench/materialization/native-decode.mjs [--payloads 500] [--records 1000] [--repeats 3] [--threads 2]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { arg, storedPayloads } from './payloads.mjs';

const root = new URL('../..', import.meta.url).pathname;
const { DuckDBEngine, nativeLogsPayloads } = await import(`${root}/dist/src/engine/index.js`);
const { payloadLines } = await import(`${root}/dist/src/ingestion/index.js`);
const { payloadRows, quoteLiteral } = await import(`${root}/dist/src/views/index.js`);

const payloads = arg('payloads', 500);
const batch = arg('records', 1000);
const repeats = arg('repeats', 3);
const threads = arg('threads', 2);

const dir = mkdtempSync(join(tmpdir(), 'orrery-native-decode-'));
const engine = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir, threads });
try {
  const stored = storedPayloads(payloads, batch, 'decode');
  const lines = [];
  for (let n = 0; n < payloads; n++) {
    const path = join(dir, `lines-${n}.jsonl`);
    writeFileSync(path, payloadLines(stored[n]));
    lines.push(path);
  }
  const rows = payloads * batch;
  // The extract's own work but its join with __blocks: the typed columns, sorted by time, to zstd Parquet.
  const copy = (relation) =>
    `COPY (SELECT make_timestamp_ns(time) AS time, target, level, msg, CAST(properties AS JSON) AS properties, trace_id, span_id
             FROM ${relation} ORDER BY time)
       TO ${quoteLiteral(join(dir, 'out.parquet'))} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)`;
  const kinds = {
    native: async () => {
      const contents = await Promise.all(stored.map(nativeLogsPayloads()));
      const file = join(dir, 'contents.otlp');
      writeFileSync(file, Buffer.concat(contents));
      return engine.execute(copy(payloadRows('log', [], { file, sizes: contents.map((c) => c.length) })));
    },
    js: async () => {
      const decoded = stored.map((bytes, n) => {
        const path = join(dir, `decoded-${n}.jsonl`);
        writeFileSync(path, payloadLines(bytes));
        return path;
      });
      return engine.execute(copy(payloadRows('log', decoded)));
    },
    'read_json only': () => engine.execute(copy(payloadRows('log', lines))),
  };
  const best = {};
  console.log(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (let r = 0; r < repeats; r++) {
    for (const [kind, run] of Object.entries(kinds)) {
      const started = process.hrtime.bigint();
      const written = await run();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (written !== rows) throw new Error(`${kind}: ${written} rows written, ${rows} expected`);
      best[kind] = Math.max(best[kind] ?? 0, rows / seconds);
      console.log(
        `run ${r + 1} ${kind.padEnd(15)} ${seconds.toFixed(2)} s  ${(rows / seconds / 1000).toFixed(0)} k rows/s`,
      );
    }
  }
  console.log(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (const [kind, value] of Object.entries(best))
    console.log(`best ${kind.padEnd(15)} ${(value / 1000).toFixed(0)} k rows/s (DuckDB threads ${threads})`);
  console.log(`ratio native / js: ${(best.native / best.js).toFixed(2)}`);
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
