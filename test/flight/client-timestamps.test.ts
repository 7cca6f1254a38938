// The schema a client that reads zone-less timestamps (the JDBC driver before 19.0) is sent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Field, Float64, Int32, Schema, TimestampNanosecond } from 'apache-arrow';
import { schemaForClient } from '../../src/flight/client-timestamps.js';
import { encapsulateSchema } from '../../src/wire/index.js';

describe('schemaForClient', () => {
  const zoned = new Schema([
    new Field('minute', new TimestampNanosecond('UTC'), true),
    new Field('p95', new Float64()),
  ]);

  it('removes the zone of every timestamp for zone-less clients, and keeps it for the others', () => {
    assert.equal(schemaForClient(zoned, true), zoned);
    const zoneless = schemaForClient(zoned, false);
    assert.ok(!(zoneless.fields[0].type as TimestampNanosecond).timezone);
    assert.deepEqual(zoneless.fields[1], zoned.fields[1]);
    const plain = new Schema([new Field('one', new Int32())]);
    assert.equal(schemaForClient(plain, false), plain);
  });

  // #10: the wire encoding is kept per Schema object; a new zone-less object at each call was encoded again at each
  // of a JDBC statement's calls (CreatePreparedStatement, GetFlightInfo, DoGet).
  it('makes the zone-less schema once per schema, so its wire encoding is made once', () => {
    const first = schemaForClient(zoned, false);
    assert.equal(schemaForClient(zoned, false), first);
    assert.deepEqual(encapsulateSchema(schemaForClient(zoned, false)), encapsulateSchema(first));
  });
});
