// Block payload lines: exact JSON, nanosecond integers kept exactly.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { levelOf, logLine, metricLine, spanLine } from '../../src/ingestion/payload-lines.js';

const scope = { name: 'app "core"', version: '1' };

describe('payload lines', () => {
  it('writes a log record with its exact nanosecond time and escaped strings', () => {
    const line = logLine(
      {
        timeUnixNano: 1704164645123456789n,
        observedTimeUnixNano: 0n,
        severityNumber: 17,
        severityText: 'ERROR',
        body: 'boom\n"x"',
        attributes: { a: 1 },
        traceId: null,
        spanId: 'eee19b7ec3c1b174',
        scope,
      },
      1n,
    );
    assert.equal(
      line,
      '{"time":1704164645123456789,"target":"app \\"core\\"","level":2,"msg":"boom\\n\\"x\\"","properties":{"a":1,"otel.severity_text":"ERROR"},"trace_id":null,"span_id":"eee19b7ec3c1b174"}',
    );
    assert.deepEqual(JSON.parse(line.replace(/"time":\d+/, '"time":0')).msg, 'boom\n"x"');
  });

  it('falls back to the observed time, then to the insert time', () => {
    const base = { severityNumber: 9, severityText: '', body: '', attributes: {}, traceId: null, spanId: null, scope };
    assert.match(logLine({ ...base, timeUnixNano: 0n, observedTimeUnixNano: 5n }, 9n), /^\{"time":5,/);
    assert.match(logLine({ ...base, timeUnixNano: 0n, observedTimeUnixNano: 0n }, 9n), /^\{"time":9,/);
  });

  it('maps OTLP severities to micromegas levels', () => {
    assert.deepEqual([0, 1, 5, 9, 13, 17, 21, 24].map(levelOf), [4, 6, 5, 4, 3, 2, 1, 1]);
  });

  it('writes metric points and spans', () => {
    const point = {
      name: 'cpu',
      unit: '%',
      description: '',
      kind: 'gauge' as const,
      timeUnixNano: 7n,
      startTimeUnixNano: 0n,
      value: 0.5,
      count: null,
      sum: null,
      min: null,
      max: null,
      attributes: { host: 'a' },
      scope,
    };
    assert.equal(
      metricLine(point, 1n),
      '{"time":7,"target":"app \\"core\\"","name":"cpu","unit":"%","value":0.5,"properties":{"host":"a","otel.kind":"gauge"}}',
    );
    const span = {
      traceId: 't',
      spanId: 's',
      parentSpanId: null,
      name: 'op',
      kind: 2,
      startTimeUnixNano: 10n,
      endTimeUnixNano: 30n,
      attributes: {},
      statusCode: 0,
      statusMessage: '',
      events: 0,
      scope,
    };
    assert.equal(
      spanLine(span),
      '{"begin":10,"end":30,"trace_id":"t","span_id":"s","parent_span_id":null,"name":"op","kind":2,"target":"app \\"core\\"","status_code":0,"status_message":"","properties":{}}',
    );
  });
});
