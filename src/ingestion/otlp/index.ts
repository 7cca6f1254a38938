// OTLP/HTTP decoding: request bodies (gzip, size cap, content type) to plain records grouped by resource,
// and the export response bodies. Pure: no server, no database.

/** Body helpers: undo Content-Encoding under a size cap; map Content-Type to protobuf or JSON; the default cap. */
export { contentTypeOf, decodeBody, DEFAULT_MAX_BODY_BYTES, type DecodeBodyOptions } from './body-decoder.js';
/** The typed error of every refusal (code, HTTP status, message) and the table of codes. */
export { OtlpDecodeError, otlpErrorCodes, type OtlpErrorCode } from './errors.js';
/** Export*ServiceResponse bodies (partial success included) and google.rpc.Status error bodies. */
export { encodeErrorStatus, encodeExportResponse, type PartialSuccess } from './export-response.js';
/** Decodes a logs request body to log records grouped by resource. */
export { decodeLogs } from './logs-decoder.js';
/** The validating scan of a logs protobuf body that decodes nothing, and the pieces its blocks are stored as. */
export {
  asFieldOne,
  resourceSkeleton,
  scanLogs,
  scanLogsWith,
  sealJsonLogsWith,
  sealLogsWith,
  type FlatJsonLogsSeal,
  type FlatLogsScan,
  type FlatLogsSeal,
  type SealedJsonLogs,
  type SealedLogs,
  type ScannedResourceLogs,
} from './logs-scan.js';
/** A logs payload stored as received written straight to its NDJSON lines (null: decode it the slow way). */
export { levelOf, logsLines } from './logs-lines.js';
/** Decodes a metrics request body to one record per data point, grouped by resource. */
export { decodeMetrics } from './metrics-decoder.js';
/** Decodes a traces request body to spans grouped by resource. */
export { decodeTraces } from './traces-decoder.js';
/** The canonical string of a resource's attributes, and the AnyValue nesting limit. */
export { MAX_ANY_VALUE_DEPTH, resourceKey } from './any-value.js';
/** The record, resource and attribute types the decoders return. */
export type * from './otlp-types.js';
