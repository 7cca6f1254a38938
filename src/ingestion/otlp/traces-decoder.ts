// ExportTraceServiceRequest to spans grouped by resource.
import { attributes } from './any-value.js';
import { malformed } from './errors.js';
import { enumValue, field, id, list, message, str, timestamp, type OtlpNode } from './otlp-fields.js';
import type { OtlpContentType, OtlpScope, OtlpSpan, ResourceGroup } from './otlp-types.js';
import { parseRequest, readGroups } from './request-reader.js';

const LEVELS = { resources: field('resourceSpans'), scopes: field('scopeSpans'), records: field('spans') };
const TRACE_ID = field('traceId');
const SPAN_ID = field('spanId');
const PARENT_SPAN_ID = field('parentSpanId');
const NAME = field('name');
const KIND = field('kind');
const START = field('startTimeUnixNano');
const END = field('endTimeUnixNano');
const STATUS = field('status');
const CODE = field('code');
const MESSAGE = field('message');
const EVENTS = field('events');

const KINDS: Readonly<Record<string, number>> = Object.fromEntries(
  ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'].map((k, i) => [`SPAN_KIND_${k}`, i]),
);
const STATUS_CODES: Readonly<Record<string, number>> = {
  STATUS_CODE_UNSET: 0,
  STATUS_CODE_OK: 1,
  STATUS_CODE_ERROR: 2,
};

/** A span's own ids are required: missing, empty or all-zero ids are refused. */
function requiredId(span: OtlpNode, f: typeof TRACE_ID, size: number, path: string): string {
  const value = id(span, f, size, path);
  if (value === null) throw malformed(`${path}.${f.camel}: required, expected ${size} bytes (${size * 2} hex digits)`);
  if (/^0+$/.test(value)) throw malformed(`${path}.${f.camel}: all-zero ids are invalid`);
  return value;
}

function decodeSpan(span: OtlpNode, scope: OtlpScope, path: string, out: OtlpSpan[]): void {
  const status = message(span, STATUS, path);
  const statusPath = `${path}.status`;
  const parentSpanId = id(span, PARENT_SPAN_ID, 8, path);
  out.push({
    traceId: requiredId(span, TRACE_ID, 16, path),
    spanId: requiredId(span, SPAN_ID, 8, path),
    parentSpanId: parentSpanId === '0000000000000000' ? null : parentSpanId,
    name: str(span, NAME, path),
    kind: enumValue(span, KIND, path, KINDS),
    startTimeUnixNano: timestamp(span, START, path),
    endTimeUnixNano: timestamp(span, END, path),
    attributes: attributes(span, path),
    statusCode: status === null ? 0 : enumValue(status, CODE, statusPath, STATUS_CODES),
    statusMessage: status === null ? '' : str(status, MESSAGE, statusPath),
    events: list(span, EVENTS, path).length,
    scope,
  });
}

/** Decodes an OTLP/HTTP traces request body (already decompressed) to spans grouped by resource. */
export function decodeTraces(body: Uint8Array, contentType: OtlpContentType): ResourceGroup<OtlpSpan>[] {
  return readGroups(parseRequest(body, contentType, 'traces'), LEVELS, decodeSpan);
}
