import type { MetadataQueries } from '../metadata/index.js';
import type { ObjectStore } from './object-store.js';
import { payloadGroupMayBeBy, payloadGroupSecond } from './object-keys.js';

// Every object under these prefixes is accounted for by a Postgres row: a partition, a retired
// file or a quarantined one (kept for inspection) for views/, a block for blobs/ (a group's object: any
// block that names it, or a replay mark covering it, see markedGroups), nothing for tmp/ (scratch files live for one materialization), a text index's
// statistics or a retired file for text-index/.
// A writer killed between writing an object and registering it (a daemon after its COPY, a server
// after writing a group's payloads) leaves an object no row names; this sweep deletes those once they are older
// than the grace, which must exceed the time any writer takes from starting an object to committing its
// row (the materializer refuses to commit a partition written more than half the grace ago). DuckLake
// keeps its own files under tables/ and expires them itself: they are not swept.

const blobKey = /^blobs\/[^/]+\/[^/]+\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$/;

/** The keys of a page that a row of Postgres names. */
const referenced: Record<string, (db: MetadataQueries, keys: string[]) => Promise<Set<string>>> = {
  'views/': async (db, keys) => {
    const { rows } = await db.query<{ file_path: string }>(
      `SELECT file_path FROM lakehouse_partitions WHERE file_path = ANY($1)
       UNION SELECT file_path FROM temporary_files WHERE file_path = ANY($1)
       UNION SELECT file_path FROM quarantined_partitions WHERE file_path = ANY($1)`,
      [keys],
    );
    return new Set(rows.map((r) => r.file_path));
  },
  'blobs/': async (db, keys) => {
    const ids = new Map(keys.flatMap((key) => (blobKey.exec(key) ? [[blobKey.exec(key)![1], key] as const] : [])));
    const { rows } = await db.query<{ block_id: string | null; payload_file: string | null }>(
      `SELECT block_id::text, NULL AS payload_file FROM blocks WHERE block_id = ANY($1::uuid[])
       UNION SELECT NULL, payload_file FROM blocks WHERE payload_file = ANY($2)`,
      [[...ids.keys()], keys],
    );
    return new Set([...rows.map((r) => r.payload_file ?? ids.get(r.block_id!)!), ...(await markedGroups(db, keys))]);
  },
  'tmp/': () => Promise.resolve(new Set()),
  // A text index's copies (src/resources/partition-stats.ts, writeTextCopy): named by the statistics rows of its
  // files, or queued for deletion (an index dropped). A copy is written before its row, and a drop deletes the
  // rows before it queues their copies: a process killed in between leaves a copy of rows nothing else deletes,
  // after retention or deletion of its partition too. (There are objects here only once the resources' tables exist.)
  'text-index/': async (db, keys) => {
    const { rows } = await db.query<{ file_path: string }>(
      `SELECT copy_path AS file_path FROM resource_partition_stats WHERE copy_path = ANY($1)
       UNION SELECT copy_path FROM resource_audience_stats WHERE copy_path = ANY($1)
       UNION SELECT file_path FROM temporary_files WHERE file_path = ANY($1)`,
      [keys],
    );
    return new Set(rows.map((r) => r.file_path));
  },
};

/**
 * The commit groups of `keys` that a server's replay mark still covers (src/ingestion/group-replay.ts; a mark of
 * before its `replay_until`, from its `replay_from` on). With ORRERY_INGEST_ACK=synced a group is answered before its
 * rows commit: when its server is killed in between, no block names it until a server replays that mark (a start, or
 * a running server once the mark is stale), and deleting it first would lose acknowledged requests. A mark is deleted
 * once replayed.
 */
async function markedGroups(db: MetadataQueries, keys: readonly string[]): Promise<string[]> {
  const groups = keys.flatMap((key) => {
    const second = payloadGroupSecond(key);
    return second === null ? [] : [{ key, second: BigInt(second) }];
  });
  if (groups.length === 0) return [];
  const { rows: marks } = await db.query<{ writer: string; replay_from: string; replay_until: string | null }>(
    'SELECT writer::text, replay_from::text, replay_until::text FROM ingest_marks',
  );
  const second = (nanos: string): bigint => BigInt(nanos) / 1_000_000_000n;
  return groups
    .filter(({ key, second: at }) =>
      marks.some(
        (m) =>
          payloadGroupMayBeBy(key, m.writer) &&
          at >= second(m.replay_from) &&
          (m.replay_until === null || at <= second(m.replay_until)),
      ),
    )
    .map((g) => g.key);
}

/**
 * Deletes the objects under the accounted prefixes that no row names and that were written more than
 * `graceSeconds` ago, and abandons multipart uploads started as long ago; returns how many of each.
 */
export async function deleteOrphans(
  db: MetadataQueries,
  store: ObjectStore,
  graceSeconds: number,
  now = Date.now(),
): Promise<{ objects: number; uploads: number }> {
  const before = new Date(now - graceSeconds * 1000);
  let objects = 0;
  for (const [prefix, named] of Object.entries(referenced)) {
    for await (const page of store.listWrittenBefore(prefix, before)) {
      if (page.length === 0) continue;
      const kept = await named(db, page);
      for (const key of page) {
        if (kept.has(key)) continue;
        await store.delete(key);
        objects++;
      }
    }
  }
  return { objects, uploads: await store.abortUploadsStartedBefore(before) };
}
