// A built tree's ingestion on a fresh data folder, in this process: its own embedded Postgres and a local lake,
// with the native seal when built. Shared by store-cpu.mjs and replay-start.mjs.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Opens `tree` (a built checkout, dist/ compiled) on a new data folder; `service()` makes an IngestionService that
 * stores as `orrery serve` does (a tree from before the option ignores it): rows committed without the WAL flush, a
 * mark every 200 ms (src/ingestion/group-replay.ts). `close()` removes the folder.
 */
export async function openTree(tree, name) {
  const load = async (path) => import(pathToFileURL(join(resolve(tree), 'dist', path)).href);
  const { MetadataStore } = await load('src/metadata/index.js');
  const { FileObjectStore } = await load('src/lakehouse/index.js');
  const { IngestionService } = await load('src/ingestion/index.js');
  const native = await load('src/engine/native-export.js').catch(() => ({}));
  const dataDir = mkdtempSync(join(tmpdir(), `orrery-${name}-`));
  const db = await MetadataStore.open({ dataDir });
  const store = new FileObjectStore(join(dataDir, 'lake'), native.nativeSyncedWrite?.() ?? undefined);
  return {
    dataDir,
    db,
    store,
    service: () =>
      new IngestionService(
        db,
        store,
        undefined,
        native.nativeLogsScan?.() ?? null,
        native.nativeLogsSeal?.() ?? null,
        native.nativeJsonLogsSeal?.() ?? null,
        { markIntervalMs: 200, log: (message, error) => console.error(message, error) },
      ),
    close: async () => {
      store.close();
      await db.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Measures the two trees in turn (A B A B ...), `rounds` times: prints each result as `line(result)` after its round
 * and side, then the median of each of `keys` ([name, digits]) per tree and B/A, then the trees.
 */
export async function alternate([treeA, treeB], rounds, measure, line, keys) {
  const results = { A: [], B: [] };
  for (let round = 1; round <= rounds; round++)
    for (const [side, tree] of [
      ['A', treeA],
      ['B', treeB],
    ]) {
      const r = await measure(tree, round);
      results[side].push(r);
      console.log(`${String(round).padStart(5)} ${side.padStart(4)} ${line(r)}`);
    }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  for (const [key, digits] of keys) {
    const a = median(results.A.map((r) => r[key]));
    const b = median(results.B.map((r) => r[key]));
    console.log(`median ${key}: A ${a.toFixed(digits)}  B ${b.toFixed(digits)}  B/A ${(b / a).toFixed(2)}`);
  }
  console.log(`A = ${treeA}\nB = ${treeB}`);
}
