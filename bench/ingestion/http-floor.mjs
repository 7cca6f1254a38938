// What Node's HTTP server alone costs per OTLP request (issue 16): a plain node:http server in this process that
// reads each body whole (as decodeBody does: its chunks collected, then joined) and answers 200 with an empty
// protobuf body, driven by loadgen.mjs (a child process) with CONNECTIONS senders. Prints records/s, the client's p50
// and, over the requests after the warm-up, this process's CPU and its main thread's (/proc schedstat) per
// 1,000-record request: the floor under `orrery serve`'s main thread on the same machine and load.
//
//   node bench/ingestion/http-floor.mjs [connections=4] [duration s=8]
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';

const [connections = '4', duration = '8'] = process.argv.slice(2);
const warmupMs = 2000;
const mainThreadNs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'latin1').split(' ')[0]);
const empty = new Uint8Array(0);
let start = null;
let requests = 0;
const server = createServer(async (request, response) => {
  const parts = [];
  for await (const chunk of request) parts.push(chunk);
  Buffer.concat(parts);
  if (start) requests++;
  response.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 });
  response.end(empty);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const warm = setTimeout(() => (start = { cpu: process.cpuUsage(), main: mainThreadNs() }), warmupMs);
// Asynchronously: the server runs on this process's event loop meanwhile.
const child = new Promise((resolve, reject) =>
  execFile(
    process.execPath,
    [
      new URL('loadgen.mjs', import.meta.url).pathname,
      ...['--port', String(server.address().port), '--connections', connections, '--duration', duration],
      ...['--warmup', String(warmupMs / 1000)],
    ],
    (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout.trim().split('\n').pop()))),
  ),
);
const run = await child;
const cpu = process.cpuUsage(start.cpu);
const main = (mainThreadNs() - start.main) / 1e6;
clearTimeout(warm);
server.close();
const load = readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ');
console.log(
  `http-floor: ${connections} senders, ${run.measured_records_per_s.toLocaleString('en')} records/s, client p50 ` +
    `${run.latency_ms.p50} ms; per 1,000-record request: main thread ${(main / requests).toFixed(3)} ms, process ` +
    `${((cpu.user + cpu.system) / 1000 / requests).toFixed(3)} ms (${requests} requests; load ${load})`,
);
