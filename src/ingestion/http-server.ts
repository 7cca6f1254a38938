import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Keyring, Principal } from '../auth/index.js';
import type { OrreryMetrics } from '../metrics/index.js';
import { IngestAdmission, RETRY_AFTER_SECONDS, type IngestLimits } from './admission.js';
import { OrreryError } from '../errors/index.js';
import { httpErrors } from './errors.js';
import type { IngestionService } from './ingestion-service.js';
import {
  OtlpDecodeError,
  contentTypeOf,
  decodeBody,
  encodeErrorStatus,
  encodeExportResponse,
  type OtlpContentType,
  type OtlpSignal,
} from './otlp/index.js';

export interface HttpServerOptions {
  readonly address: string;
  readonly keyring: Keyring;
  /** Absent in a process that runs no ingestion role: OTLP routes then answer 404. */
  readonly ingestion?: IngestionService;
  readonly metrics: OrreryMetrics;
  /** Checks each dependency for /ready; throws when one is not usable. */
  readonly readiness: () => Promise<void>;
  readonly maxBodyBytes?: number;
  /** Requests and body bytes in progress at once, in total and per key (over them: 503 / 429). */
  readonly ingestLimits: IngestLimits;
  readonly log: (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void;
}

const routes = new Map<string, OtlpSignal>([
  ['/v1/logs', 'logs'],
  ['/v1/metrics', 'metrics'],
  ['/v1/traces', 'traces'],
  ['/ingestion/otlp/v1/logs', 'logs'],
  ['/ingestion/otlp/v1/metrics', 'metrics'],
  ['/ingestion/otlp/v1/traces', 'traces'],
]);

/** Orrery's HTTP side: OTLP/HTTP ingestion, /health, /ready and /metrics (an admin key's). */
export class HttpServer {
  private readonly server: Server;
  private readonly admission: IngestAdmission;
  private closed = false;
  private draining = false;
  /** OTLP requests being stored, and who waits for them to end (drain). */
  private ingesting = 0;
  private idle: Array<() => void> = [];

  constructor(private readonly options: HttpServerOptions) {
    this.admission = new IngestAdmission(options.ingestLimits);
    this.server = createServer((request, response) => {
      this.handle(request, response).catch((error) => {
        options.log('error', `${request.method} ${request.url} failed`, error);
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
        response.end('internal error\n');
      });
    });
  }

  async start(): Promise<{ host: string; port: number }> {
    if (this.closed) throw httpErrors.error('HTTP_SERVER_CLOSED', 'the HTTP server has been closed');
    const colon = this.options.address.lastIndexOf(':');
    const host = this.options.address.slice(0, colon).replace(/^\[|\]$/g, '');
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(Number(this.options.address.slice(colon + 1)), host, () => resolve());
    });
    return { host, port: (this.server.address() as AddressInfo).port };
  }

  /**
   * The start of a graceful shutdown: /ready answers 503 and new OTLP requests 503 with Retry-After
   * (the client sends them to another server), while the requests being stored finish. Resolves when
   * none is left, or after `graceMs`.
   */
  async drain(graceMs: number): Promise<void> {
    this.draining = true;
    if (this.ingesting === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => this.idle.push(resolve)),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
  }

  /** Stops accepting connections and waits for requests in flight. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.draining = true;
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeIdleConnections();
    });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method === 'GET' && path === '/health') return send(response, 200, 'text/plain', 'ok\n');
    if (request.method === 'GET' && path === '/ready') {
      if (this.draining) return send(response, 503, 'text/plain', 'not ready: shutting down\n');
      try {
        await this.options.readiness();
        return send(response, 200, 'text/plain', 'ready\n');
      } catch (error) {
        // The port is open to anyone: the failure's text (an address, a path, a bucket) goes to the log alone.
        this.options.log('warn', `/ready: a dependency is not usable: ${(error as Error).message}`, error);
        return send(response, 503, 'text/plain', notReady);
      }
    }
    if (request.method === 'GET' && path === '/metrics') {
      // The metrics name every key and rollup and count every audience's rows: the operator's, not a tenant's.
      const principal = this.authenticate(request.headers.authorization);
      if (!principal) {
        response.setHeader('www-authenticate', 'Bearer');
        return send(
          response,
          401,
          'text/plain',
          'missing or invalid API key: send "Authorization: Bearer <admin key>"\n',
        );
      }
      if (!principal.admin) return send(response, 403, 'text/plain', `key '${principal.name}' is not an admin\n`);
      const { registry } = this.options.metrics;
      return send(response, 200, registry.contentType, await registry.metrics());
    }
    const signal = routes.get(path);
    if (!signal || !this.options.ingestion) return send(response, 404, 'text/plain', `no route for ${path}\n`);
    if (request.method !== 'POST') {
      response.setHeader('allow', 'POST');
      return send(response, 405, 'text/plain', `${path} accepts POST only\n`);
    }
    this.ingesting++;
    try {
      await this.ingest(signal, request, response);
    } finally {
      if (--this.ingesting === 0) for (const resolve of this.idle.splice(0)) resolve();
    }
  }

  private async ingest(signal: OtlpSignal, request: IncomingMessage, response: ServerResponse): Promise<void> {
    let contentType: OtlpContentType = 'json';
    const fail = (status: number, message: string): void => {
      request.resume();
      this.options.metrics.ingestionRequests.inc({ signal, status });
      const body = encodeErrorStatus(contentType, message);
      // OTLP/HTTP: 429 and 503 are retryable, after Retry-After when given.
      if (status === 429 || status === 503) response.setHeader('retry-after', String(RETRY_AFTER_SECONDS));
      // A body refused before its end is not read further: the connection cannot carry another request.
      if (!request.complete) response.setHeader('connection', 'close');
      send(response, status, contentType === 'json' ? 'application/json' : 'application/x-protobuf', body);
    };
    if (this.draining) return fail(503, 'the server is shutting down: send the request again (to another server)');
    const principal = this.authenticate(request.headers.authorization);
    if (!principal) return fail(401, 'missing or invalid API key: send "Authorization: Bearer <key>"');
    let admitted;
    try {
      contentType = contentTypeOf(request.headers['content-type']);
      admitted = this.admission.admit(principal.name);
      const encoding = request.headers['content-encoding'];
      // A gzip body is kept as received too: stored as is when the scan takes it (see IngestionService.ingest).
      const received = gzipped(encoding)
        ? await decodeBody(request, undefined, { maxBytes: this.options.maxBodyBytes, charge: admitted.charge })
        : undefined;
      const body = await decodeBody(received ?? request, encoding, {
        maxBytes: this.options.maxBodyBytes,
        charge: admitted.charge,
      });
      await this.options.ingestion!.ingest(signal, body, contentType, principal.audiences[0], received);
    } catch (error) {
      if (error instanceof OtlpDecodeError) return fail(error.httpStatus, error.message);
      // The client went away before its body ended: nothing of it is stored, and nobody is there to answer (counted
      // as nginx's 499, client closed request, not logged as the server's failure).
      if (request.destroyed && !request.complete) {
        this.options.metrics.ingestionRequests.inc({ signal, status: 499 });
        return;
      }
      // Orrery's trouble, passing (the metadata database or the object store unavailable): OTLP's retryable 503.
      if (error instanceof OrreryError && error.status === 'UNAVAILABLE') {
        this.options.log('warn', `OTLP ${signal}: ${error.message}`, error);
        return fail(503, error.message);
      }
      throw error;
    } finally {
      admitted?.release();
    }
    this.options.metrics.ingestionRequests.inc({ signal, status: 200 });
    send(
      response,
      200,
      contentType === 'json' ? 'application/json' : 'application/x-protobuf',
      successBodies[contentType][signal],
    );
  }

  private authenticate(header: string | undefined): Principal | null {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    return match ? this.options.keyring.byKey(match[1]) : null;
  }
}

/** The body of every 200, encoded once (an export response without partial success). */
const successBodies = Object.fromEntries(
  (['json', 'protobuf'] as const).map((contentType) => [
    contentType,
    Object.fromEntries(
      [...new Set(routes.values())].map((signal) => [signal, encodeExportResponse(signal, contentType)]),
    ),
  ]),
) as Record<OtlpContentType, Record<OtlpSignal, Uint8Array>>;

/** /ready's answer when a dependency fails, whichever and however: the server's log says which and why. */
const notReady =
  'not ready: a dependency (the metadata database or the object store) is not usable: see the server log\n';

const gzipped = (encoding: string | undefined): boolean => /^\s*(x-)?gzip\s*$/i.test(encoding ?? '');

function send(response: ServerResponse, status: number, contentType: string, body: string | Uint8Array): void {
  // With its length given, a response goes out in one write instead of chunked (header, chunk, terminator).
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  response.writeHead(status, { 'content-type': contentType, 'content-length': length });
  response.end(body);
}
