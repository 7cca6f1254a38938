// Writes each block's payload as its own NDJSON file, <lake>/blobs/<process>/<stream>/<block>.jsonl, as
// the materializer decodes it (payloadLines), so that in-process DuckDB can run the view's extract on
// the same records: payloads stored as received (OTLP protobuf) are decoded in place, and the payloads a
// commit group appended to one object (blocks.payload_file, object_offset, payload_size) are cut out of
// it, which needs the metadata database (ORRERY_METADATA_URL). Prints one JSON line: blocks written,
// records, seconds and CPU seconds of the decode. Run after Orrery's own materialization: it changes the lake.
//   ORRERY_METADATA_URL=postgres://… node bench/materialization/decode-payloads.mjs <lake> [root=ORRERY_ROOT or the repo]
import { mkdirSync, openSync, readFileSync, readSync, closeSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const lake = process.argv[2];
const root = process.argv[3] ?? process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const { payloadLines } = await import(join(root, 'dist/src/ingestion/index.js'));

/** [file to write, where its payload is] for every block: its own file, or a segment of its group's object. */
async function placements() {
  const own = readdirSync(join(lake, 'blobs'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => [join(lake, 'blobs', f), { file: join(lake, 'blobs', f) }]);
  const url = process.env.ORRERY_METADATA_URL;
  if (!url) return own;
  const { default: pg } = await import(join(root, 'node_modules/pg/lib/index.js'));
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query(
      `SELECT process_id::text, stream_id::text, block_id::text, payload_file, object_offset::text, payload_size::text
         FROM blocks WHERE payload_file IS NOT NULL ORDER BY payload_file, object_offset`,
    );
    const grouped = rows.map((r) => [
      join(lake, 'blobs', r.process_id, r.stream_id, `${r.block_id}.jsonl`),
      { file: join(lake, r.payload_file), offset: Number(r.object_offset), size: Number(r.payload_size) },
    ]);
    return [...own, ...grouped];
  } finally {
    await db.end();
  }
}

function read({ file, offset, size }) {
  if (offset === undefined) return readFileSync(file);
  const buffer = Buffer.alloc(size);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buffer, 0, size, offset);
  } finally {
    closeSync(fd);
  }
  return buffer;
}

let written = 0;
let lines = 0;
let seconds = 0;
const cpu0 = process.cpuUsage();
for (const [target, where] of await placements()) {
  const payload = read(where);
  if (payload[0] === 0x7b && where.offset === undefined) continue; // NDJSON in its own file already
  const start = performance.now();
  const decoded = payloadLines(payload);
  seconds += (performance.now() - start) / 1000;
  for (const byte of decoded) if (byte === 0x0a) lines++;
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, decoded);
  written++;
}
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    rewritten: written,
    records: lines,
    decode_s: +seconds.toFixed(3),
    cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(3),
  }),
);
