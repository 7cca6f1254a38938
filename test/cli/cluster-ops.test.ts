// Issue 15 item 4: what a process in a cluster needs. `orrery serve` as its own process, logging JSON:
// SIGTERM turns /ready false and refuses new OTLP requests (503, Retry-After) while the OTLP request and
// the Flight stream under way finish whole, then exits 0; its metrics carry the `instance` label.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { TestFlightClient, packAny } from '../support/flight-client.js';
import { scrapeMetrics } from '../support/metric-value.js';
import { logsRequest } from '../support/otlp.js';

const orrery = new URL('../../src/orrery.cjs', import.meta.url).pathname;
const admin = { name: 'admin', key: 'admin-key-0123' };

describe('a cluster process: drain on SIGTERM, JSON logs, instance label (issue 15 item 4)', () => {
  it('drains an OTLP request and a Flight stream under way, answers /ready 503 meanwhile, and exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'orrery-ops-'));
    chmodSync(dataDir, 0o755);
    const child = spawn(process.execPath, [orrery, 'serve'], {
      env: {
        ...process.env,
        ORRERY_DATA_DIR: dataDir,
        ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
        ORRERY_HTTP_ADDR: '127.0.0.1:0',
        ORRERY_LOG_FORMAT: 'json',
        ORRERY_INSTANCE: 'serve-a',
        ORRERY_SHUTDOWN_GRACE_SECONDS: '120',
        MICROMEGAS_API_KEYS: JSON.stringify([admin]),
        MICROMEGAS_ADMINS: JSON.stringify([admin.name]),
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    const client = new TestFlightClient('127.0.0.1:1');
    try {
      const port = async (what: RegExp): Promise<number> => {
        const deadline = Date.now() + 120_000;
        for (;;) {
          const found = what.exec(stdout);
          if (found) return Number(found[1]);
          if (Date.now() > deadline || child.exitCode !== null) assert.fail(`no start:\n${stdout}\n${stderr}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      };
      const httpPort = await port(/HTTP \(OTLP[^"]* listening on [\d.]+:(\d+)/);
      const flightPort = await port(/Flight SQL listening on [\d.]+:(\d+)/);
      const get = async (path: string): Promise<{ status: number; text: string }> => {
        const answer = await fetch(`http://127.0.0.1:${httpPort}${path}`);
        return { status: answer.status, text: await answer.text() };
      };
      assert.equal((await get('/ready')).status, 200);
      assert.match(
        await scrapeMetrics(httpPort, admin.key),
        /^orrery_process_cpu_user_seconds_total\{instance="serve-a"\} /m,
      );

      // An OTLP request whose body is still arriving when the signal comes.
      const body = Buffer.from(logsRequest({ 'service.name': 'draining' }, [{ time: 1n, severity: 9, body: 'kept' }]));
      let answered: (status: number) => void = () => {};
      const otlpStatus = new Promise<number>((done) => (answered = done));
      const otlp = request(
        {
          host: '127.0.0.1',
          port: httpPort,
          path: '/v1/logs',
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.key}` },
        },
        (response) => {
          response.resume();
          answered(response.statusCode ?? 0);
        },
      );
      otlp.write(body.subarray(0, 10));
      // A Flight stream running when the signal comes.
      const flight = new TestFlightClient(`127.0.0.1:${flightPort}`);
      flight.headers.authorization = `Bearer ${admin.key}`;
      const info = await flight.getFlightInfo(
        packAny('CommandStatementQuery', { query: 'SELECT sum(i) AS s FROM range(1500000000) t(i)' }),
      );
      const streamed = flight.doGet(info.endpoints[0].ticket);
      const running = async (): Promise<boolean> =>
        /^orrery_queries_running\{[^}]*\} 1$/m.test(await scrapeMetrics(httpPort, admin.key));
      for (let i = 0; !(await running()); i++) {
        if (i > 600) assert.fail('the statement never ran');
        await new Promise((r) => setTimeout(r, 50));
      }
      child.kill('SIGTERM');
      let ready = await get('/ready');
      for (let i = 0; ready.status === 200 && i < 200; i++) {
        await new Promise((r) => setTimeout(r, 25));
        ready = await get('/ready');
      }
      assert.deepEqual(ready, { status: 503, text: 'not ready: shutting down\n' });
      const refused = await fetch(`http://127.0.0.1:${httpPort}/v1/logs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${admin.key}` },
        body,
      });
      assert.equal(refused.status, 503);
      assert.equal(refused.headers.get('retry-after'), '1');

      const { table } = await streamed;
      assert.equal(String(table.getChild('s')!.get(0)), String((1500000000n * 1499999999n) / 2n));
      otlp.end(body.subarray(10));
      assert.equal(await otlpStatus, 200, 'the request under way was stored');
      assert.equal(await exited, 0, stderr);
      flight.close();

      const lines = stdout.trim().split('\n');
      for (const line of lines) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        assert.deepEqual(Object.keys(entry).slice(0, 3), ['time', 'level', 'message'], line);
      }
      assert.ok(
        lines.some((line) => (JSON.parse(line) as { message: string }).message === 'SIGTERM received, shutting down'),
      );
      for (const line of stderr.trim().split('\n').filter(Boolean)) JSON.parse(line);
    } finally {
      client.close();
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
