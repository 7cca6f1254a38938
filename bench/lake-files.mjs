// The Parquet files DuckLake wrote for one series table of a lake (under <lake>/tables/.../<table>/),
// for benchmarks that run DuckDB in-process on the same files as the server.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Paths of every Parquet file of `table` under the lake folder `lake`. */
export function seriesTableFiles(lake, table) {
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.parquet') && path.includes(`/${table}/`)) files.push(path);
    }
  };
  walk(join(lake, 'tables'));
  return files;
}
