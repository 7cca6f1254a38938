// FlightData framed in place: batches from the native exporter carry free room in front of their
// body, and the sender writes the FlightData fields there instead of copying the body. Checked
// on real DuckDB batches by decoding the bytes that would go on the wire.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Table, type RecordBatch } from 'apache-arrow';
import { markFramingRoom } from '../../src/arrow/index.js';
import { DuckDBEngine } from '../../src/engine/index.js';
import {
  decodeFlightData,
  encodeFlightData,
  recordBatchMessages,
  schemaHeader,
  tableFromFlightData,
} from '../../src/wire/index.js';

function roundTrip(batch: RecordBatch): { table: Table; shared: boolean } {
  const [message] = recordBatchMessages(batch, new Map());
  const bytes = encodeFlightData(message);
  const table = tableFromFlightData([
    { dataHeader: schemaHeader(batch.schema), dataBody: new Uint8Array(0) },
    decodeFlightData(bytes),
  ])!;
  return { table, shared: bytes.buffer === batch.data.children[0].values.buffer };
}

describe('in-place FlightData framing', () => {
  let engine: DuckDBEngine;
  let batches: RecordBatch[];
  before(async () => {
    engine = await DuckDBEngine.create({ threads: 1 });
    const result = await engine.query(
      "SELECT range AS i, CASE WHEN range % 3 = 0 THEN NULL ELSE 'v' || range END AS s, range % 2 = 0 AS b FROM range(5000)",
    );
    batches = [];
    for await (const batch of result.batches) batches.push(batch);
  });
  after(() => engine.close());

  it('frames a native batch around its body without copying it', () => {
    const { table, shared } = roundTrip(batches[0]);
    assert.equal(shared, true, 'the FlightData should be a view of the batch buffer');
    assert.equal(table.numRows, 5000);
    assert.equal(table.getChild('i')!.get(4999), 4999n);
    assert.equal(table.getChild('s')!.get(3), null);
    assert.equal(table.getChild('s')!.get(4), 'v4');
    assert.equal(table.getChild('b')!.get(4), true);
    assert.equal(table.getChild('s')!.nullCount, 1667);
  });

  it('copies a slice, whose buffers no longer start where the room ends', () => {
    const { table, shared } = roundTrip(batches[0].slice(10, 20));
    assert.equal(shared, false);
    assert.deepEqual([...table.getChild('i')!], [10n, 11n, 12n, 13n, 14n, 15n, 16n, 17n, 18n, 19n]);
  });

  it('copies when the room is too small for the framing', () => {
    const batch = batches[0];
    const buffer = batch.data.children[0].values.buffer;
    const bodyStart = batch.data.children[0].values.byteOffset;
    markFramingRoom(buffer, bodyStart);
    const [message] = recordBatchMessages(batch, new Map());
    assert.ok(message.inPlace);
    const tight = encodeFlightData({ ...message, inPlace: { buffer, bodyStart: 8 } });
    assert.notEqual(tight.buffer, buffer);
    assert.deepEqual(decodeFlightData(tight).dataBody, decodeFlightData(encodeFlightData(message)).dataBody);
  });
});
