// resourceKey: one canonical string per set of resource attributes, whatever their order.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeLogs, resourceKey, type Attributes } from '../../src/ingestion/otlp/index.js';
import { jsonBody } from './otel-sdk.js';

const resourceOf = (attributes: unknown[]) =>
  decodeLogs(jsonBody({ resourceLogs: [{ resource: { attributes } }] }), 'json')[0].resource.attributes;

describe('resourceKey', () => {
  it('sorts keys at every level and writes JSON', () => {
    assert.equal(
      resourceKey({ 'service.name': 'api', 'host.name': 'h1', labels: { z: 1, a: [true, null] } }),
      '{"host.name":"h1","labels":{"a":[true,null],"z":1},"service.name":"api"}',
    );
    assert.equal(resourceKey({}), '{}');
  });

  it('gives the same key for the same attributes sent in another order', () => {
    const a = resourceOf([
      { key: 'service.name', value: { stringValue: 'api' } },
      {
        key: 'k8s',
        value: {
          kvlistValue: {
            values: [
              { key: 'pod', value: { stringValue: 'p' } },
              { key: 'ns', value: { stringValue: 'n' } },
            ],
          },
        },
      },
    ]);
    const b = resourceOf([
      {
        key: 'k8s',
        value: {
          kvlistValue: {
            values: [
              { key: 'ns', value: { stringValue: 'n' } },
              { key: 'pod', value: { stringValue: 'p' } },
            ],
          },
        },
      },
      { key: 'service.name', value: { stringValue: 'api' } },
    ]);
    assert.equal(resourceKey(a), resourceKey(b));
  });

  it('tells apart values that differ in type or array order', () => {
    const sets: Attributes[] = [{ n: 1 }, { n: '1' }, { n: true }, { n: [1, 2] }, { n: [2, 1] }, { n: null }, { m: 1 }];
    const keys = sets.map(resourceKey);
    assert.equal(new Set(keys).size, keys.length);
  });
});
