// Which RPCs each client sends (issue 10, what ADBC and JDBC do per statement): preloaded into `orrery serve`
// (NODE_OPTIONS="--import <this file>", which run.sh's server inherits), it appends one line per HTTP/2 stream
// to $RPC_CLIENTS_OUT.<pid>.tsv: the client's user-agent, the RPC's path, and its request headers as JSON (the
// authorization header's value left out). Count them per client:
//
//   NODE_OPTIONS="--import $PWD/bench/latency/rpc-clients.mjs" RPC_CLIENTS_OUT=/tmp/rpcs ONLY=select1 bash bench/latency/run.sh
//   cut -f1,2 /tmp/rpcs.*.tsv | sort | uniq -c | sort -nr
import { appendFileSync } from 'node:fs';
import http2 from 'node:http2';

const out = `${process.env.RPC_CLIENTS_OUT ?? '/tmp/rpc-clients'}.${process.pid}.tsv`;
const createServer = http2.createServer;
http2.createServer = function (...args) {
  const server = createServer.apply(this, args);
  server.prependListener('stream', (_stream, headers) => {
    const shown = { ...headers, ...(headers.authorization ? { authorization: '(left out)' } : {}) };
    appendFileSync(out, `${headers['user-agent'] ?? '-'}\t${headers[':path']}\t${JSON.stringify(shown)}\n`);
  });
  return server;
};
