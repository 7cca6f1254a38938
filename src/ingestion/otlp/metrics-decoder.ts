// ExportMetricsServiceRequest to metric data points grouped by resource.
import { attributes } from './any-value.js';
import { malformed } from './errors.js';
import {
  double,
  element,
  field,
  has,
  int64,
  list,
  message,
  optDouble,
  str,
  uint32,
  timestamp,
  uint64,
  type Field,
  type OtlpNode,
} from './otlp-fields.js';
import { isProtoMessage } from './otlp-proto.js';
import type { MetricKind, OtlpContentType, OtlpMetricPoint, OtlpScope, ResourceGroup } from './otlp-types.js';
import { parseRequest, readGroups } from './request-reader.js';

const LEVELS = { resources: field('resourceMetrics'), scopes: field('scopeMetrics'), records: field('metrics') };
const NAME = field('name');
const UNIT = field('unit');
const DESCRIPTION = field('description');
const DATA_POINTS = field('dataPoints');
const TIME = field('timeUnixNano');
const START = field('startTimeUnixNano');
const FLAGS = field('flags');
const AS_DOUBLE = field('asDouble');
const AS_INT = field('asInt');
const COUNT = field('count');
const SUM = field('sum');
const MIN = field('min');
const MAX = field('max');
const QUANTILE_VALUES = field('quantileValues');
const QUANTILE = field('quantile');
const VALUE = field('value');

/** DataPointFlags.DATA_POINT_FLAGS_NO_RECORDED_VALUE_MASK: the point only marks a gap. */
const NO_RECORDED_VALUE = 1;

const DATA: ReadonlyArray<readonly [Field, MetricKind]> = [
  [field('gauge'), 'gauge'],
  [SUM, 'sum'],
  [field('histogram'), 'histogram'],
  [field('exponentialHistogram'), 'exponential_histogram'],
  [field('summary'), 'summary'],
];
const BY_ONEOF = new Map(DATA.map(([f, kind]) => [f.camel, [f, kind] as const]));

/** The metric's data field and kind: protobufjs names it in the `data` oneof; JSON must set at most one. */
function dataOf(metric: OtlpNode, path: string): readonly [Field, MetricKind] | undefined {
  if (isProtoMessage(metric)) return BY_ONEOF.get((metric as { data?: string }).data ?? '');
  let found: readonly [Field, MetricKind] | undefined;
  for (const entry of DATA) {
    if (!has(metric, entry[0])) continue;
    if (found) throw malformed(`${path}: a metric sets both ${found[0].camel} and ${entry[0].camel}`);
    found = entry;
  }
  return found;
}

function numberValue(point: OtlpNode, path: string): number {
  const kind = isProtoMessage(point) ? (point as { value?: string }).value : undefined;
  const isDouble = isProtoMessage(point) ? kind === 'asDouble' : has(point, AS_DOUBLE);
  const isInt = isProtoMessage(point) ? kind === 'asInt' : has(point, AS_INT);
  if (isDouble && isInt) throw malformed(`${path}: a data point sets both asDouble and asInt`);
  if (isDouble) return optDouble(point, AS_DOUBLE, path) ?? 0;
  if (isInt) return Number(int64(point, AS_INT, path));
  throw malformed(`${path}: a number data point needs asDouble or asInt`);
}

function quantile(point: OtlpNode, path: string, q: number): number | null {
  const values = list(point, QUANTILE_VALUES, path);
  for (let i = 0; i < values.length; i++) {
    const entry = element(values, i, path, QUANTILE_VALUES);
    const entryPath = `${path}.quantileValues[${i}]`;
    if (double(entry, QUANTILE, entryPath) === q) return double(entry, VALUE, entryPath);
  }
  return null;
}

function decodeMetric(metric: OtlpNode, scope: OtlpScope, path: string, out: OtlpMetricPoint[]): void {
  const name = str(metric, NAME, path);
  const unit = str(metric, UNIT, path);
  const description = str(metric, DESCRIPTION, path);
  const data = dataOf(metric, path);
  if (data === undefined) return; // a metric without data has no points
  const [dataField, kind] = data;
  const dataPath = `${path}.${dataField.camel}`;
  const points = list(message(metric, dataField, path) as OtlpNode, DATA_POINTS, dataPath);
  for (let i = 0; i < points.length; i++) {
    const point = element(points, i, dataPath, DATA_POINTS);
    const pPath = `${dataPath}.dataPoints[${i}]`;
    if ((uint32(point, FLAGS, pPath) & NO_RECORDED_VALUE) !== 0) continue;
    const scalar = kind === 'gauge' || kind === 'sum';
    const histogram = kind === 'histogram' || kind === 'exponential_histogram';
    out.push({
      name,
      unit,
      description,
      kind,
      timeUnixNano: timestamp(point, TIME, pPath),
      startTimeUnixNano: timestamp(point, START, pPath),
      value: scalar ? numberValue(point, pPath) : null,
      count: scalar ? null : Number(uint64(point, COUNT, pPath)),
      sum: scalar ? null : histogram ? optDouble(point, SUM, pPath) : double(point, SUM, pPath),
      min: histogram ? optDouble(point, MIN, pPath) : kind === 'summary' ? quantile(point, pPath, 0) : null,
      max: histogram ? optDouble(point, MAX, pPath) : kind === 'summary' ? quantile(point, pPath, 1) : null,
      attributes: attributes(point, pPath),
      scope,
    });
  }
}

/** Decodes an OTLP/HTTP metrics request body (already decompressed) to data points grouped by resource. */
export function decodeMetrics(body: Uint8Array, contentType: OtlpContentType): ResourceGroup<OtlpMetricPoint>[] {
  return readGroups(parseRequest(body, contentType, 'metrics'), LEVELS, decodeMetric);
}
