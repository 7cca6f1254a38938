// Shared by the bench/materialization scripts that run without a server: their options and the stored form
// of the bench's OTLP logs bodies (bodies.mjs), as ingestion stores a body it compresses.
import { randomFillSync } from 'node:crypto';
import { brotliCompressSync, constants } from 'node:zlib';
import { buildTemplates, makeBody } from '../ingestion/bodies.mjs';

/** The number after --<name> on the command line, or `fallback`. */
export const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};

/**
 * `payloads` bodies of `batch` records, each brotli-compressed (quality 0, window 18) after the 0xce marker. With
 * `uniqueIds`, each traced record gets a trace and span id of its own, as real traffic has; otherwise the templates'
 * ids repeat every 32 bodies (a row group of 131,072 rows then holds ~8,000 distinct ids, which DuckDB keeps as a
 * dictionary).
 */
export function storedPayloads(payloads, batch, runId, uniqueIds = false) {
  const templates = buildTemplates(8, 4, batch);
  return Array.from({ length: payloads }, (_, n) => {
    const { body } = makeBody(templates, n, runId, batch);
    if (uniqueIds) freshIds(body);
    const compressed = brotliCompressSync(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 0, [constants.BROTLI_PARAM_LGWIN]: 18 },
    });
    return Buffer.concat([Buffer.from([0xce]), compressed]);
  });
}

/**
 * Overwrites each LogRecord's trace_id and span_id with random bytes: the fields follow each other in the SDK's
 * serialization, trace_id (field 9, 16 bytes: 0x4a 0x10) then span_id (field 10, 8 bytes: 0x52 0x08).
 */
function freshIds(body) {
  for (let p = body.indexOf(TRACE_TAG); p >= 0 && p + 28 <= body.length; p = body.indexOf(TRACE_TAG, p + 1)) {
    if (body[p + 18] !== 0x52 || body[p + 19] !== 0x08) continue;
    randomFillSync(body, p + 2, 16);
    randomFillSync(body, p + 20, 8);
  }
}
const TRACE_TAG = Buffer.from([0x4a, 0x10]);
