// OTLP/HTTP log request bodies for the benchmarks: templates serialized once by the OpenTelemetry
// SDK's own ProtobufLogsSerializer (or JsonLogsSerializer, OTLP/JSON), then made unique per request by
// patching fixed-size fields in a copy (see loadgen.mjs). Shared by loadgen.mjs and stages.mjs.
import { randomBytes } from 'node:crypto';
import { JsonLogsSerializer, ProtobufLogsSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';

// micromegas level of each OTLP severity used (see src/ingestion/otlp/logs-lines.ts levelOf).
export const SEVERITIES = [
  { number: 9, text: 'INFO', level: 4, share: 70 },
  { number: 5, text: 'DEBUG', level: 5, share: 15 },
  { number: 13, text: 'WARN', level: 3, share: 10 },
  { number: 17, text: 'ERROR', level: 2, share: 4 },
  { number: 21, text: 'FATAL', level: 1, share: 1 },
];
const severityOf = (i) => {
  let slot = (i * 37) % 100; // interleaved, exact shares per 100 records
  for (const s of SEVERITIES) {
    if (slot < s.share) return s;
    slot -= s.share;
  }
  return SEVERITIES[0];
};

const TOKEN_LENGTH = 20;
const PLACEHOLDER = 'R'.repeat(TOKEN_LENGTH);
const TEMPLATE_SECONDS = 1_111_111_111; // template times: 1111111111 s + i ns, found again by value
const TEMPLATE_T0 = BigInt(TEMPLATE_SECONDS) * 1_000_000_000n;
const ROUTES = ['/api/v1/items', '/api/v1/orders', '/api/v1/users', '/health', '/api/v2/search', '/api/v1/cart'];
const scopes = [0, 1, 2, 3].map((m) => ({ name: `bench.module${m}`, version: '1.0.0' }));

/**
 * One template: its bytes, the offsets of the token and of each record's time, and its level counts.
 * `format` 'protobuf' (application/x-protobuf) or 'json' (application/json, OTLP/JSON).
 */
export function buildTemplate(service, variant, batch, format = 'protobuf') {
  const resource = resourceFromAttributes({
    'service.name': `bench-svc-${service}`,
    'service.instance.id': `bench-svc-${service}-instance`,
    'host.name': `bench-host-${service % 4}`,
    'process.owner': 'bench',
    'os.type': 'linux',
  });
  const records = [];
  const levels = {};
  for (let i = 0; i < batch; i++) {
    const severity = severityOf(i + variant);
    levels[severity.level] = (levels[severity.level] ?? 0) + 1;
    const route = ROUTES[(i + variant * 3) % ROUTES.length];
    const status = severity.level <= 2 ? 500 : severity.level === 3 ? 429 : 200;
    const body =
      i === 0
        ? `bench request ${PLACEHOLDER} started`
        : `${route}/${(i * 7919 + variant * 13 + service) % 10000} answered ${status} in ${(i * 31 + variant) % 500} ms (${['cache hit', 'cache miss', 'db read', 'db write'][i % 4]})`;
    const traced = i % 4 === 0;
    records.push({
      hrTime: [TEMPLATE_SECONDS, i],
      hrTimeObserved: [TEMPLATE_SECONDS + 1, i],
      severityNumber: severity.number,
      severityText: severity.text,
      body,
      attributes: { 'http.route': route, 'http.status_code': status, 'user.id': `u${(i * 13 + variant) % 5000}` },
      droppedAttributesCount: 0,
      resource,
      instrumentationScope: scopes[i % scopes.length],
      spanContext: traced
        ? { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: 1 }
        : undefined,
    });
  }
  const json = format === 'json';
  const serializer = json ? JsonLogsSerializer : ProtobufLogsSerializer;
  const bytes = Buffer.from(serializer.serializeRequest(records));
  const tokenOffset = bytes.indexOf(PLACEHOLDER);
  if (tokenOffset < 0 || bytes.indexOf(PLACEHOLDER, tokenOffset + 1) >= 0)
    throw new Error('template: token placeholder not found once');
  const timeOffsets = new Int32Array(batch).fill(-1);
  const found = (value, offset) => {
    const i = value - TEMPLATE_T0;
    if (i >= 0n && i < BigInt(batch) && timeOffsets[Number(i)] === -1) timeOffsets[Number(i)] = offset;
  };
  if (json) {
    // "timeUnixNano":"<19 digits>": a decimal string as long as any time of this century's.
    const key = Buffer.from('"timeUnixNano":"');
    for (let p = bytes.indexOf(key); p >= 0; p = bytes.indexOf(key, p + 1))
      found(BigInt(bytes.toString('latin1', p + key.length, p + key.length + 19)), p + key.length);
  } else {
    // time_unix_nano is LogRecord field 1, fixed64: tag byte 0x09 then 8 little-endian bytes.
    for (let p = 0; p + 9 <= bytes.length; p++) if (bytes[p] === 0x09) found(bytes.readBigUInt64LE(p + 1), p + 1);
  }
  if (timeOffsets.some((o) => o < 0)) throw new Error('template: a record time was not found');
  return { bytes, tokenOffset, timeOffsets, levels, json };
}

/** Templates for `services` resources x `variants` record mixes, `batch` records each. */
export function buildTemplates(services, variants, batch, format = 'protobuf') {
  const out = [];
  for (let s = 0; s < services; s++) for (let v = 0; v < variants; v++) out.push(buildTemplate(s, v, batch, format));
  return out;
}

/** The body of request number n: its template's bytes with a unique token and fresh times. */
export function makeBody(templates, n, runId, batch) {
  const t = templates[n % templates.length];
  const body = Buffer.from(t.bytes);
  body.write(`${runId}${String(n).padStart(TOKEN_LENGTH - 6, '0')}`, t.tokenOffset, 'latin1');
  const base = BigInt(Date.now()) * 1_000_000n + BigInt(n % 1000) * 1000n;
  for (let i = 0; i < batch; i++)
    if (t.json) body.write(String(base + BigInt(i) * 1000n), t.timeOffsets[i], 'latin1');
    else body.writeBigUInt64LE(base + BigInt(i) * 1000n, t.timeOffsets[i]);
  return { body, template: t, base };
}
