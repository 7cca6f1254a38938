// bench/s3's S3 server: the test suite's versitygw (scripts/s3-server.mjs) behind its counting proxy, so
// the bench can say how many S3 requests each query made. Prints one JSON line (the AWS_* settings
// pointing at the proxy, the bucket, the counter's URL) and runs until SIGTERM or SIGINT.
// GET /__counts on the counter port answers {"GET": n, "PUT": n, ...} since the last POST /__reset.
import { createServer } from 'node:http';
import { countingProxy, startS3Server } from '../../scripts/s3-server.mjs';

const s3 = await startS3Server({ bucket: 'orrery-bench' });
const proxy = await countingProxy(s3.env.AWS_ENDPOINT_URL);
const counter = createServer((incoming, outgoing) => {
  if (incoming.method === 'POST' && incoming.url === '/__reset') proxy.reset();
  outgoing.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(proxy.counts()));
});
const counterPort = await new Promise((resolve) =>
  counter.listen(0, '127.0.0.1', () => resolve(counter.address().port)),
);
console.log(
  JSON.stringify({
    bucket: s3.bucket,
    env: { ...s3.env, AWS_ENDPOINT_URL: proxy.url },
    counts: `http://127.0.0.1:${counterPort}/__counts`,
    reset: `http://127.0.0.1:${counterPort}/__reset`,
  }),
);
const stop = async () => {
  counter.close();
  await proxy.close();
  await s3.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
