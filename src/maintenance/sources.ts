import { payloadLines } from '../ingestion/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { nanosToPg, payloadPlace, readPayload, type ObjectStore } from '../lakehouse/index.js';
import type { InsertRange } from '../views/index.js';

// What the daemon reads from Postgres for the view sets built on ingested data.

/** A block with what its payload's rows need of its process and stream. */
export interface BlockRow {
  readonly block_id: string;
  readonly stream_id: string;
  readonly process_id: string;
  readonly begin_time: string;
  readonly end_time: string;
  readonly nb_objects: number;
  /** The object holding the payload, with the offset of it there; null for a payload stored as an object of its own. */
  readonly payload_file: string | null;
  readonly object_offset: string;
  readonly payload_size: string;
  readonly insert_time: string;
  readonly tags: string[];
  readonly format: string;
  readonly exe: string | null;
  readonly username: string | null;
  readonly computer: string | null;
  readonly process_properties: unknown;
  readonly audience: string;
}

const iso = (column: string): string => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/** Blocks the view set has quarantined are left out of its extract and of its source count. */
const notQuarantined = (viewParam: string): string =>
  `NOT EXISTS (SELECT 1 FROM quarantined_blocks q WHERE q.block_id = b.block_id AND q.view_set_name = ${viewParam})`;

/** Blocks inserted in a range; with `payloadsOf`, only those of streams with its tag that its view set has not quarantined. */
export async function blocksInRange(
  db: MetadataQueries,
  range: InsertRange,
  payloadsOf?: { view: string; tag: string },
): Promise<BlockRow[]> {
  const params: unknown[] = [nanosToPg(range.begin), nanosToPg(range.end)];
  if (payloadsOf) params.push(payloadsOf.tag, payloadsOf.view);
  const { rows } = await db.query<BlockRow>(
    `SELECT b.block_id::text, b.stream_id::text, b.process_id::text, ${iso('b.begin_time')} AS begin_time,
            ${iso('b.end_time')} AS end_time, b.nb_objects, b.payload_file, b.object_offset, b.payload_size,
            ${iso('b.insert_time')} AS insert_time,
            s.tags, s.format, p.exe, p.username, p.computer, p.properties AS process_properties, b.audience
       FROM blocks b JOIN streams s ON s.stream_id = b.stream_id JOIN processes p ON p.process_id = b.process_id
      WHERE b.insert_time >= $1 AND b.insert_time < $2 ${payloadsOf ? `AND $3 = ANY(s.tags) AND ${notQuarantined('$4')}` : ''}
      ORDER BY b.insert_time, b.block_id`,
    params,
  );
  return rows;
}

/** Rows of the processes or streams table inserted in a range, as the view sets' columns. */
export async function metadataRows(
  db: MetadataQueries,
  table: 'processes' | 'streams',
  range: InsertRange,
): Promise<Record<string, unknown>[]> {
  const query =
    table === 'processes'
      ? `SELECT process_id::text, exe, username, realname, computer, distro, cpu_brand, ${iso('start_time')} AS start_time,
                ${iso('insert_time')} AS insert_time, parent_process_id::text, properties, audience
           FROM processes WHERE insert_time >= $1 AND insert_time < $2 ORDER BY insert_time, process_id`
      : `SELECT s.stream_id::text, s.process_id::text, s.tags, s.properties, s.format, ${iso('s.insert_time')} AS insert_time,
                p.audience
           FROM streams s JOIN processes p ON p.process_id = s.process_id
          WHERE s.insert_time >= $1 AND s.insert_time < $2 ORDER BY s.insert_time, s.stream_id`;
  const { rows } = await db.query(query, [nanosToPg(range.begin), nanosToPg(range.end)]);
  return rows;
}

/**
 * The source count of a built-in set over a range: rows for metadata tables, objects of the blocks it has
 * not quarantined for payloads (so releasing a block makes the range's partition stale).
 */
export async function sourceCount(
  db: MetadataQueries,
  view: string,
  source: { kind: 'metadata'; table: string } | { kind: 'payload'; tag: string },
  range: InsertRange,
): Promise<bigint> {
  const params = [nanosToPg(range.begin), nanosToPg(range.end)];
  if (source.kind === 'payload') params.push(source.tag, view);
  const sql =
    source.kind === 'payload'
      ? `SELECT coalesce(sum(b.nb_objects), 0)::bigint AS count FROM blocks b JOIN streams s ON s.stream_id = b.stream_id
          WHERE b.insert_time >= $1 AND b.insert_time < $2 AND $3 = ANY(s.tags) AND ${notQuarantined('$4')}`
      : `SELECT count(*)::bigint AS count FROM ${source.table} WHERE insert_time >= $1 AND insert_time < $2`;
  const { rows } = await db.query<{ count: string }>(sql, params);
  return BigInt(rows[0].count);
}

/** One block's records as its view set reads them, for parse_block. */
export interface BlockRecords {
  /** The stream's format: `otlp/v1/logs`, `otlp/v1/metrics` or `otlp/v1/traces`. */
  readonly format: string;
  /** The process's resource attributes, as JSON text. */
  readonly resource: string;
  /** One JSON object per record, in payload order; null when the payload is gone from the store. */
  readonly lines: string[] | null;
}

/**
 * A block's records (its payload decoded as the materializer decodes it); null when no block of these
 * audiences (null: any) has this id. The audience is checked before the payload is read, so a block of
 * another audience costs what a missing one does.
 */
export async function blockRecords(
  db: MetadataQueries,
  store: ObjectStore,
  blockId: string,
  audiences: readonly string[] | null,
): Promise<BlockRecords | null> {
  const { rows } = await db.query<{
    process_id: string;
    stream_id: string;
    payload_file: string | null;
    object_offset: string;
    payload_size: string;
    format: string;
    resource: string;
  }>(
    `SELECT b.process_id::text, b.stream_id::text, b.payload_file, b.object_offset, b.payload_size, s.format,
            p.properties::text AS resource
       FROM blocks b JOIN streams s ON s.stream_id = b.stream_id JOIN processes p ON p.process_id = b.process_id
      WHERE b.block_id = $1::uuid AND ($2::text[] IS NULL OR b.audience = ANY($2::text[]))`,
    [blockId, audiences],
  );
  const block = rows[0];
  if (!block) return null;
  const payload = await readPayload(store, payloadPlace({ ...block, block_id: blockId }));
  const lines =
    payload === null
      ? null
      : Buffer.from(payloadLines(payload))
          .toString('utf8')
          .split('\n')
          .filter((line) => line.length > 0);
  return { format: block.format, resource: block.resource, lines };
}
