// Time until queryable (issue 16, item 5): while loadgen.mjs loads a server that also materializes (`orrery all`),
// one 10-record OTLP/JSON logs request a second, each with its own message; for each, the time from its 200 to its
// 10 records in log_entries (polled every 250 ms through Flight SQL, one statement for every probe still waiting).
// Prints one JSON line: probes sent, seen, never seen (within WAIT s after the last), p50, p90 and max seconds.
//   node bench/ingestion/queryable.mjs --http <port> --flight <port> --seconds 20 [--wait 180] [--root <tree>]
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    http: { type: 'string' },
    flight: { type: 'string' },
    seconds: { type: 'string', default: '20' },
    wait: { type: 'string', default: '180' },
    key: { type: 'string', default: 'admin-key-0123' },
    root: { type: 'string', default: new URL('../..', import.meta.url).pathname },
  },
});
const { FlightSqlClient } = await import(`${args.root}/dist/src/client/index.js`);
const client = new FlightSqlClient({ address: `127.0.0.1:${args.flight}`, apiKey: args.key });
const run = Date.now().toString(36);
const acknowledged = new Map(); // message -> when its 200 came
const delays = [];
let sent = 0;

async function probe(i) {
  const msg = `probe-${run}-${i}`;
  const now = BigInt(Date.now()) * 1_000_000n;
  const logRecords = Array.from({ length: 10 }, (_, k) => ({
    timeUnixNano: String(now + BigInt(k)),
    severityNumber: 9,
    body: { stringValue: msg },
  }));
  const body = JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'queryable-probe' } }] },
        scopeLogs: [{ scope: { name: 'probe' }, logRecords }],
      },
    ],
  });
  const response = await fetch(`http://127.0.0.1:${args.http}/v1/logs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${args.key}` },
    body,
  });
  await response.arrayBuffer();
  if (response.status === 200) acknowledged.set(msg, performance.now());
}

const end = Date.now() + Number(args.seconds) * 1000;
const sender = (async () => {
  const posts = [];
  for (let i = 0; Date.now() < end; i++, sent++) {
    posts.push(probe(i));
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  await Promise.all(posts);
})();
const deadline = end + Number(args.wait) * 1000;
while (Date.now() < deadline && (Date.now() < end || acknowledged.size > 0)) {
  await new Promise((resolve) => setTimeout(resolve, 250));
  if (acknowledged.size === 0) continue;
  const list = [...acknowledged.keys()].map((m) => `'${m}'`).join(', ');
  const table = await client.query(`SELECT msg, count(*) AS n FROM log_entries WHERE msg IN (${list}) GROUP BY msg`);
  for (const row of table.toArray())
    if (Number(row.n) === 10 && acknowledged.has(row.msg)) {
      delays.push(performance.now() - acknowledged.get(row.msg));
      acknowledged.delete(row.msg);
    }
}
await sender;
client.close();
delays.sort((a, b) => a - b);
const at = (q) =>
  delays.length ? +(delays[Math.min(delays.length - 1, Math.floor(delays.length * q))] / 1000).toFixed(2) : null;
console.log(
  JSON.stringify({
    probes: sent,
    seen: delays.length,
    never: acknowledged.size,
    p50_s: at(0.5),
    p90_s: at(0.9),
    max_s: at(1),
  }),
);
