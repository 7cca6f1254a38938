// OTLP/HTTP log load generator: N concurrent keep-alive connections POST protobuf (or, --format json, OTLP/JSON)
// ExportLogsServiceRequest bodies of --batch records each to /v1/logs, for --duration seconds or
// until --records records are sent, whichever comes first. Bounded in count and time; loopback only.
//
//   node bench/ingestion/loadgen.mjs --port 4318 --connections 8 --duration 20
//   node bench/ingestion/loadgen.mjs --port 4318 --connections 8 --records 2000000 --duration 900
//
// Bodies: templates are serialized once by the OpenTelemetry SDK's own ProtobufLogsSerializer
// (@opentelemetry/otlp-transformer), one per (service, variant): --services resources, each
// request carries one resource (one block on the server). Every request is then made unique by
// patching fixed-size fields in a copy of its template, so that no two requests are equal (the
// server deduplicates identical blocks): a 20-character request token in the first record's body
// and the 1 000 time_unix_nano fixed64 fields (now + i µs). The generator's own cost per request
// is one buffer copy plus 1 000 8-byte writes.
//
// Prints progress on stderr and, last, one JSON line on stdout: requests and records sent and
// acknowledged, errors, elapsed, records/s (overall and after --warmup seconds), latency
// percentiles, records per level (micromegas levels 1..6) and per event-time minute, the wall-clock
// interval of the run (insert times lie inside it) and the generator's CPU time.
import { Agent, request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { buildTemplates, makeBody as makeBodyOf } from './bodies.mjs';

const args = parseArgs(process.argv.slice(2), {
  host: '127.0.0.1',
  port: '4318',
  key: 'admin-key-0123',
  path: '/v1/logs',
  connections: '8',
  duration: '20',
  records: '0', // 0: no limit, duration only
  batch: '1000',
  services: '8',
  variants: '4',
  warmup: '2',
  gzip: '0', // 1: each body gzipped (level 1, before its latency is timed), sent with Content-Encoding: gzip
  format: 'protobuf', // or json: OTLP/JSON bodies (application/json)
  'run-id': '',
});
const host = args.host;
const port = Number(args.port);
const connections = Number(args.connections);
const durationMs = Number(args.duration) * 1000;
const maxRecords = Number(args.records);
const batch = Number(args.batch);
const services = Number(args.services);
const variants = Number(args.variants);
const warmupMs = Number(args.warmup) * 1000;
const runId = (args['run-id'] || randomBytes(3).toString('hex')).slice(0, 6).padEnd(6, '0');
if (host !== '127.0.0.1' && host !== 'localhost' && host !== '::1') throw new Error('loadgen sends to loopback only');

if (args.format !== 'protobuf' && args.format !== 'json') throw new Error('--format is protobuf or json');
const templates = buildTemplates(services, variants, batch, args.format);
const bodyBytes = templates.reduce((sum, t) => sum + t.bytes.length, 0) / templates.length;
process.stderr.write(
  `loadgen: ${templates.length} ${args.format} templates of ${batch} records, ${(bodyBytes / 1024).toFixed(0)} KiB each; ` +
    `${connections} connections to http://${host}:${port}${args.path}, run ${runId}\n`,
);

// Event-time minute of every record sent, for checking log_stats.
const perMinute = new Map();
const perLevel = {};
let minTime = null;
let maxTime = null;

const makeBody = (n) => makeBodyOf(templates, n, runId, batch);

function account({ template, base }) {
  const last = base + BigInt(batch - 1) * 1000n;
  if (minTime === null || base < minTime) minTime = base;
  if (maxTime === null || last > maxTime) maxTime = last;
  for (const [level, count] of Object.entries(template.levels)) perLevel[level] = (perLevel[level] ?? 0) + count;
  const firstMinute = base / 60_000_000_000n;
  const lastMinute = last / 60_000_000_000n;
  if (firstMinute === lastMinute) {
    perMinute.set(firstMinute, (perMinute.get(firstMinute) ?? 0) + batch);
  } else {
    for (let i = 0; i < batch; i++) {
      const m = (base + BigInt(i) * 1000n) / 60_000_000_000n;
      perMinute.set(m, (perMinute.get(m) ?? 0) + 1);
    }
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
const gzip = args.gzip === '1';
function post(body) {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host,
        port,
        path: args.path,
        method: 'POST',
        agent,
        headers: {
          'content-type': args.format === 'json' ? 'application/json' : 'application/x-protobuf',
          ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          'content-length': body.length,
          authorization: `Bearer ${args.key}`,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let next = 0;
let okRequests = 0;
let okRecords = 0;
let failed = 0;
const failures = new Map();
const latencies = []; // ms, requests completed after the warm-up
let measuredRecords = 0;
const wallStart = Date.now();
const start = performance.now();
const cpuStart = process.cpuUsage();
let measureStart = null;
let lastDone = start;
let stopping = false;

async function worker() {
  for (;;) {
    const elapsed = performance.now() - start;
    if (stopping || elapsed >= durationMs) return;
    if (maxRecords > 0 && next * batch >= maxRecords) return;
    const n = next++;
    const made = makeBody(n);
    const sent = gzip ? gzipSync(made.body, { level: 1 }) : made.body;
    const t0 = performance.now();
    let result;
    try {
      result = await post(sent);
    } catch (error) {
      failed++;
      failures.set(String(error.code ?? error.message), (failures.get(String(error.code ?? error.message)) ?? 0) + 1);
      if (failed > 20 && failed > okRequests) stopping = true; // the server is gone: stop early
      continue;
    }
    const t1 = performance.now();
    lastDone = t1;
    if (result.status !== 200) {
      failed++;
      const why = `HTTP ${result.status}: ${result.body.toString('utf8').slice(0, 200)}`;
      failures.set(why, (failures.get(why) ?? 0) + 1);
      continue;
    }
    okRequests++;
    okRecords += batch;
    account(made);
    if (t0 - start >= warmupMs) {
      measureStart ??= t0;
      latencies.push(t1 - t0);
      measuredRecords += batch;
    }
  }
}

const progress = setInterval(() => {
  const s = (performance.now() - start) / 1000;
  process.stderr.write(
    `loadgen: ${s.toFixed(0)} s  ${okRecords.toLocaleString('en-US')} records  ${(okRecords / s / 1000).toFixed(1)} k/s  ${failed} failed\n`,
  );
}, 5000);
await Promise.all(Array.from({ length: connections }, worker));
clearInterval(progress);
const end = performance.now();
const wallEnd = Date.now();
agent.destroy();
const cpu = process.cpuUsage(cpuStart);

latencies.sort((a, b) => a - b);
const pct = (p) =>
  latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] : null;
const elapsedS = (end - start) / 1000;
const measuredS = measureStart === null ? null : (lastDone - measureStart) / 1000;
const result = {
  run_id: runId,
  connections,
  batch,
  services,
  templates: templates.length,
  body_bytes_avg: Math.round(bodyBytes),
  requests_ok: okRequests,
  requests_failed: failed,
  failures: Object.fromEntries(failures),
  records_sent: okRecords,
  elapsed_s: +elapsedS.toFixed(3),
  records_per_s: Math.round(okRecords / elapsedS),
  measured_s: measuredS === null ? null : +measuredS.toFixed(3),
  measured_records: measuredRecords,
  measured_records_per_s: measuredS ? Math.round(measuredRecords / measuredS) : null,
  latency_ms: {
    p50: round(pct(50)),
    p90: round(pct(90)),
    p99: round(pct(99)),
    max: round(latencies[latencies.length - 1] ?? null),
    mean: round(latencies.length ? latencies.reduce((a, b) => a + b, 0) / latencies.length : null),
  },
  wall_start_ms: wallStart,
  wall_end_ms: wallEnd,
  event_time_min_ns: minTime === null ? null : String(minTime),
  event_time_max_ns: maxTime === null ? null : String(maxTime),
  per_level: perLevel,
  per_minute: Object.fromEntries(
    [...perMinute].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([m, c]) => [String(m * 60n), c]),
  ),
  loadgen_cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(2),
};
process.stdout.write(JSON.stringify(result) + '\n');

function round(x) {
  return x === null ? null : +x.toFixed(2);
}

function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const [name, inline] = a.slice(2).split('=', 2);
    if (!(name in defaults)) throw new Error(`unknown option --${name}; known: ${Object.keys(defaults).join(', ')}`);
    out[name] = inline ?? argv[++i];
  }
  return out;
}
