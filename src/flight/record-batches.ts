import {
  DataType,
  RecordBatch,
  Schema,
  Struct,
  makeBuilder,
  makeData,
  type Data,
  type DenseUnion,
  type Field,
} from 'apache-arrow';

/**
 * Builds one record batch of an exact schema from rows of plain values (null for null;
 * a dense union value as [type code, value]). For the small results of metadata
 * commands; query results never come through here.
 */
export function batchFromRows(schema: Schema, rows: ReadonlyArray<readonly unknown[]>): RecordBatch {
  const children = schema.fields.map((field, column) =>
    buildData(
      field,
      rows.map((row) => row[column]),
    ),
  );
  const struct = makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children });
  return new RecordBatch(schema, struct);
}

function buildData(field: Field, values: unknown[]): Data {
  if (DataType.isUnion(field.type))
    return buildDenseUnion(field.type as DenseUnion, values as Array<[number, unknown]>);
  const builder = makeBuilder({ type: field.type, nullValues: [null, undefined] });
  for (const value of values) builder.append(value);
  return builder.finish().flush();
}

function buildDenseUnion(type: DenseUnion, values: Array<[number, unknown]>): Data {
  const typeIds = new Int8Array(values.length);
  const valueOffsets = new Int32Array(values.length);
  const perChild: unknown[][] = type.children.map(() => []);
  values.forEach(([code, value], row) => {
    typeIds[row] = code;
    valueOffsets[row] = perChild[code].length;
    perChild[code].push(value);
  });
  const children = type.children.map((child, code) => buildData(child, perChild[code]));
  return makeData({ type, length: values.length, nullCount: 0, typeIds, valueOffsets, children });
}
