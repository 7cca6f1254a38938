// Issue 16: the resources of logs bodies stored as received are decoded once per distinct resource (KnownResources):
// what the blocks get is what decoding the body gives, a resource seen before is not decoded again, and a body
// whose resources are not all known is decoded whole, so a bad resource is refused as before (400, its place named).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KnownResources } from '../../src/ingestion/known-resources.js';
import { decodeLogs, resourceKey, scanLogs, type Attributes } from '../../src/ingestion/otlp/index.js';
import { protobufOf, t0 } from '../support/otlp-logs-corpus.js';

const resourceLogs = (service: string, extra: object[] = [], record = 'r'): object => ({
  resource: {
    attributes: [
      { key: 'service.name', value: { stringValue: service } },
      { key: 'micromegas.x', value: {} },
      ...extra,
    ],
  },
  scopeLogs: [{ logRecords: [{ timeUnixNano: String(t0), body: { stringValue: record } }] }],
});
const clean = (attributes: Attributes): Attributes =>
  Object.fromEntries(Object.entries(attributes).filter(([key]) => !key.startsWith('micromegas.')));

describe('issue 16: KnownResources', () => {
  it('gives what decoding the body gives, and a resource seen before without decoding it again', () => {
    const known = new KnownResources();
    const first = protobufOf({ resourceLogs: [resourceLogs('a'), resourceLogs('b')] });
    const resources = known.resources(first, scanLogs(first)!, clean);
    assert.deepEqual(
      resources,
      decodeLogs(first, 'protobuf').map((g) => ({
        attributes: clean(g.resource.attributes),
        key: resourceKey(clean(g.resource.attributes)),
      })),
    );
    assert.deepEqual(resources[1].attributes, { 'service.name': 'b' });
    // Other records, the same resources in another order: the same objects, from the map.
    const again = protobufOf({ resourceLogs: [resourceLogs('b', [], 'other'), resourceLogs('a', [], 'more')] });
    const kept = known.resources(again, scanLogs(again)!, clean);
    assert.equal(kept[0], resources[1]);
    assert.equal(kept[1], resources[0]);
  });

  it('decodes a body whose resources are not all known, so a bad one is refused with its place', () => {
    const known = new KnownResources();
    const good = protobufOf({ resourceLogs: [resourceLogs('a')] });
    known.resources(good, scanLogs(good)!, clean);
    const nul = [{ key: 'bad', value: { stringValue: 'x\u0000y' } }];
    const bad = protobufOf({ resourceLogs: [resourceLogs('a'), resourceLogs('c', nul)] });
    const scanned = scanLogs(bad);
    assert.ok(scanned, 'the scan leaves resources to the decode');
    assert.throws(() => known.resources(bad, scanned, clean), /resourceLogs\[1\]\.resource.*NUL/);
    assert.throws(() => known.resources(bad, scanned, clean), /resourceLogs\[1\]\.resource.*NUL/, 'not kept');
  });

  it('tells resources apart by their schema URL too', () => {
    const known = new KnownResources();
    const plain = protobufOf({ resourceLogs: [resourceLogs('a')] });
    const withUrl = protobufOf({ resourceLogs: [{ ...resourceLogs('a'), schemaUrl: 'https://example.com/1' }] });
    const [a] = known.resources(plain, scanLogs(plain)!, clean);
    const [b] = known.resources(withUrl, scanLogs(withUrl)!, clean);
    assert.notEqual(a, b);
    assert.deepEqual(a, b);
  });
});
