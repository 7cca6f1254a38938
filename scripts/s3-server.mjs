// A real S3-compatible server for the tests and bench/s3: Versity's S3 gateway (versitygw, Apache-2.0)
// over a temporary folder. Built once from the Go module proxy (`go install`) into a cache folder
// outside the clone, then reused by every checkout. Usable as a module (ensureS3Server, startS3Server)
// or as a command: `node scripts/s3-server.mjs` builds it if needed and prints the binary's path.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, request } from 'node:http';
import { createServer, connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';

export const s3ServerModule = 'github.com/versity/versitygw/cmd/versitygw';
export const s3ServerVersion = 'v1.8.0';

/** The folder the server's binary is built into. */
export function s3ServerFolder(env = process.env) {
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'orrery', 's3-server', `versitygw-${s3ServerVersion}`);
}

/** The server's binary, built with `go install` when it is not there yet. */
export function ensureS3Server() {
  const folder = s3ServerFolder();
  const binary = join(folder, 'versitygw');
  if (existsSync(binary)) return binary;
  const go = ['go', '/usr/local/go/bin/go'].find((candidate) => {
    try {
      execFileSync(candidate, ['version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
  if (!go) throw new Error(`the S3 test server is built with Go (${s3ServerModule}@${s3ServerVersion}): install Go`);
  console.log(`orrery: building the S3 test server ${s3ServerModule}@${s3ServerVersion} into ${folder} (once)`);
  mkdirSync(folder, { recursive: true });
  execFileSync(go, ['install', `${s3ServerModule}@${s3ServerVersion}`], {
    env: { ...process.env, GOBIN: folder, GOFLAGS: '-mod=mod' },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (!existsSync(binary)) throw new Error(`go install left no ${binary}`);
  return binary;
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

const answers = (port) =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * Starts the server on a free loopback port over a fresh folder holding one bucket. Its
 * settings come back as the AWS_* variables Orrery reads; `close` stops it and removes the folder.
 */
export async function startS3Server({ bucket = 'orrery-test' } = {}) {
  const binary = ensureS3Server();
  const root = mkdtempSync(join(tmpdir(), 'orrery-s3-'));
  mkdirSync(join(root, bucket));
  const accessKeyId = 'orrery-test-key';
  const secretAccessKey = `orrery-test-secret-${process.pid}-${Date.now()}`;
  const port = await freePort();
  const child = spawn(
    binary,
    ['--access', accessKeyId, '--secret', secretAccessKey, '--port', `127.0.0.1:${port}`, '--quiet', 'posix', root],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (let waited = 0; !(await answers(port)); waited += 50) {
    if (child.exitCode !== null || waited > 20_000) {
      child.kill('SIGKILL');
      rmSync(root, { recursive: true, force: true });
      throw new Error(`the S3 test server did not start: ${stderr.trim()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  let closing;
  return {
    bucket,
    root,
    env: {
      AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
      AWS_REGION: 'us-east-1',
    },
    pid: child.pid,
    /** Lets this process exit while the server runs (then stop it from an 'exit' handler). */
    unref: () => {
      child.unref();
      child.stderr.unref();
    },
    close: () =>
      (closing ??= (async () => {
        if (child.exitCode === null) child.kill('SIGTERM');
        await exited;
        rmSync(root, { recursive: true, force: true });
      })()),
  };
}

/**
 * A proxy on a free loopback port in front of an S3 endpoint, recording each request that passes (bench/s3
 * and the tests use it to say how many requests a statement made). `requests()` lists them since the last
 * `reset()` as `{ kind, path }`, kind being the method, or LIST for a listing; `counts()` tallies them by kind.
 * The Host header is passed on unchanged: the client signed it (SigV4), and the server checks it.
 */
export async function countingProxy(endpoint) {
  const upstream = new URL(endpoint);
  let seen = [];
  const server = createHttpServer((incoming, outgoing) => {
    const url = new URL(incoming.url ?? '/', 'http://proxy');
    const kind = incoming.method === 'GET' && url.searchParams.get('list-type') === '2' ? 'LIST' : incoming.method;
    seen.push({ kind, path: decodeURIComponent(url.pathname) });
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
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  // A test whose set-up failed before closing it still exits.
  server.unref();
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests: () => [...seen],
    counts: () => {
      const tally = {};
      for (const { kind } of seen) tally[kind] = (tally[kind] ?? 0) + 1;
      return tally;
    },
    reset: () => {
      seen = [];
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(ensureS3Server());
