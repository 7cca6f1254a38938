// Where a test finds a block's payload: the columns of its row that place it, and its bytes read through the store
// (a segment of its commit group's object, or an object of its own for a block stored before those).
import { payloadPlace, readPayload, type ObjectStore } from '../../src/lakehouse/index.js';

/** A blocks row with what places its payload. */
export type PayloadRow = Parameters<typeof payloadPlace>[0];

/** The columns of a blocks row (aliased b) that place its payload, as PayloadRow's fields. */
export const payloadColumns =
  'b.process_id::text, b.stream_id::text, b.block_id::text, b.payload_file, b.object_offset, b.payload_size';

/** A block's payload bytes; fails when its object is gone. */
export async function blockPayload(store: ObjectStore, row: PayloadRow): Promise<Buffer> {
  const bytes = await readPayload(store, payloadPlace(row));
  if (bytes === null) throw new Error(`the payload of block ${row.block_id} is gone`);
  return Buffer.from(bytes);
}
