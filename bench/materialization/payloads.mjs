// Shared by the bench/materialization scripts that run without a server: their options and the stored form
// of the bench's OTLP logs bodies (bodies.mjs), as ingestion stores a body it compresses.
import { brotliCompressSync, constants } from 'node:zlib';
import { buildTemplates, makeBody } from '../ingestion/bodies.mjs';

/** The number after --<name> on the command line, or `fallback`. */
export const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};

/** `payloads` bodies of `batch` records, each brotli-compressed (quality 0, window 18) after the 0xce marker. */
export function storedPayloads(payloads, batch, runId) {
  const templates = buildTemplates(8, 4, batch);
  return Array.from({ length: payloads }, (_, n) => {
    const { body } = makeBody(templates, n, runId, batch);
    const compressed = brotliCompressSync(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 0, [constants.BROTLI_PARAM_LGWIN]: 18 },
    });
    return Buffer.concat([Buffer.from([0xce]), compressed]);
  });
}
