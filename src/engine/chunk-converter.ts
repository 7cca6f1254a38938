import bindings from '@duckdb/node-bindings';
import { DuckDBTypeId, DuckDBVector, type DuckDBType } from '@duckdb/node-api';
import {
  DataType,
  RecordBatch,
  Struct,
  Utf8,
  makeData,
  vectorFromArray,
  type Data,
  type Schema,
  type Vector as Vector_,
} from 'apache-arrow';
import { arrowType } from './arrow-types.js';
import { decimalStorageWidth, fixedWidths, timestampFactors } from './column-layouts.js';

// DuckDB result chunks to Arrow record batches, straight from DuckDB's vector memory:
// fixed-width values and validity masks are copied byte for byte (both use Arrow's
// little-endian layouts), short strings are read from inline string_t slots, and only
// strings over 12 bytes cost a native call each. Batches are cut at a byte target so
// that each one fills a FlightData of useful size.

type Vector = bindings.Vector;
type TypedArrayConstructor = {
  new (buffer: ArrayBuffer, offset: number, length: number): ArrayBufferView;
  BYTES_PER_ELEMENT: number;
};

/** Growable byte buffer. */
class Bytes {
  bytes = new Uint8Array(1024);
  length = 0;

  reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.bytes.byteLength) return;
    let size = this.bytes.byteLength * 2;
    while (size < needed) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  append(source: Uint8Array): void {
    this.reserve(source.byteLength);
    this.bytes.set(source, this.length);
    this.length += source.byteLength;
  }

  take(): Uint8Array {
    const out = this.bytes.slice(0, this.length);
    this.length = 0;
    return out;
  }
}

/** Arrow validity bitmap built from DuckDB validity masks (same bit order). */
class Validity {
  private readonly bits = new Bytes();
  rows = 0;
  nullCount = 0;

  appendFrom(mask: Uint8Array | null, start: number, count: number): void {
    this.bits.reserve(((this.rows + count + 7) >> 3) - this.bits.length + 1);
    const out = this.bits.bytes;
    if ((this.rows & 7) === 0 && (start & 7) === 0) {
      const first = this.rows >> 3;
      const bytes = (count + 7) >> 3;
      if (mask) out.set(mask.subarray(start >> 3, (start >> 3) + bytes), first);
      else out.fill(0xff, first, first + bytes);
      if (mask)
        for (let i = 0; i < count; i++) if ((mask[(start + i) >> 3] & (1 << ((start + i) & 7))) === 0) this.nullCount++;
    } else {
      for (let i = 0; i < count; i++) {
        const valid = !mask || (mask[(start + i) >> 3] & (1 << ((start + i) & 7))) !== 0;
        const bit = this.rows + i;
        if (valid) out[bit >> 3] |= 1 << (bit & 7);
        else {
          out[bit >> 3] &= ~(1 << (bit & 7));
          this.nullCount++;
        }
      }
    }
    this.rows += count;
    this.bits.length = (this.rows + 7) >> 3;
  }

  take(): { nullBitmap: Uint8Array | undefined; nullCount: number } {
    const nullCount = this.nullCount;
    const bytes = this.bits.take();
    this.rows = 0;
    this.nullCount = 0;
    return { nullBitmap: nullCount > 0 ? bytes : undefined, nullCount };
  }
}

function validityMask(vector: Vector, rows: number): Uint8Array | null {
  return bindings.vector_get_validity(vector, Math.ceil(rows / 64) * 8) ?? null;
}

const isValid = (mask: Uint8Array | null, row: number): boolean => !mask || (mask[row >> 3] & (1 << (row & 7))) !== 0;

/** Accumulates rows of one column. */
interface ColumnBuilder {
  /** Appends rows [start, start + count) of a vector. */
  append(vector: Vector, start: number, count: number): void;
  readonly byteLength: number;
  /** The rows appended since the last flush, as Arrow data. */
  flush(): Data;
}

abstract class ValidityBuilder implements ColumnBuilder {
  protected readonly validity = new Validity();
  protected rows = 0;
  constructor(readonly type: DataType) {}
  append(vector: Vector, start: number, count: number): void {
    const mask = validityMask(vector, start + count);
    this.validity.appendFrom(mask, start, count);
    this.appendValues(vector, mask, start, count);
    this.rows += count;
  }
  protected abstract appendValues(vector: Vector, mask: Uint8Array | null, start: number, count: number): void;
  abstract readonly byteLength: number;
  abstract flush(): Data;
  protected takeCommon(): { length: number; nullBitmap: Uint8Array | undefined; nullCount: number } {
    const length = this.rows;
    this.rows = 0;
    return { length, ...this.validity.take() };
  }
}

/** Integers, floats, dates and times: a straight copy. */
class FixedWidthBuilder extends ValidityBuilder {
  private readonly values = new Bytes();
  constructor(
    type: DataType,
    private readonly width: number,
  ) {
    super(type);
  }
  protected appendValues(vector: Vector, _mask: Uint8Array | null, start: number, count: number): void {
    const data = bindings.vector_get_data(vector, (start + count) * this.width);
    this.values.append(data.subarray(start * this.width, (start + count) * this.width));
  }
  get byteLength(): number {
    return this.values.length + (this.rows >> 3);
  }
  flush(): Data {
    const common = this.takeCommon();
    const bytes = this.values.take();
    const ArrayType = (this.type as unknown as { ArrayType: TypedArrayConstructor }).ArrayType;
    const values = new ArrayType(bytes.buffer as ArrayBuffer, 0, bytes.byteLength / ArrayType.BYTES_PER_ELEMENT);
    return makeData({ type: this.type as never, ...common, data: values as never });
  }
}

/** Timestamps of any unit, scaled to nanoseconds. */
class TimestampBuilder extends ValidityBuilder {
  private readonly values = new Bytes();
  constructor(
    type: DataType,
    private readonly factor: bigint,
  ) {
    super(type);
  }
  protected appendValues(vector: Vector, _mask: Uint8Array | null, start: number, count: number): void {
    const data = bindings.vector_get_data(vector, (start + count) * 8);
    this.values.reserve(count * 8);
    const offset = this.values.length;
    this.values.bytes.set(data.subarray(start * 8, (start + count) * 8), offset);
    this.values.length += count * 8;
    if (this.factor !== 1n) {
      const view = new BigInt64Array(this.values.bytes.buffer, offset, count);
      const factor = this.factor;
      for (let i = 0; i < count; i++) view[i] *= factor;
    }
  }
  get byteLength(): number {
    return this.values.length;
  }
  flush(): Data {
    const common = this.takeCommon();
    const bytes = this.values.take();
    return makeData({
      type: this.type as never,
      ...common,
      data: new BigInt64Array(bytes.buffer, 0, bytes.byteLength / 8) as never,
    });
  }
}

/** DuckDB BOOLEAN is a byte per value; Arrow packs bits. */
class BoolBuilder extends ValidityBuilder {
  private readonly bits = new Validity();
  protected appendValues(vector: Vector, _mask: Uint8Array | null, start: number, count: number): void {
    const data = bindings.vector_get_data(vector, start + count);
    const packed = new Uint8Array((count + 7) >> 3);
    for (let i = 0; i < count; i++) if (data[start + i]) packed[i >> 3] |= 1 << (i & 7);
    this.bits.appendFrom(packed, 0, count);
  }
  get byteLength(): number {
    return this.rows >> 2;
  }
  flush(): Data {
    const common = this.takeCommon();
    const { nullBitmap } = this.bits.take();
    return makeData({
      type: this.type as never,
      ...common,
      data: (nullBitmap ?? new Uint8Array((common.length + 7) >> 3).fill(0xff)) as never,
    });
  }
}

/** Decimals of any DuckDB width and HUGEINT, as 128-bit little-endian two's complement. */
class Decimal128Builder extends ValidityBuilder {
  private readonly values = new Bytes();
  constructor(
    type: DataType,
    private readonly sourceWidth: 2 | 4 | 8 | 16,
  ) {
    super(type);
  }
  protected appendValues(vector: Vector, _mask: Uint8Array | null, start: number, count: number): void {
    const w = this.sourceWidth;
    const data = bindings.vector_get_data(vector, (start + count) * w);
    this.values.reserve(count * 16);
    if (w === 16) {
      this.values.append(data.subarray(start * 16, (start + count) * 16));
      return;
    }
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const out = new BigInt64Array(this.values.bytes.buffer, this.values.length, count * 2);
    for (let i = 0; i < count; i++) {
      const at = (start + i) * w;
      const value =
        w === 8 ? view.getBigInt64(at, true) : BigInt(w === 4 ? view.getInt32(at, true) : view.getInt16(at, true));
      out[i * 2] = value;
      out[i * 2 + 1] = value < 0n ? -1n : 0n;
    }
    this.values.length += count * 16;
  }
  get byteLength(): number {
    return this.values.length;
  }
  flush(): Data {
    const common = this.takeCommon();
    const bytes = this.values.take();
    return makeData({
      type: this.type as never,
      ...common,
      data: new Uint32Array(bytes.buffer, 0, bytes.byteLength / 4) as never,
    });
  }
}

/** Variable-length values: offsets and bytes. */
abstract class VarBinaryBuilder extends ValidityBuilder {
  protected readonly data = new Bytes();
  private offsets = new Int32Array(1024);
  get byteLength(): number {
    return this.data.length + this.rows * 4;
  }
  protected pushOffset(row: number): void {
    if (row + 1 >= this.offsets.length) {
      const grown = new Int32Array(this.offsets.length * 2);
      grown.set(this.offsets);
      this.offsets = grown;
    }
    this.offsets[row + 1] = this.data.length;
  }
  flush(): Data {
    const common = this.takeCommon();
    const valueOffsets = this.offsets.slice(0, common.length + 1);
    this.offsets[0] = 0;
    return makeData({ type: this.type as never, ...common, valueOffsets, data: this.data.take() } as never);
  }
}

/** VARCHAR and BLOB: 16-byte string_t slots, inline up to 12 bytes. */
class StringBuilder extends VarBinaryBuilder {
  protected appendValues(vector: Vector, mask: Uint8Array | null, start: number, count: number): void {
    const slots = bindings.vector_get_data(vector, (start + count) * 16);
    const view = new DataView(slots.buffer, slots.byteOffset, slots.byteLength);
    for (let i = 0; i < count; i++) {
      const row = start + i;
      if (isValid(mask, row)) {
        const at = row * 16;
        const length = view.getUint32(at, true);
        if (length <= 12) {
          this.data.reserve(length);
          this.data.bytes.set(slots.subarray(at + 4, at + 4 + length), this.data.length);
          this.data.length += length;
        } else {
          this.data.append(
            bindings.get_data_from_pointer(slots.buffer as ArrayBuffer, slots.byteOffset + at + 8, length),
          );
        }
      }
      this.pushOffset(this.rows + i);
    }
  }
}

/** ENUM kept as a dictionary: Int32 indices over one dictionary shared by every batch. */
class EnumDictionaryBuilder extends ValidityBuilder {
  private readonly indices = new Bytes();
  private readonly dictionary: Vector_;
  constructor(
    type: DataType,
    values: readonly string[],
    private readonly indexWidth: number,
  ) {
    super(type);
    this.dictionary = vectorFromArray([...values], new Utf8());
  }
  protected appendValues(vector: Vector, _mask: Uint8Array | null, start: number, count: number): void {
    const data = bindings.vector_get_data(vector, (start + count) * this.indexWidth);
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    this.indices.reserve(count * 4);
    const out = new Int32Array(this.indices.bytes.buffer, this.indices.length, count);
    for (let i = 0; i < count; i++) {
      const at = (start + i) * this.indexWidth;
      out[i] =
        this.indexWidth === 1
          ? view.getUint8(at)
          : this.indexWidth === 2
            ? view.getUint16(at, true)
            : view.getUint32(at, true);
    }
    this.indices.length += count * 4;
  }
  get byteLength(): number {
    return this.indices.length;
  }
  flush(): Data {
    const common = this.takeCommon();
    const bytes = this.indices.take();
    const data = new Int32Array(bytes.buffer, 0, bytes.byteLength / 4);
    return makeData({ type: this.type as never, ...common, data, dictionary: this.dictionary } as never);
  }
}

/** ENUM: indices into the type's values, sent as text. */
class EnumBuilder extends VarBinaryBuilder {
  private readonly encoded: Uint8Array[];
  constructor(
    type: DataType,
    values: readonly string[],
    private readonly indexWidth: number,
  ) {
    super(type);
    this.encoded = values.map((value) => new TextEncoder().encode(value));
  }
  protected appendValues(vector: Vector, mask: Uint8Array | null, start: number, count: number): void {
    const data = bindings.vector_get_data(vector, (start + count) * this.indexWidth);
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    for (let i = 0; i < count; i++) {
      const row = start + i;
      if (isValid(mask, row)) {
        const at = row * this.indexWidth;
        const index =
          this.indexWidth === 1
            ? view.getUint8(at)
            : this.indexWidth === 2
              ? view.getUint16(at, true)
              : view.getUint32(at, true);
        this.data.append(this.encoded[index]);
      }
      this.pushOffset(this.rows + i);
    }
  }
}

/** Types sent as their text form, read value by value through the DuckDB Node API. */
class TextBuilder extends VarBinaryBuilder {
  constructor(
    type: DataType,
    private readonly duckType: DuckDBType,
  ) {
    super(type);
  }
  protected appendValues(vector: Vector, mask: Uint8Array | null, start: number, count: number): void {
    const values = DuckDBVector.create(vector, start + count, this.duckType);
    const encoder = new TextEncoder();
    for (let i = 0; i < count; i++) {
      const row = start + i;
      if (isValid(mask, row)) this.data.append(encoder.encode(String(values.getItem(row))));
      this.pushOffset(this.rows + i);
    }
  }
}

/** LIST and MAP: list_entry_t (offset, length) slots over a child vector. */
class ListBuilder extends ValidityBuilder {
  private offsets = new Int32Array(1024);
  private childRows = 0;
  constructor(
    type: DataType,
    private readonly child: ColumnBuilder,
  ) {
    super(type);
  }
  protected appendValues(vector: Vector, mask: Uint8Array | null, start: number, count: number): void {
    const entries = bindings.vector_get_data(vector, (start + count) * 16);
    const view = new DataView(entries.buffer, entries.byteOffset, entries.byteLength);
    const childVector = bindings.list_vector_get_child(vector);
    let runStart = -1;
    let runEnd = -1;
    for (let i = 0; i < count; i++) {
      const row = start + i;
      if (isValid(mask, row)) {
        const offset = Number(view.getBigUint64(row * 16, true));
        const length = Number(view.getBigUint64(row * 16 + 8, true));
        if (offset === runEnd) runEnd += length;
        else {
          if (runEnd > runStart) this.child.append(childVector, runStart, runEnd - runStart);
          runStart = offset;
          runEnd = offset + length;
        }
        this.childRows += length;
      }
      if (this.rows + i + 1 >= this.offsets.length) {
        const grown = new Int32Array(this.offsets.length * 2);
        grown.set(this.offsets);
        this.offsets = grown;
      }
      this.offsets[this.rows + i + 1] = this.childRows;
    }
    if (runEnd > runStart) this.child.append(childVector, runStart, runEnd - runStart);
  }
  get byteLength(): number {
    return this.rows * 4 + this.child.byteLength;
  }
  flush(): Data {
    const common = this.takeCommon();
    const valueOffsets = this.offsets.slice(0, common.length + 1);
    this.offsets[0] = 0;
    this.childRows = 0;
    return makeData({ type: this.type as never, ...common, valueOffsets, child: this.child.flush() } as never);
  }
}

class StructBuilder extends ValidityBuilder {
  constructor(
    type: DataType,
    private readonly children: ColumnBuilder[],
  ) {
    super(type);
  }
  protected appendValues(vector: Vector, _mask: Uint8Array | null, start: number, count: number): void {
    this.children.forEach((child, i) => child.append(bindings.struct_vector_get_child(vector, i), start, count));
  }
  get byteLength(): number {
    return this.children.reduce((sum, child) => sum + child.byteLength, 0);
  }
  flush(): Data {
    const common = this.takeCommon();
    return makeData({ type: this.type as never, ...common, children: this.children.map((c) => c.flush()) } as never);
  }
}

class NullBuilder implements ColumnBuilder {
  private rows = 0;
  constructor(private readonly type: DataType) {}
  append(_vector: Vector, _start: number, count: number): void {
    this.rows += count;
  }
  readonly byteLength = 0;
  flush(): Data {
    const length = this.rows;
    this.rows = 0;
    return makeData({ type: this.type as never, length, nullCount: length } as never);
  }
}

function columnBuilder(duckType: DuckDBType, type: DataType = arrowType(duckType)): ColumnBuilder {
  const id = duckType.typeId;
  const width = fixedWidths[id];
  if (width !== undefined) return new FixedWidthBuilder(type, width);
  const factor = timestampFactors[id];
  if (factor !== undefined) return new TimestampBuilder(type, factor);
  switch (id) {
    case DuckDBTypeId.BOOLEAN:
      return new BoolBuilder(type);
    case DuckDBTypeId.VARCHAR:
    case DuckDBTypeId.BLOB:
      return new StringBuilder(type);
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.DECIMAL:
      return new Decimal128Builder(type, decimalStorageWidth(duckType));
    case DuckDBTypeId.ENUM: {
      const { values, internalTypeId } = duckType as unknown as { values: string[]; internalTypeId: DuckDBTypeId };
      const width = internalTypeId === DuckDBTypeId.UTINYINT ? 1 : internalTypeId === DuckDBTypeId.USMALLINT ? 2 : 4;
      return DataType.isDictionary(type)
        ? new EnumDictionaryBuilder(type, values, width)
        : new EnumBuilder(type, values, width);
    }
    case DuckDBTypeId.LIST: {
      const { valueType } = duckType as unknown as { valueType: DuckDBType };
      return new ListBuilder(type, columnBuilder(valueType, type.children[0].type));
    }
    case DuckDBTypeId.MAP: {
      const { keyType, valueType } = duckType as unknown as { keyType: DuckDBType; valueType: DuckDBType };
      const entries = type.children[0].type;
      const entryBuilder = new StructBuilder(entries, [
        columnBuilder(keyType, entries.children[0].type),
        columnBuilder(valueType, entries.children[1].type),
      ]);
      return new ListBuilder(type, entryBuilder);
    }
    case DuckDBTypeId.STRUCT: {
      const { entryTypes } = duckType as unknown as { entryTypes: DuckDBType[] };
      return new StructBuilder(
        type,
        entryTypes.map((t, i) => columnBuilder(t, type.children[i].type)),
      );
    }
    case DuckDBTypeId.SQLNULL:
    case DuckDBTypeId.ANY:
      return new NullBuilder(type);
    default:
      return new TextBuilder(type, duckType);
  }
}

/** Converts DuckDB chunks to Arrow record batches of about `targetBytes` each. */
export class ChunkConverter {
  private readonly builders: ColumnBuilder[];
  private rows = 0;

  constructor(
    readonly schema: Schema,
    types: readonly DuckDBType[],
    private readonly targetBytes: number,
  ) {
    this.builders = types.map((type, i) => columnBuilder(type, schema.fields[i].type));
  }

  /** Adds a chunk's rows; returns a batch when the target size has been reached. */
  add(chunk: bindings.DataChunk, rowCount: number): RecordBatch | null {
    this.builders.forEach((builder, i) => builder.append(bindings.data_chunk_get_vector(chunk, i), 0, rowCount));
    this.rows += rowCount;
    return this.pendingBytes() >= this.targetBytes ? this.flush() : null;
  }

  /** The rows added since the last batch, if any. */
  flush(): RecordBatch | null {
    if (this.rows === 0) return null;
    const length = this.rows;
    this.rows = 0;
    const children = this.builders.map((b) => b.flush());
    return new RecordBatch(
      this.schema,
      makeData({ type: new Struct(this.schema.fields), length, nullCount: 0, children }),
    );
  }

  private pendingBytes(): number {
    let bytes = 0;
    for (const builder of this.builders) bytes += builder.byteLength;
    return bytes;
  }
}
