// Request bodies: Content-Encoding (identity or gzip, streamed under a size cap) and Content-Type.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { malformed, OtlpDecodeError } from './errors.js';
import type { OtlpContentType } from './otlp-types.js';

/** The default cap on a decoded request body: 100 MiB, as micromegas's ingestion server. */
export const DEFAULT_MAX_BODY_BYTES = 100 * 1024 * 1024;

/** Options of {@link decodeBody}. */
export interface DecodeBodyOptions {
  /** Largest accepted body after decompression, in bytes; defaults to {@link DEFAULT_MAX_BODY_BYTES}. */
  readonly maxBytes?: number;
  /** Called with the size of each decoded chunk as it arrives; may throw to refuse the body (a budget). */
  readonly charge?: (bytes: number) => void;
}

/**
 * Output bytes per step of a gunzip. zlib inflates each step on libuv's threads, and each step costs the event
 * loop a round of stream glue (callbacks, a chunk pushed and read): at zlib's default of 16 KiB a 1,000-record
 * logs body (166 KiB) took 11, and the main thread 0.31 ms per body; 0.195 ms in one step (bench/ingestion/
 * gunzip-loop.mjs). The cap and the budget are still checked at each step.
 */
const gunzipChunkBytes = 256 * 1024;

const tooLarge = (max: number): OtlpDecodeError =>
  new OtlpDecodeError('OTLP_BODY_TOO_LARGE', `request body is larger than ${max} bytes once decoded`);

function encodingOf(header: string | undefined): 'identity' | 'gzip' {
  const codings = (header ?? '')
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return 'identity';
  if (codings.length === 1 && (codings[0] === 'gzip' || codings[0] === 'x-gzip')) return 'gzip';
  throw new OtlpDecodeError('OTLP_UNSUPPORTED_ENCODING', `unsupported Content-Encoding '${header}' (use gzip or none)`);
}

async function collect(
  chunks: AsyncIterable<Uint8Array>,
  max: number,
  charge?: (bytes: number) => void,
): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of chunks) {
    size += chunk.byteLength;
    if (size > max) throw tooLarge(max); // leaving the loop stops (destroys) the source
    charge?.(chunk.byteLength);
    parts.push(chunk);
  }
  return parts.length === 1 ? parts[0] : Buffer.concat(parts, size);
}

/**
 * Undoes the Content-Encoding of a request body (whole, or streamed as it arrives): identity or gzip.
 * Gunzipping is streamed and stops as soon as the output passes `maxBytes`, so a gzip bomb costs at
 * most the cap. Other encodings are refused (415), bodies over the cap too (413), bad gzip is a 400.
 */
export async function decodeBody(
  body: Uint8Array | AsyncIterable<Uint8Array>,
  contentEncoding: string | undefined,
  options: DecodeBodyOptions = {},
): Promise<Uint8Array> {
  const max = options.maxBytes ?? DEFAULT_MAX_BODY_BYTES;
  const encoding = encodingOf(contentEncoding);
  if (encoding === 'identity') {
    if (!(body instanceof Uint8Array)) return collect(body, max, options.charge);
    if (body.byteLength > max) throw tooLarge(max);
    options.charge?.(body.byteLength);
    return body;
  }
  // highWaterMark 1: read no further ahead of the gunzip than one chunk.
  const source =
    body instanceof Readable ? body : Readable.from(body instanceof Uint8Array ? [body] : body, { highWaterMark: 1 });
  let result: Uint8Array = new Uint8Array(0);
  let refusal: unknown;
  try {
    await pipeline(
      source,
      createGunzip({ chunkSize: gunzipChunkBytes }),
      async (gunzipped: AsyncIterable<Uint8Array>) => {
        try {
          result = await collect(gunzipped, max, options.charge);
        } catch (error) {
          refusal = error; // the pipeline reports it as an abort: keep the cause
          throw error;
        }
      },
    );
  } catch (error) {
    if (refusal instanceof OtlpDecodeError) throw refusal;
    // zlib's own errors (Z_DATA_ERROR, Z_BUF_ERROR, ...) are the body's fault; a failing source is not.
    if (String((error as { code?: unknown }).code).startsWith('Z_'))
      throw malformed(`body is not valid gzip: ${(error as Error).message}`);
    throw error;
  }
  return result;
}

/**
 * The OTLP serialization named by a Content-Type header: application/x-protobuf (or
 * application/protobuf) or application/json, parameters ignored; anything else is a 415.
 */
export function contentTypeOf(header: string | undefined): OtlpContentType {
  const mediaType = (header ?? '').split(';')[0].trim().toLowerCase();
  if (mediaType === 'application/x-protobuf' || mediaType === 'application/protobuf') return 'protobuf';
  if (mediaType === 'application/json') return 'json';
  throw new OtlpDecodeError(
    'OTLP_UNSUPPORTED_MEDIA_TYPE',
    header === undefined || header === ''
      ? 'missing Content-Type (use application/x-protobuf or application/json)'
      : `unsupported Content-Type '${header}' (use application/x-protobuf or application/json)`,
  );
}
