// ExportLogsServiceRequest to log records grouped by resource.
import { anyValueText, attributes } from './any-value.js';
import { enumValue, field, id, message, str, timestamp, type OtlpNode } from './otlp-fields.js';
import type { OtlpContentType, OtlpLogRecord, OtlpScope, ResourceGroup } from './otlp-types.js';
import { parseRequest, readGroups } from './request-reader.js';

const LEVELS = { resources: field('resourceLogs'), scopes: field('scopeLogs'), records: field('logRecords') };
const TIME = field('timeUnixNano');
const OBSERVED = field('observedTimeUnixNano');
const SEVERITY_NUMBER = field('severityNumber');
const SEVERITY_TEXT = field('severityText');
const BODY = field('body');
const TRACE_ID = field('traceId');
const SPAN_ID = field('spanId');
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

const SEVERITIES: Readonly<Record<string, number>> = Object.fromEntries(
  ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']
    .flatMap((level, i) => ['', '2', '3', '4'].map((n, j) => [`SEVERITY_NUMBER_${level}${n}`, i * 4 + j + 1]))
    .concat([['SEVERITY_NUMBER_UNSPECIFIED', 0]]),
);

function decodeLogRecord(record: OtlpNode, scope: OtlpScope, path: string, out: OtlpLogRecord[]): void {
  const traceId = id(record, TRACE_ID, 16, path);
  const spanId = id(record, SPAN_ID, 8, path);
  out.push({
    timeUnixNano: timestamp(record, TIME, path),
    observedTimeUnixNano: timestamp(record, OBSERVED, path),
    severityNumber: enumValue(record, SEVERITY_NUMBER, path, SEVERITIES),
    severityText: str(record, SEVERITY_TEXT, path),
    body: anyValueText(message(record, BODY, path), `${path}.body`),
    attributes: attributes(record, path),
    traceId: traceId === ZERO_TRACE ? null : traceId,
    spanId: spanId === ZERO_SPAN ? null : spanId,
    scope,
  });
}

/** Decodes an OTLP/HTTP logs request body (already decompressed) to log records grouped by resource. */
export function decodeLogs(body: Uint8Array, contentType: OtlpContentType): ResourceGroup<OtlpLogRecord>[] {
  return readGroups(parseRequest(body, contentType, 'logs'), LEVELS, decodeLogRecord);
}
