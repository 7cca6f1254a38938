// bench/s3's S3 server: the test suite's versitygw (scripts/s3-server.mjs) behind a counting proxy, so
// the bench can say how many S3 requests each query made. Prints one JSON line (the AWS_* settings
// pointing at the proxy, the bucket, the counter's URL) and runs until SIGTERM or SIGINT.
// GET /__counts on the counter port answers {"GET": n, "PUT": n, ...} since the last POST /__reset.
import { createServer, request } from 'node:http';
import { startS3Server } from '../../scripts/s3-server.mjs';

const s3 = await startS3Server({ bucket: 'orrery-bench' });
const upstream = new URL(s3.env.AWS_ENDPOINT_URL);
let counts = {};

// The Host header is passed on unchanged: the client signed it (SigV4), and the server checks it.
const proxy = createServer((incoming, outgoing) => {
  const kind = incoming.method === 'GET' && /[?&]list-type=2/.test(incoming.url ?? '') ? 'LIST' : incoming.method;
  counts[kind] = (counts[kind] ?? 0) + 1;
  const forward = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: incoming.method,
      path: incoming.url,
      headers: incoming.headers,
    },
    (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    },
  );
  forward.on('error', (error) => outgoing.destroy(error));
  incoming.pipe(forward);
});
const counter = createServer((incoming, outgoing) => {
  if (incoming.method === 'POST' && incoming.url === '/__reset') counts = {};
  outgoing.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(counts));
});
const listen = (server) =>
  new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
const [proxyPort, counterPort] = [await listen(proxy), await listen(counter)];
console.log(
  JSON.stringify({
    bucket: s3.bucket,
    env: { ...s3.env, AWS_ENDPOINT_URL: `http://127.0.0.1:${proxyPort}` },
    counts: `http://127.0.0.1:${counterPort}/__counts`,
    reset: `http://127.0.0.1:${counterPort}/__reset`,
  }),
);
const stop = async () => {
  proxy.close();
  counter.close();
  await s3.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
