// Bytes a running Orrery keeps for what it was sent (issue 16, item 4): the lake's payload objects
// (<lake>/blobs), its other files (partitions of every view set: Parquet), and its metadata database
// (pg_database_size, catalog and indexes included; the write-ahead log is not counted, as no database's
// would be). Prints one JSON line. The data folder is the server's ORRERY_DATA_DIR; its log names the
// embedded Postgres, whose password is in the cluster folder.
//   node bench/ingestion/storage.mjs <data dir> [root=ORRERY_ROOT or the repo]
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const dataDir = process.argv[2];
const root = process.argv[3] ?? process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;

/** Total size of the regular files under a folder, and how many. */
function usage(folder) {
  let bytes = 0;
  let files = 0;
  let entries = [];
  try {
    entries = readdirSync(folder, { recursive: true }).map(String);
  } catch {
    return { bytes, files };
  }
  for (const entry of entries) {
    const stat = statSync(join(folder, entry));
    if (!stat.isFile()) continue;
    bytes += stat.size;
    files += 1;
  }
  return { bytes, files };
}

const lake = join(dataDir, 'lake');
const payloads = usage(join(lake, 'blobs'));
const partitions = { bytes: 0, files: 0 };
for (const top of readdirSync(lake)) {
  if (top === 'blobs') continue;
  const u = usage(join(lake, top));
  partitions.bytes += u.bytes;
  partitions.files += u.files;
}

const log = readFileSync(join(dataDir, 'server.log'), 'utf8');
// The last start's: a data folder served again appends to the same log.
const found = [...log.matchAll(/embedded Postgres ready on 127\.0\.0\.1:(\d+) \(cluster (.+?), \d+ ms\)/g)].at(-1);
if (!found) throw new Error("the server's log does not say where its embedded Postgres listens");
const password = readFileSync(join(found[2], 'orrery-password'), 'utf8').trim();
const { default: pg } = await import(join(root, 'node_modules/pg/lib/index.js'));
const db = new pg.Client({ host: '127.0.0.1', port: Number(found[1]), user: 'postgres', password, database: 'orrery' });
await db.connect();
try {
  const { rows } = await db.query(
    `SELECT pg_database_size(current_database())::text AS database,
            (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE c.relkind IN ('r', 'p', 'm') AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')) AS tables,
            (SELECT pg_total_relation_size('blocks'))::text AS blocks`,
  );
  const postgres = {
    database: Number(rows[0].database),
    tables: Number(rows[0].tables),
    blocks: Number(rows[0].blocks),
  };
  console.log(JSON.stringify({ payloads, partitions, postgres }));
} finally {
  await db.end();
}
