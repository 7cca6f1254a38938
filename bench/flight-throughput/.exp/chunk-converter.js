import bindings from '@duckdb/node-bindings';
import { DuckDBTypeId, DuckDBVector } from '@duckdb/node-api';
import { DataType, RecordBatch, Struct, Utf8, makeData, vectorFromArray } from 'apache-arrow';
import { arrowType } from './arrow-types.js';
/** Growable byte buffer. */
class Bytes {
    bytes = new Uint8Array(1024);
    length = 0;
    reserve(extra) {
        const needed = this.length + extra;
        if (needed <= this.bytes.byteLength)
            return;
        let size = this.bytes.byteLength * 2;
        while (size < needed)
            size *= 2;
        const grown = new Uint8Array(size);
        grown.set(this.bytes.subarray(0, this.length));
        this.bytes = grown;
    }
    append(source) {
        this.reserve(source.byteLength);
        this.bytes.set(source, this.length);
        this.length += source.byteLength;
    }
    take() {
        if (process.env.TAKE_NOCOPY) {
            const out = this.bytes.subarray(0, this.length);
            this.bytes = new Uint8Array(this.bytes.byteLength);
            this.length = 0;
            return out;
        }
        const out = this.bytes.slice(0, this.length);
        this.length = 0;
        return out;
    }
}
/** Arrow validity bitmap built from DuckDB validity masks (same bit order). */
class Validity {
    bits = new Bytes();
    rows = 0;
    nullCount = 0;
    appendFrom(mask, start, count) {
        this.bits.reserve(((this.rows + count + 7) >> 3) - this.bits.length + 1);
        const out = this.bits.bytes;
        if ((this.rows & 7) === 0 && (start & 7) === 0) {
            const first = this.rows >> 3;
            const bytes = (count + 7) >> 3;
            if (mask)
                out.set(mask.subarray(start >> 3, (start >> 3) + bytes), first);
            else
                out.fill(0xff, first, first + bytes);
            if (mask)
                for (let i = 0; i < count; i++)
                    if ((mask[(start + i) >> 3] & (1 << ((start + i) & 7))) === 0)
                        this.nullCount++;
        }
        else {
            for (let i = 0; i < count; i++) {
                const valid = !mask || (mask[(start + i) >> 3] & (1 << ((start + i) & 7))) !== 0;
                const bit = this.rows + i;
                if (valid)
                    out[bit >> 3] |= 1 << (bit & 7);
                else {
                    out[bit >> 3] &= ~(1 << (bit & 7));
                    this.nullCount++;
                }
            }
        }
        this.rows += count;
        this.bits.length = (this.rows + 7) >> 3;
    }
    take() {
        const nullCount = this.nullCount;
        const bytes = this.bits.take();
        this.rows = 0;
        this.nullCount = 0;
        return { nullBitmap: nullCount > 0 ? bytes : undefined, nullCount };
    }
}
function validityMask(vector, rows) {
    return bindings.vector_get_validity(vector, Math.ceil(rows / 64) * 8) ?? null;
}
const isValid = (mask, row) => !mask || (mask[row >> 3] & (1 << (row & 7))) !== 0;
class ValidityBuilder {
    type;
    validity = new Validity();
    rows = 0;
    constructor(type) {
        this.type = type;
    }
    append(vector, start, count) {
        const mask = validityMask(vector, start + count);
        this.validity.appendFrom(mask, start, count);
        this.appendValues(vector, mask, start, count);
        this.rows += count;
    }
    takeCommon() {
        const length = this.rows;
        this.rows = 0;
        return { length, ...this.validity.take() };
    }
}
/** Integers, floats, dates and times: a straight copy. */
class FixedWidthBuilder extends ValidityBuilder {
    width;
    values = new Bytes();
    constructor(type, width) {
        super(type);
        this.width = width;
    }
    appendValues(vector, _mask, start, count) {
        const data = bindings.vector_get_data(vector, (start + count) * this.width);
        this.values.append(data.subarray(start * this.width, (start + count) * this.width));
    }
    get byteLength() {
        return this.values.length + (this.rows >> 3);
    }
    flush() {
        const common = this.takeCommon();
        const bytes = this.values.take();
        const ArrayType = this.type.ArrayType;
        const values = new ArrayType(bytes.buffer, 0, bytes.byteLength / ArrayType.BYTES_PER_ELEMENT);
        return makeData({ type: this.type, ...common, data: values });
    }
}
/** Timestamps of any unit, scaled to nanoseconds. */
class TimestampBuilder extends ValidityBuilder {
    factor;
    values = new Bytes();
    constructor(type, factor) {
        super(type);
        this.factor = factor;
    }
    appendValues(vector, _mask, start, count) {
        const data = bindings.vector_get_data(vector, (start + count) * 8);
        this.values.reserve(count * 8);
        const offset = this.values.length;
        this.values.bytes.set(data.subarray(start * 8, (start + count) * 8), offset);
        this.values.length += count * 8;
        if (this.factor !== 1n) {
            const view = new BigInt64Array(this.values.bytes.buffer, offset, count);
            const factor = this.factor;
            for (let i = 0; i < count; i++)
                view[i] *= factor;
        }
    }
    get byteLength() {
        return this.values.length;
    }
    flush() {
        const common = this.takeCommon();
        const bytes = this.values.take();
        return makeData({ type: this.type, ...common, data: new BigInt64Array(bytes.buffer, 0, bytes.byteLength / 8) });
    }
}
/** DuckDB BOOLEAN is a byte per value; Arrow packs bits. */
class BoolBuilder extends ValidityBuilder {
    bits = new Validity();
    appendValues(vector, _mask, start, count) {
        const data = bindings.vector_get_data(vector, start + count);
        const packed = new Uint8Array((count + 7) >> 3);
        for (let i = 0; i < count; i++)
            if (data[start + i])
                packed[i >> 3] |= 1 << (i & 7);
        this.bits.appendFrom(packed, 0, count);
    }
    get byteLength() {
        return this.rows >> 2;
    }
    flush() {
        const common = this.takeCommon();
        const { nullBitmap } = this.bits.take();
        return makeData({ type: this.type, ...common, data: (nullBitmap ?? new Uint8Array((common.length + 7) >> 3).fill(0xff)) });
    }
}
/** Decimals of any DuckDB width and HUGEINT, as 128-bit little-endian two's complement. */
class Decimal128Builder extends ValidityBuilder {
    sourceWidth;
    values = new Bytes();
    constructor(type, sourceWidth) {
        super(type);
        this.sourceWidth = sourceWidth;
    }
    appendValues(vector, _mask, start, count) {
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
            const value = w === 8 ? view.getBigInt64(at, true) : BigInt(w === 4 ? view.getInt32(at, true) : view.getInt16(at, true));
            out[i * 2] = value;
            out[i * 2 + 1] = value < 0n ? -1n : 0n;
        }
        this.values.length += count * 16;
    }
    get byteLength() {
        return this.values.length;
    }
    flush() {
        const common = this.takeCommon();
        const bytes = this.values.take();
        return makeData({ type: this.type, ...common, data: new Uint32Array(bytes.buffer, 0, bytes.byteLength / 4) });
    }
}
/** Variable-length values: offsets and bytes. */
class VarBinaryBuilder extends ValidityBuilder {
    data = new Bytes();
    offsets = new Int32Array(1024);
    get byteLength() {
        return this.data.length + this.rows * 4;
    }
    pushOffset(row) {
        if (row + 1 >= this.offsets.length) {
            const grown = new Int32Array(this.offsets.length * 2);
            grown.set(this.offsets);
            this.offsets = grown;
        }
        this.offsets[row + 1] = this.data.length;
    }
    flush() {
        const common = this.takeCommon();
        const valueOffsets = this.offsets.slice(0, common.length + 1);
        this.offsets[0] = 0;
        return makeData({ type: this.type, ...common, valueOffsets, data: this.data.take() });
    }
}
/** VARCHAR and BLOB: 16-byte string_t slots, inline up to 12 bytes. */
class StringBuilder extends VarBinaryBuilder {
    appendValues(vector, mask, start, count) {
        const slots = bindings.vector_get_data(vector, (start + count) * 16);
        const src = new Uint8Array(slots.buffer, slots.byteOffset, slots.byteLength);
        const view = new DataView(slots.buffer, slots.byteOffset, slots.byteLength);
        const base = this.rows;
        if (base + count + 1 > this.offsets.length) {
            let size = this.offsets.length * 2;
            while (size < base + count + 1) size *= 2;
            const grown = new Int32Array(size);
            grown.set(this.offsets);
            this.offsets = grown;
        }
        const offsets = this.offsets;
        const data = this.data;
        data.reserve(count * 12);
        let out = data.bytes;
        let pos = data.length;
        for (let i = 0; i < count; i++) {
            const row = start + i;
            if (mask === null || (mask[row >> 3] & (1 << (row & 7))) !== 0) {
                const at = row * 16;
                const length = view.getUint32(at, true);
                if (length <= 12) {
                    for (let k = 0; k < length; k++) out[pos + k] = src[at + 4 + k];
                    pos += length;
                } else {
                    data.length = pos;
                    data.append(bindings.get_data_from_pointer(slots.buffer, slots.byteOffset + at + 8, length));
                    data.reserve((count - i) * 12);
                    out = data.bytes;
                    pos = data.length;
                }
            }
            offsets[base + i + 1] = pos;
        }
        data.length = pos;
    }
}
/** ENUM kept as a dictionary: Int32 indices over one dictionary shared by every batch. */
class EnumDictionaryBuilder extends ValidityBuilder {
    indexWidth;
    indices = new Bytes();
    dictionary;
    constructor(type, values, indexWidth) {
        super(type);
        this.indexWidth = indexWidth;
        this.dictionary = vectorFromArray([...values], new Utf8());
    }
    appendValues(vector, _mask, start, count) {
        const data = bindings.vector_get_data(vector, (start + count) * this.indexWidth);
        const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
        this.indices.reserve(count * 4);
        const out = new Int32Array(this.indices.bytes.buffer, this.indices.length, count);
        for (let i = 0; i < count; i++) {
            const at = (start + i) * this.indexWidth;
            out[i] = this.indexWidth === 1 ? view.getUint8(at) : this.indexWidth === 2 ? view.getUint16(at, true) : view.getUint32(at, true);
        }
        this.indices.length += count * 4;
    }
    get byteLength() {
        return this.indices.length;
    }
    flush() {
        const common = this.takeCommon();
        const bytes = this.indices.take();
        const data = new Int32Array(bytes.buffer, 0, bytes.byteLength / 4);
        return makeData({ type: this.type, ...common, data, dictionary: this.dictionary });
    }
}
/** ENUM: indices into the type's values, sent as text. */
class EnumBuilder extends VarBinaryBuilder {
    indexWidth;
    encoded;
    constructor(type, values, indexWidth) {
        super(type);
        this.indexWidth = indexWidth;
        this.encoded = values.map((value) => new TextEncoder().encode(value));
    }
    appendValues(vector, mask, start, count) {
        const data = bindings.vector_get_data(vector, (start + count) * this.indexWidth);
        const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
        for (let i = 0; i < count; i++) {
            const row = start + i;
            if (isValid(mask, row)) {
                const at = row * this.indexWidth;
                const index = this.indexWidth === 1 ? view.getUint8(at) : this.indexWidth === 2 ? view.getUint16(at, true) : view.getUint32(at, true);
                this.data.append(this.encoded[index]);
            }
            this.pushOffset(this.rows + i);
        }
    }
}
/** Types sent as their text form, read value by value through the DuckDB Node API. */
class TextBuilder extends VarBinaryBuilder {
    duckType;
    constructor(type, duckType) {
        super(type);
        this.duckType = duckType;
    }
    appendValues(vector, mask, start, count) {
        const values = DuckDBVector.create(vector, start + count, this.duckType);
        const encoder = new TextEncoder();
        for (let i = 0; i < count; i++) {
            const row = start + i;
            if (isValid(mask, row))
                this.data.append(encoder.encode(String(values.getItem(row))));
            this.pushOffset(this.rows + i);
        }
    }
}
/** LIST and MAP: list_entry_t (offset, length) slots over a child vector. */
class ListBuilder extends ValidityBuilder {
    child;
    offsets = new Int32Array(1024);
    childRows = 0;
    constructor(type, child) {
        super(type);
        this.child = child;
    }
    appendValues(vector, mask, start, count) {
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
                if (offset === runEnd)
                    runEnd += length;
                else {
                    if (runEnd > runStart)
                        this.child.append(childVector, runStart, runEnd - runStart);
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
        if (runEnd > runStart)
            this.child.append(childVector, runStart, runEnd - runStart);
    }
    get byteLength() {
        return this.rows * 4 + this.child.byteLength;
    }
    flush() {
        const common = this.takeCommon();
        const valueOffsets = this.offsets.slice(0, common.length + 1);
        this.offsets[0] = 0;
        this.childRows = 0;
        return makeData({ type: this.type, ...common, valueOffsets, child: this.child.flush() });
    }
}
class StructBuilder extends ValidityBuilder {
    children;
    constructor(type, children) {
        super(type);
        this.children = children;
    }
    appendValues(vector, _mask, start, count) {
        this.children.forEach((child, i) => child.append(bindings.struct_vector_get_child(vector, i), start, count));
    }
    get byteLength() {
        return this.children.reduce((sum, child) => sum + child.byteLength, 0);
    }
    flush() {
        const common = this.takeCommon();
        return makeData({ type: this.type, ...common, children: this.children.map((c) => c.flush()) });
    }
}
class NullBuilder {
    type;
    rows = 0;
    constructor(type) {
        this.type = type;
    }
    append(_vector, _start, count) {
        this.rows += count;
    }
    byteLength = 0;
    flush() {
        const length = this.rows;
        this.rows = 0;
        return makeData({ type: this.type, length, nullCount: length });
    }
}
const fixedWidths = {
    [DuckDBTypeId.TINYINT]: 1, [DuckDBTypeId.SMALLINT]: 2, [DuckDBTypeId.INTEGER]: 4, [DuckDBTypeId.BIGINT]: 8,
    [DuckDBTypeId.UTINYINT]: 1, [DuckDBTypeId.USMALLINT]: 2, [DuckDBTypeId.UINTEGER]: 4, [DuckDBTypeId.UBIGINT]: 8,
    [DuckDBTypeId.FLOAT]: 4, [DuckDBTypeId.DOUBLE]: 8, [DuckDBTypeId.DATE]: 4, [DuckDBTypeId.TIME]: 8, [DuckDBTypeId.TIME_NS]: 8,
};
const timestampFactors = {
    [DuckDBTypeId.TIMESTAMP_S]: 1000000000n, [DuckDBTypeId.TIMESTAMP_MS]: 1000000n, [DuckDBTypeId.TIMESTAMP]: 1000n,
    [DuckDBTypeId.TIMESTAMP_TZ]: 1000n, [DuckDBTypeId.TIMESTAMP_NS]: 1n,
};
function columnBuilder(duckType, type = arrowType(duckType)) {
    const id = duckType.typeId;
    const width = fixedWidths[id];
    if (width !== undefined)
        return new FixedWidthBuilder(type, width);
    const factor = timestampFactors[id];
    if (factor !== undefined)
        return new TimestampBuilder(type, factor);
    switch (id) {
        case DuckDBTypeId.BOOLEAN: return new BoolBuilder(type);
        case DuckDBTypeId.VARCHAR:
        case DuckDBTypeId.BLOB: return new StringBuilder(type);
        case DuckDBTypeId.HUGEINT: return new Decimal128Builder(type, 16);
        case DuckDBTypeId.DECIMAL: {
            const w = duckType.width;
            return new Decimal128Builder(type, w <= 4 ? 2 : w <= 9 ? 4 : w <= 18 ? 8 : 16);
        }
        case DuckDBTypeId.ENUM: {
            const { values, internalTypeId } = duckType;
            const width = internalTypeId === DuckDBTypeId.UTINYINT ? 1 : internalTypeId === DuckDBTypeId.USMALLINT ? 2 : 4;
            return DataType.isDictionary(type) ? new EnumDictionaryBuilder(type, values, width) : new EnumBuilder(type, values, width);
        }
        case DuckDBTypeId.LIST: {
            const { valueType } = duckType;
            return new ListBuilder(type, columnBuilder(valueType, type.children[0].type));
        }
        case DuckDBTypeId.MAP: {
            const { keyType, valueType } = duckType;
            const entries = type.children[0].type;
            const entryBuilder = new StructBuilder(entries, [
                columnBuilder(keyType, entries.children[0].type),
                columnBuilder(valueType, entries.children[1].type),
            ]);
            return new ListBuilder(type, entryBuilder);
        }
        case DuckDBTypeId.STRUCT: {
            const { entryTypes } = duckType;
            return new StructBuilder(type, entryTypes.map((t, i) => columnBuilder(t, type.children[i].type)));
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
    schema;
    targetBytes;
    builders;
    rows = 0;
    constructor(schema, types, targetBytes) {
        this.schema = schema;
        this.targetBytes = targetBytes;
        this.builders = types.map((type, i) => columnBuilder(type, schema.fields[i].type));
    }
    /** Adds a chunk's rows; returns a batch when the target size has been reached. */
    add(chunk, rowCount) {
        this.builders.forEach((builder, i) => builder.append(bindings.data_chunk_get_vector(chunk, i), 0, rowCount));
        this.rows += rowCount;
        return this.pendingBytes() >= this.targetBytes ? this.flush() : null;
    }
    /** The rows added since the last batch, if any. */
    flush() {
        if (this.rows === 0)
            return null;
        const length = this.rows;
        this.rows = 0;
        const children = this.builders.map((b) => b.flush());
        return new RecordBatch(this.schema, makeData({ type: new Struct(this.schema.fields), length, nullCount: 0, children }));
    }
    pendingBytes() {
        let bytes = 0;
        for (const builder of this.builders)
            bytes += builder.byteLength;
        return bytes;
    }
}
//# sourceMappingURL=chunk-converter.js.map