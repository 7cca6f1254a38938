// Request bodies: Content-Encoding (gzip round trip, gzip bombs stopped at the cap), Content-Type, and
// the export response bodies as the SDK's own response deserializers read them.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { SeverityNumber } from '@opentelemetry/api-logs';
import {
  JsonTraceSerializer,
  ProtobufLogsSerializer,
  ProtobufMetricsSerializer,
  ProtobufTraceSerializer,
} from '@opentelemetry/otlp-transformer';
import {
  contentTypeOf,
  decodeBody,
  decodeLogs,
  DEFAULT_MAX_BODY_BYTES,
  encodeErrorStatus,
  encodeExportResponse,
} from '../../src/ingestion/otlp/index.js';
import { sdkLogs } from './otel-sdk.js';

const MiB = 1024 * 1024;
const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');

describe('decodeBody', () => {
  it('round-trips an SDK body through gzip', async () => {
    const sdk = await sdkLogs({ 'service.name': 'gz' }, (logger) =>
      logger('s').emit({ timestamp: [1_700_000_000, 1], severityNumber: SeverityNumber.DEBUG, body: 'compressed' }),
    );
    for (const encoding of ['gzip', 'GZIP', ' x-gzip ', 'identity, gzip']) {
      const body = await decodeBody(gzipSync(sdk.protobuf), encoding);
      assert.deepEqual(Buffer.from(body), Buffer.from(sdk.protobuf), encoding);
    }
    const [group] = decodeLogs(await decodeBody(gzipSync(sdk.json), 'gzip'), 'json');
    assert.deepEqual(
      group.records.map((r) => [r.timeUnixNano, r.severityNumber, r.body]),
      [[1_700_000_000_000_000_001n, 5, 'compressed']],
    );
  });

  it('passes identity bodies through, whole or streamed', async () => {
    const body = Buffer.from('abc');
    for (const encoding of [undefined, '', 'identity', 'Identity'])
      assert.equal(await decodeBody(body, encoding), body);
    async function* chunks() {
      yield Buffer.from('ab');
      yield Buffer.from('c');
    }
    assert.equal(text(await decodeBody(chunks(), undefined)), 'abc');
    assert.equal(text(await decodeBody(Readable.from([gzipSync(body)]), 'gzip')), 'abc');
    assert.equal(DEFAULT_MAX_BODY_BYTES, 100 * MiB);
  });

  it('refuses other encodings with 415', async () => {
    for (const encoding of ['br', 'deflate', 'gzip, gzip', 'zstd']) {
      await assert.rejects(decodeBody(Buffer.from('x'), encoding), {
        name: 'OtlpDecodeError',
        code: 'OTLP_UNSUPPORTED_ENCODING',
        httpStatus: 415,
        message: `unsupported Content-Encoding '${encoding}' (use gzip or none)`,
      });
    }
  });

  it('refuses bodies over the cap with 413, plain or streamed', async () => {
    const tooLarge = {
      code: 'OTLP_BODY_TOO_LARGE',
      httpStatus: 413,
      message: 'request body is larger than 10 bytes once decoded',
    };
    assert.equal((await decodeBody(Buffer.alloc(10), undefined, { maxBytes: 10 })).length, 10);
    await assert.rejects(decodeBody(Buffer.alloc(11), undefined, { maxBytes: 10 }), tooLarge);
    async function* chunks() {
      for (let i = 0; i < 3; i++) yield Buffer.alloc(4);
    }
    await assert.rejects(decodeBody(chunks(), 'identity', { maxBytes: 10 }), tooLarge);
    await assert.rejects(decodeBody(gzipSync(Buffer.alloc(11)), 'gzip', { maxBytes: 10 }), tooLarge);
    assert.equal((await decodeBody(gzipSync(Buffer.alloc(10)), 'gzip', { maxBytes: 10 })).length, 10);
  });

  // One gzip member of 64 MiB of zeros is ~64 KiB; members concatenate (RFC 1952), so 64 of them make a
  // 4 MiB body that would inflate to 4 GiB.
  const member = gzipSync(Buffer.alloc(64 * MiB), { level: 9 });

  it('stops a gzip bomb at the cap instead of inflating it', async () => {
    const bomb = Buffer.concat(Array.from({ length: 64 }, () => member));
    const before = process.memoryUsage().arrayBuffers;
    await assert.rejects(decodeBody(bomb, 'gzip', { maxBytes: MiB }), {
      code: 'OTLP_BODY_TOO_LARGE',
      message: `request body is larger than ${MiB} bytes once decoded`,
    });
    // Inflating 4 GiB would take gigabytes; stopping at 1 MiB does not.
    assert.ok(process.memoryUsage().arrayBuffers - before < 256 * MiB);
  });

  it('stops reading a streamed gzip bomb soon after the cap', async () => {
    let pulled = 0;
    async function* members() {
      for (let i = 0; i < 64; i++) {
        pulled++;
        yield member;
      }
    }
    await assert.rejects(decodeBody(members(), 'gzip', { maxBytes: MiB }), { code: 'OTLP_BODY_TOO_LARGE' });
    assert.ok(pulled <= 3, `pulled ${pulled} of 64 members`);
  });

  it('refuses bodies that are not gzip, or truncated, with 400', async () => {
    await assert.rejects(decodeBody(Buffer.from('plain text'), 'gzip'), {
      code: 'OTLP_MALFORMED_BODY',
      httpStatus: 400,
      message: 'body is not valid gzip: incorrect header check',
    });
    const gz = gzipSync(Buffer.from('hello world, hello world'));
    await assert.rejects(decodeBody(gz.subarray(0, gz.length - 6), 'gzip'), {
      code: 'OTLP_MALFORMED_BODY',
      message: 'body is not valid gzip: unexpected end of file',
    });
  });
  it('passes on a failing source (an aborted upload) as it is, not as a bad body', async () => {
    const aborted = new Error('aborted');
    async function* source() {
      yield gzipSync(Buffer.from('partial')).subarray(0, 12);
      throw aborted;
    }
    await assert.rejects(decodeBody(source(), 'gzip'), (error) => error === aborted);
    await assert.rejects(decodeBody(source(), undefined), (error) => error === aborted);
  });
});

describe('contentTypeOf', () => {
  it('maps the OTLP media types, ignoring case and parameters', () => {
    assert.equal(contentTypeOf('application/x-protobuf'), 'protobuf');
    assert.equal(contentTypeOf('application/protobuf'), 'protobuf');
    assert.equal(contentTypeOf('Application/JSON; charset=utf-8'), 'json');
  });

  it('refuses anything else with 415', () => {
    const unsupported = { code: 'OTLP_UNSUPPORTED_MEDIA_TYPE', httpStatus: 415 };
    assert.throws(() => contentTypeOf('text/plain'), {
      ...unsupported,
      message: "unsupported Content-Type 'text/plain' (use application/x-protobuf or application/json)",
    });
    assert.throws(() => contentTypeOf(undefined), {
      ...unsupported,
      message: 'missing Content-Type (use application/x-protobuf or application/json)',
    });
  });
});

describe('encodeExportResponse', () => {
  it('is empty (protobuf) or {} (JSON) when everything was accepted', () => {
    assert.equal(encodeExportResponse('logs', 'protobuf').length, 0);
    assert.equal(text(encodeExportResponse('metrics', 'json')), '{}');
  });

  it('carries partial_success as the SDK reads it', () => {
    const partial = { rejected: 2, errorMessage: 'two records had no body' };
    assert.deepEqual(ProtobufLogsSerializer.deserializeResponse(encodeExportResponse('logs', 'protobuf', partial)), {
      partialSuccess: { rejectedLogRecords: 2, errorMessage: 'two records had no body' },
    });
    assert.deepEqual(
      ProtobufMetricsSerializer.deserializeResponse(
        encodeExportResponse('metrics', 'protobuf', { ...partial, rejected: 7n }),
      ),
      {
        partialSuccess: { rejectedDataPoints: 7, errorMessage: 'two records had no body' },
      },
    );
    assert.deepEqual(ProtobufTraceSerializer.deserializeResponse(encodeExportResponse('traces', 'protobuf', partial)), {
      partialSuccess: { rejectedSpans: 2, errorMessage: 'two records had no body' },
    });
    const json = encodeExportResponse('traces', 'json', partial);
    assert.equal(text(json), '{"partialSuccess":{"rejectedSpans":"2","errorMessage":"two records had no body"}}');
    assert.deepEqual(JsonTraceSerializer.deserializeResponse(json), {
      partialSuccess: { rejectedSpans: '2', errorMessage: 'two records had no body' },
    });
  });
});

describe('encodeErrorStatus', () => {
  it('encodes a google.rpc.Status', () => {
    assert.deepEqual([...encodeErrorStatus('protobuf', 'bad', 3)], [0x08, 3, 0x12, 3, ...Buffer.from('bad')]);
    assert.deepEqual([...encodeErrorStatus('protobuf', 'bad')], [0x12, 3, ...Buffer.from('bad')]);
    assert.equal(text(encodeErrorStatus('json', 'bad')), '{"message":"bad"}');
    assert.equal(text(encodeErrorStatus('json', 'bad', 3)), '{"code":3,"message":"bad"}');
  });
});
