// Which side a large DoGet waits on (issue 10 item 3): preloaded into `orrery serve` (`node --import <this file>
// dist/src/orrery.cjs serve`; run.sh does it with WAITS=1), it wraps FlightSqlServer's `stream` (the prototype, so
// nothing in src/ changes) and splits each DoGet's time on the main thread into
//   export   awaiting the next batch from the query (DuckDB and the native exporter: the server's side)
//   client   awaiting 'drain' after a write the call refused (grpc-js holds 16 messages, ~32 MiB, for the
//            stream: the client is not reading as fast as the server makes batches, by its own decoding or its
//            HTTP/2 receive window)
//   tail     from the handler's end (its last message handed to grpc-js) to the HTTP/2 stream's close: the
//            client reading what is still buffered
// and appends one JSON line per DoGet to $WAITS_OUT: { ms, export_ms, client_ms, tail_ms, batches, refused,
// user_agent }. Bench only: the wrapping costs a timer read per batch.
//   node bench/flight-throughput/doget-waits.mjs <WAITS_OUT file>   prints the medians per client (user agent)
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

if (process.argv[1] === fileURLToPath(import.meta.url)) summarize(process.argv[2]);
else await wrap();

function summarize(file) {
  const byClient = new Map();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    if (record.batches < 2) continue; // small results (the bench's own set-up statements)
    const client = record.user_agent.split(' ')[0] || '(none)';
    if (!byClient.has(client)) byClient.set(client, []);
    byClient.get(client).push(record);
  }
  const median = (values) => values.sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];
  console.log('DoGet waits on the server, each large result in turn (ms): total, export, client, tail');
  for (const [client, records] of byClient) {
    console.log(`  ${client}: ${records.map((r) => `${r.ms}/${r.export_ms}/${r.client_ms}/${r.tail_ms}`).join('  ')}`);
  }
  console.log('DoGet waits on the server, median per client over its large results (ms):');
  console.log(
    `${'client'.padEnd(36)} ${'n'.padStart(3)} ${'total'.padStart(8)} ${'export'.padStart(8)} ${'client'.padStart(8)} ${'tail'.padStart(8)} ${'refused'.padStart(8)}`,
  );
  for (const [client, records] of byClient) {
    const m = (key) => median(records.map((r) => r[key]));
    console.log(
      `${client.slice(0, 36).padEnd(36)} ${String(records.length).padStart(3)} ${m('ms').toFixed(0).padStart(8)} ` +
        `${m('export_ms').toFixed(0).padStart(8)} ${m('client_ms').toFixed(0).padStart(8)} ${m('tail_ms').toFixed(0).padStart(8)} ` +
        `${String(m('refused')).padStart(8)}`,
    );
  }
}

async function wrap() {
  const root = process.env.WAITS_ROOT ?? join(import.meta.dirname, '..', '..');
  const { FlightSqlServer } = await import(
    pathToFileURL(join(root, 'dist', 'src', 'flight', 'flight-sql-server.js')).href
  );
  const out = process.env.WAITS_OUT;
  if (!out) throw new Error('doget-waits: set WAITS_OUT to the file to append to');

  const now = () => performance.now();
  const original = FlightSqlServer.prototype.stream;
  if (typeof original !== 'function') throw new Error('doget-waits: FlightSqlServer has no stream method to wrap');

  FlightSqlServer.prototype.stream = async function (call, result) {
    const record = { ms: 0, export_ms: 0, client_ms: 0, tail_ms: 0, batches: 0, refused: 0 };
    record.user_agent = String(call.metadata?.get('user-agent')?.[0] ?? '');
    const start = now();
    const batches = result.batches;
    const wrapped = {
      [Symbol.asyncIterator]() {
        const iterator = batches[Symbol.asyncIterator]();
        return {
          async next() {
            const t = now();
            try {
              return await iterator.next();
            } finally {
              record.export_ms += now() - t;
              record.batches++;
            }
          },
          return: iterator.return ? (value) => iterator.return(value) : undefined,
        };
      },
    };
    // The client's HTTP/2 receive window as the server sees it: its initial stream window (SETTINGS), and the
    // connection window left after each message handed over (each write is one batch, ~2 MiB).
    const session = call.call?.stream?.session;
    const windows = [];
    record.initial_window = session?.remoteSettings?.initialWindowSize;
    record.max_frame = session?.remoteSettings?.maxFrameSize;
    const write = call.write;
    call.write = function (...args) {
      const accepted = write.apply(this, args);
      if (session?.state) windows.push(session.state.remoteWindowSize);
      if (!accepted) {
        record.refused++;
        const t = now();
        call.once('drain', () => (record.client_ms += now() - t));
      }
      return accepted;
    };
    // Recorded at the stream's close, without holding the handler up meanwhile.
    let ended;
    const stream = call.call?.stream ?? call;
    stream.once('close', () => {
      const closed = now();
      record.tail_ms = closed - (ended ?? closed);
      record.ms = closed - start;
      record.batches--; // the iterator's last answer (done) is no batch
      record.initial_window_end = session?.remoteSettings?.initialWindowSize;
      record.window_min = windows.length ? Math.min(...windows) : undefined;
      record.window_median = windows.length ? windows.sort((a, b) => a - b)[windows.length >> 1] : undefined;
      for (const key of ['ms', 'export_ms', 'client_ms', 'tail_ms']) record[key] = Math.round(record[key] * 10) / 10;
      appendFileSync(out, JSON.stringify(record) + '\n');
    });
    try {
      await original.call(this, call, { ...result, batches: wrapped });
    } finally {
      ended = now();
    }
  };
}
