// Hand-made OTLP/JSON requests, for tests that need exact control over what is sent.

export interface LogSpec {
  readonly time: bigint;
  readonly severity: number;
  readonly body: string;
  readonly target?: string;
  /** The record's attributes (string values). */
  readonly attributes?: Record<string, string>;
}

/** An ExportLogsServiceRequest in OTLP/JSON with one resource. */
export function logsRequest(resource: Record<string, string>, logs: readonly LogSpec[]): string {
  return JSON.stringify({
    resourceLogs: [
      {
        resource: {
          attributes: Object.entries(resource).map(([key, value]) => ({ key, value: { stringValue: value } })),
        },
        scopeLogs: [
          {
            scope: { name: logs[0]?.target ?? 'test' },
            logRecords: logs.map((l) => ({
              timeUnixNano: String(l.time),
              severityNumber: l.severity,
              body: { stringValue: l.body },
              ...(l.attributes && {
                attributes: Object.entries(l.attributes).map(([key, value]) => ({
                  key,
                  value: { stringValue: value },
                })),
              }),
            })),
          },
        ],
      },
    ],
  });
}

/** A span of tracesRequest's: ids in hex, times in ns, and its code location's attributes. */
export interface SpanSpec {
  id: string;
  parent?: string;
  name: string;
  begin: bigint;
  end: bigint;
  file?: string;
  line?: number;
}

/** An ExportTraceServiceRequest in OTLP/JSON of one service's spans, one trace. */
export function tracesRequest(service: string, spans: readonly SpanSpec[]): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeSpans: [
          {
            scope: { name: 'checkout' },
            spans: spans.map((s) => ({
              traceId: '0123456789abcdef0123456789abcdef',
              spanId: s.id,
              ...(s.parent ? { parentSpanId: s.parent } : {}),
              name: s.name,
              kind: 1,
              startTimeUnixNano: String(s.begin),
              endTimeUnixNano: String(s.end),
              attributes: [
                ...(s.file ? [{ key: 'code.filepath', value: { stringValue: s.file } }] : []),
                ...(s.line ? [{ key: 'code.lineno', value: { intValue: String(s.line) } }] : []),
              ],
            })),
          },
        ],
      },
    ],
  });
}

/** POSTs an OTLP/JSON body; returns the HTTP status and body text. */
export async function postOtlp(
  httpPort: number,
  signal: 'logs' | 'metrics' | 'traces',
  key: string | null,
  body: string,
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const response = await fetch(`http://127.0.0.1:${httpPort}/v1/${signal}`, { method: 'POST', headers, body });
  return { status: response.status, text: await response.text() };
}

/**
 * An epoch second past the insert time of every record posted and answered so far: the end of a materialize range
 * holding them all, taken once they are posted. An end counted ahead from the first post's second and the sleeps
 * between posts (start + 6) left out the last request's rows when its posts took longer, as on a loaded machine.
 */
export const pastInsertTimes = (): number => Math.floor(Date.now() / 1000) + 1;

/**
 * Partition i's log records of the resources suites: `entry <i>.0` and `entry <i>.1`, severity 9, attribute
 * `pod` = `pod-<i>`, of service `svc<i>`, at 2024-01-02 03:04:05 plus i ms (one nanosecond apart).
 */
export function podLogs(i: number): string {
  const time = 1704164645000000000n + BigInt(i) * 1_000_000n;
  const logs = [0, 1].map((j) => ({
    time: time + BigInt(j),
    severity: 9,
    body: `entry ${i}.${j}`,
    target: 'app',
    attributes: { pod: `pod-${i}` },
  }));
  return logsRequest({ 'service.name': `svc${i}` }, logs);
}
