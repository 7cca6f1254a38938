// wire/ frames record batches with apache-arrow internals (wire/arrow-internals.ts). These cases
// fail when an upgrade of apache-arrow changes them: the pin, and what they write compared with
// what apache-arrow's public writer and reader make of the same data (issue 8).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import {
  Dictionary,
  Field,
  Int32,
  Schema,
  Table,
  Utf8,
  makeData,
  makeVector,
  tableFromArrays,
  tableToIPC,
  vectorFromArray,
  RecordBatch,
  Struct,
} from 'apache-arrow';
import {
  decodeBatches,
  decodeSchema,
  encapsulateSchema,
  tableFromFlightData,
  tableToFlightData,
  type FlightData,
} from '../../src/wire/index.js';

const root = new URL('../../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as {
  dependencies: Record<string, string>;
};
const installed = (
  JSON.parse(readFileSync(new URL('node_modules/apache-arrow/package.json', root), 'utf8')) as { version: string }
).version;

/** Two batches of ints with nulls, text, and a dictionary column whose dictionary changes between them. */
function sample(): Table {
  const batch = (ints: Array<number | null>, texts: string[], keys: number[], words: string[]): RecordBatch => {
    const dictionaryType = new Dictionary(new Utf8(), new Int32(), 0);
    const dictionary = makeVector(vectorFromArray(words, new Utf8()).data[0]);
    const coded = makeData({
      type: dictionaryType,
      length: keys.length,
      nullCount: 0,
      data: Int32Array.from(keys),
      dictionary,
    });
    const fields = [
      new Field('n', new Int32(), true),
      new Field('s', new Utf8(), false),
      new Field('d', dictionaryType, false),
    ];
    const children = [vectorFromArray(ints, new Int32()).data[0], vectorFromArray(texts, new Utf8()).data[0], coded];
    return new RecordBatch(
      new Schema(fields),
      makeData({ type: new Struct(fields), length: ints.length, nullCount: 0, children }),
    );
  };
  return new Table([
    batch([1, null, 3], ['a', 'bé', ''], [0, 1, 0], ['x', 'y']),
    batch([null, 5], ['ünï', 'z'], [1, 1], ['p', 'q']),
  ]);
}

describe('apache-arrow internals used by wire/', () => {
  it('apache-arrow is pinned to one exact version, the one installed', () => {
    assert.match(
      manifest.dependencies['apache-arrow'],
      /^\d+\.\d+\.\d+$/,
      'package.json must pin apache-arrow exactly',
    );
    assert.equal(installed, manifest.dependencies['apache-arrow']);
  });

  it("writes FlightData that apache-arrow's public reader reads back unchanged, dictionaries included", () => {
    const table = sample();
    const messages = tableToFlightData(table);
    assert.equal(messages.length, 1 + 2 + 2, 'schema, then per batch its dictionary and itself');
    const back = tableFromFlightData(messages)!;
    assert.deepEqual(
      back.toArray().map((row) => row.toJSON()),
      [
        { n: 1, s: 'a', d: 'x' },
        { n: null, s: 'bé', d: 'y' },
        { n: 3, s: '', d: 'x' },
        { n: null, s: 'ünï', d: 'q' },
        { n: 5, s: 'z', d: 'q' },
      ],
    );
    assert.deepEqual(
      tableToIPC(back, 'stream'),
      tableToIPC(table, 'stream'),
      'same bytes as the public writer makes of the original',
    );
  });

  it("frames a schema as the public writer does, and reads the public writer's schema message", () => {
    const table = tableFromArrays({ id: Int32Array.from([1]), name: ['a'] });
    const stream = tableToIPC(table, 'stream');
    const schemaMessageLength = 8 + new DataView(stream.buffer, stream.byteOffset).getInt32(4, true);
    assert.deepEqual(encapsulateSchema(table.schema), stream.subarray(0, schemaMessageLength));
    const decoded = decodeSchema(stream.subarray(0, schemaMessageLength));
    const fieldsOf = (schema: Schema): string[] => schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`);
    assert.deepEqual(fieldsOf(decoded), ['id:Int32:false', 'name:Dictionary<Int32, Utf8>:true']);
    assert.deepEqual(fieldsOf(decodeSchema(encapsulateSchema(table.schema))), fieldsOf(table.schema));
  });

  it('decodes each batch as soon as its message is in, before asking for the next message', async () => {
    const table = new Table([
      tableFromArrays({ n: Int32Array.from([1, 2]) }).batches[0],
      tableFromArrays({ n: Int32Array.from([3]) }).batches[0],
    ]);
    const messages = tableToFlightData(table);
    let asked = 0;
    async function* arriving(): AsyncGenerator<FlightData> {
      for (const message of messages) {
        asked++;
        yield message;
      }
    }
    const batches = decodeBatches(arriving(), () => {});
    const first = await batches.next();
    // The schema's message and the first batch's: not the second batch's (a procedure's last line before its error).
    assert.equal(asked, 2);
    assert.deepEqual([...(first.value as RecordBatch).getChild('n')!], [1, 2]);
    const second = await batches.next();
    assert.deepEqual([...(second.value as RecordBatch).getChild('n')!], [3]);
    assert.equal((await batches.next()).done, true);
  });
});
