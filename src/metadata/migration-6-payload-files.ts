// Migration 6: a block's payload may be a segment of its commit group's object, which holds the payloads of
// every block committed together: payload_file names that object, object_offset and payload_size the
// segment. NULL for a payload stored as an object of its own (blobs/<process>/<stream>/<block>.jsonl), as
// every block before this migration was. The index serves retention and the orphan sweep, which delete a
// group's object only once no block names it.

export const payloadFiles = `
ALTER TABLE blocks ADD COLUMN payload_file TEXT;
CREATE INDEX block_payload_file ON blocks (payload_file) WHERE payload_file IS NOT NULL;
`;
