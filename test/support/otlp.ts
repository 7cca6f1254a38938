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
