// Where the ingestion server's main-thread time goes per request, stage by stage, without HTTP or
// Postgres: the same request bodies as loadgen.mjs run through Orrery's compiled internals
// (<root>/dist/src/ingestion/...), cumulatively:
//   pb-decode   protobufjs decode of ExportLogsServiceRequest (exportRequestTypes.logs.decode)
//   records     + decodeLogs's walk to OtlpLogRecord objects (the whole decodeLogs)
//   lines       + logLine for each record (payload-lines.ts)
//   payload     + lines.join('\n') + Buffer.from (ingestion-service.ts storeBlock)
//   hash        + sha256 of the payload and the derived ids
//   store       + FileObjectStore.putIfAbsent into a temporary folder (mkdir, write, fsync, link, rm)
// and the path a logs protobuf body takes since issue 16 (stored as received, decoded at materialization):
//   scan        scanLogs, the validating scan that builds no objects, + the resources decoded alone
//   scan-store  + sha256 of the payload and the ids + FileObjectStore.put of a group object holding it (as a
//               request that goes alone through group commit; the old NDJSON path above keeps one file per payload)
//   mat-decode  what materialization then does per block: payloadLines (decodeLogs + logLine)
// and, for comparison, `lines-direct`: the same JSON lines built by one template string per record
// from the decoded records (checked byte-equal to logLine's output) instead of logLine's object +
// JSON.stringify, to show what the line stage could cost.
//   node bench/ingestion/stages.mjs [requests=300] [root=ORRERY_ROOT or the repo]
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildTemplates, makeBody } from './bodies.mjs';

const requests = Number(process.argv[2] ?? 300);
const root = process.argv[3] ?? process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const dist = (p) => import(join(root, 'dist/src', p));
const { decodeLogs, resourceSkeleton, scanLogs } = await dist('ingestion/otlp/index.js');
const { exportRequestTypes } = await dist('ingestion/otlp/otlp-proto.js');
const { logLine, levelOf } = await dist('ingestion/payload-lines.js');
const { derivedUuid, payloadLines } = await dist('ingestion/index.js');
const { FileObjectStore, payloadGroupKey, payloadKey } = await dist('lakehouse/index.js');

const batch = 1000;
const templates = buildTemplates(8, 4, batch);
const bodies = Array.from({ length: requests }, (_, n) => makeBody(templates, n, 'stages', batch).body);
const dir = mkdtempSync(join(tmpdir(), 'orrery-stages-'));
const store = new FileObjectStore(dir);
const now = BigInt(Date.now()) * 1_000_000n;

const q = JSON.stringify;
/** logLine's output, written as one template string (same key order and values). */
function directLine(r) {
  const time = r.timeUnixNano || r.observedTimeUnixNano || now;
  let props = q(r.attributes);
  if (r.severityText)
    props =
      props === '{}'
        ? `{"otel.severity_text":${q(r.severityText)}}`
        : `${props.slice(0, -1)},"otel.severity_text":${q(r.severityText)}}`;
  return `{"time":${time},"target":${q(r.scope.name)},"level":${levelOf(r.severityNumber)},"msg":${q(r.body)},"properties":${props},"trace_id":${r.traceId === null ? 'null' : q(r.traceId)},"span_id":${r.spanId === null ? 'null' : q(r.spanId)}}`;
}

const stages = {
  'pb-decode': async (body) => {
    exportRequestTypes.logs.decode(body);
  },
  records: async (body) => {
    decodeLogs(body, 'protobuf');
  },
  lines: async (body) => {
    for (const g of decodeLogs(body, 'protobuf')) g.records.map((r) => logLine(r, now));
  },
  'lines-direct': async (body) => {
    for (const g of decodeLogs(body, 'protobuf')) g.records.map(directLine);
  },
  payload: async (body) => {
    for (const g of decodeLogs(body, 'protobuf')) Buffer.from(g.records.map((r) => logLine(r, now)).join('\n') + '\n');
  },
  hash: async (body) => {
    for (const g of decodeLogs(body, 'protobuf')) {
      const payload = Buffer.from(g.records.map((r) => logLine(r, now)).join('\n') + '\n');
      const p = derivedUuid(`process\u0000public\u0000x`);
      derivedUuid(`block\u0000${p}\u0000${createHash('sha256').update(payload).digest('hex')}`);
    }
  },
  store: async (body, n) => {
    for (const g of decodeLogs(body, 'protobuf')) {
      const payload = Buffer.from(g.records.map((r) => logLine(r, now)).join('\n') + '\n');
      const p = derivedUuid(`process\u0000public\u0000x`);
      const b = derivedUuid(`block\u0000${p}\u0000${createHash('sha256').update(payload).digest('hex')}`);
      await store.putIfAbsent(payloadKey(p, `s${n % 8}`, b), payload);
    }
  },
  scan: async (body) => {
    const scanned = scanLogs(body);
    if (scanned === null) throw new Error('the scan refused a loadgen body');
    decodeLogs(resourceSkeleton(body, scanned), 'protobuf');
  },
  'scan-store': async (body) => {
    const scanned = scanLogs(body);
    decodeLogs(resourceSkeleton(body, scanned), 'protobuf');
    const p = derivedUuid(`process\u0000public\u0000x`);
    derivedUuid(`block\u0000${p}\u0000otlp\u0000${createHash('sha256').update(body).digest('hex')}`);
    await store.put(payloadGroupKey(now), body);
  },
  'mat-decode': async (body) => {
    payloadLines(body);
  },
};

// Check the direct line builder against logLine on every record of one body.
for (const g of decodeLogs(bodies[0], 'protobuf')) {
  for (const r of g.records) {
    if (directLine(r) !== logLine(r, now))
      throw new Error(`lines-direct differs:\n${directLine(r)}\n${logLine(r, now)}`);
  }
}

console.log(
  `ingestion stages: ${requests} requests of ${batch} log records (${(bodies[0].length / 1024).toFixed(0)} KiB), main thread, cumulative`,
);
console.log(
  `${'stage'.padEnd(14)} ${'ms/request'.padStart(10)} ${'records/s'.padStart(11)} ${'cpu ms/req'.padStart(10)}`,
);
const figures = {};
for (const [name, fn] of Object.entries(stages)) {
  for (let i = 0; i < Math.min(50, requests); i++) await fn(bodies[i], i); // warm-up (JIT)
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < requests; i++) await fn(bodies[i], i);
  const ms = (performance.now() - t0) / requests;
  const cpu = process.cpuUsage(cpu0);
  const cpuMs = (cpu.user + cpu.system) / 1000 / requests;
  figures[name] = {
    ms_per_request: +ms.toFixed(3),
    records_per_s: Math.round((batch * 1000) / ms),
    cpu_ms_per_request: +cpuMs.toFixed(3),
  };
  console.log(
    `${name.padEnd(14)} ${ms.toFixed(2).padStart(10)} ${Math.round((batch * 1000) / ms)
      .toLocaleString('en-US')
      .padStart(11)} ${cpuMs.toFixed(2).padStart(10)}`,
  );
}
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ bench: 'ingestion-stages', requests, batch, stages: figures }));
