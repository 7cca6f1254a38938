// The real S3-compatible server tests run against (scripts/s3-server.mjs): the one the test runner
// started for the s3:// pass (its settings in ORRERY_TEST_S3), or one this test process starts and
// stops at exit.
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';

export interface TestS3 {
  readonly bucket: string;
  /** AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION. */
  readonly env: Record<string, string>;
}

interface StartedS3 extends TestS3 {
  readonly pid: number;
  readonly root: string;
  unref(): void;
  close(): Promise<void>;
}

const script = new URL('../../../scripts/s3-server.mjs', import.meta.url).href;

/** Starts a server of its own (bench/s3 and tests that stop it themselves). */
export async function startS3Server(): Promise<StartedS3> {
  const module = (await import(script)) as { startS3Server: () => Promise<StartedS3> };
  return module.startS3Server();
}

let started: Promise<TestS3> | undefined;

/** The runner's server when it started one, else one for this process. */
export function testS3(): Promise<TestS3> {
  const shared = runnerS3();
  if (shared) return Promise.resolve(shared);
  return (started ??= startS3Server().then((server) => {
    server.unref();
    process.once('exit', () => {
      process.kill(server.pid, 'SIGKILL');
      rmSync(server.root, { recursive: true, force: true });
    });
    return server;
  }));
}

/** The server the runner started for the s3:// pass of the lakehouse suites (ORRERY_TEST_OBJECT_STORE=s3). */
export function runnerS3(): TestS3 | undefined {
  return process.env.ORRERY_TEST_S3 ? (JSON.parse(process.env.ORRERY_TEST_S3) as TestS3) : undefined;
}

/** MICROMEGAS_OBJECT_STORE_URI and the AWS_* settings of a fresh prefix in the server's bucket. */
export function s3LakeEnv(s3: TestS3): Record<string, string> {
  return { MICROMEGAS_OBJECT_STORE_URI: `s3://${s3.bucket}/lake-${randomUUID()}`, ...s3.env };
}

/** A request that passed the counting proxy: its method (LIST for a listing) and its path (`/bucket/key`). */
export interface ProxiedRequest {
  readonly kind: string;
  readonly path: string;
}

export interface CountingProxy {
  /** The proxy's endpoint, to give as AWS_ENDPOINT_URL. */
  readonly url: string;
  requests(): ProxiedRequest[];
  counts(): Record<string, number>;
  reset(): void;
  close(): Promise<void>;
}

/** scripts/s3-server.mjs's counting proxy in front of a server: what DuckDB and Orrery ask the store, request by request. */
export async function countingProxy(s3: TestS3): Promise<CountingProxy> {
  const module = (await import(script)) as { countingProxy: (endpoint: string) => Promise<CountingProxy> };
  return module.countingProxy(s3.env.AWS_ENDPOINT_URL);
}
