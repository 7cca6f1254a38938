// A validating scan of an ExportLogsServiceRequest protobuf body that builds no objects: it walks the wire
// format once and says, per ResourceLogs, where its bytes are, how many records it holds and their time
// span. It answers only for bodies it can vouch for: every field known and of its wire type, no singular
// field twice, every string valid UTF-8, every time set and in range, ids of their size, AnyValues nested
// at most SCAN_MAX_DEPTH deep, one AnyValue field set at most. For such a body decodeLogs cannot fail on
// the records (the resources are checked by decoding them alone, see resourceSkeleton), so the body can
// be stored as received and decoded at materialization. Anything else gets null: the caller decodes the
// request the slow way, which refuses poison with its precise message.
import { isUtf8 } from 'node:buffer';
import { MAX_TIME_UNIX_NANO } from './otlp-fields.js';

/** One ResourceLogs of a scanned body. */
export interface ScannedResourceLogs {
  /** Where the ResourceLogs message's bytes are: body.subarray(...bytes). */
  readonly bytes: readonly [number, number];
  /** Where its `resource` (and `schema_url`) fields are, to decode them alone; -1 when absent. */
  readonly resource: readonly [number, number];
  readonly schemaUrl: readonly [number, number];
  readonly records: number;
  /** The smallest and largest record time (time_unix_nano, else observed_time_unix_nano). */
  readonly begin: bigint;
  readonly end: bigint;
}

/** Nesting of AnyValues (arrays, kvlists) the scan vouches for; deeper goes the slow way (which allows 32). */
const SCAN_MAX_DEPTH = 16;
const MAX_HI = Number(MAX_TIME_UNIX_NANO >> 32n);
const MAX_LO = Number(MAX_TIME_UNIX_NANO & 0xffffffffn);

const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const FIXED32 = 5;

/** Thrown inside the scan to give up on a body; never escapes scanLogs. */
class NotScannable extends Error {}
const giveUp = new NotScannable();

// The scan's cursor: module state rather than objects, so the hot loop allocates nothing.
let buf: Uint8Array = new Uint8Array(0);
let pos = 0;

function varint(): number {
  if (pos < buf.length && buf[pos] < 0x80) return buf[pos++]; // one byte: nearly every tag, most lengths
  let result = 0;
  let multiplier = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw giveUp;
    const byte = buf[pos++];
    result += (byte & 0x7f) * multiplier;
    if (byte < 0x80) return result; // past 2^53 inexact, but then too large for any length or tag we accept
    multiplier *= 128;
  }
  throw giveUp;
}

/** A length-delimited field's end; pos is left at its start. */
function lengthEnd(limit: number): number {
  const length = varint();
  const end = pos + length;
  if (end > limit) throw giveUp;
  return end;
}

function skipVarint(): void {
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw giveUp;
    if (buf[pos++] < 0x80) return;
  }
  throw giveUp;
}

function utf8(end: number): void {
  let i = pos;
  // ASCII (most strings) four bytes at a time, then byte by byte from the first word holding a high byte.
  while (i + 4 <= end && ((buf[i] | buf[i + 1] | buf[i + 2] | buf[i + 3]) & 0x80) === 0) i += 4;
  for (; i < end; i++) {
    if (buf[i] >= 0x80) {
      if (!isUtf8(buf.subarray(pos, end))) throw giveUp;
      break;
    }
  }
  pos = end;
}

function string(limit: number): void {
  utf8(lengthEnd(limit));
}

// A fixed64 time: read into timeHi/timeLo, refused at or past MAX_TIME_UNIX_NANO.
let timeHi = 0;
let timeLo = 0;
function time(limit: number): void {
  if (pos + 8 > limit) throw giveUp;
  timeLo = (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16) | (buf[pos + 3] << 24)) >>> 0;
  timeHi = (buf[pos + 4] | (buf[pos + 5] << 8) | (buf[pos + 6] << 16) | (buf[pos + 7] << 24)) >>> 0;
  pos += 8;
  if (timeHi > MAX_HI || (timeHi === MAX_HI && timeLo >= MAX_LO)) throw giveUp;
}

function anyValue(limit: number, depth: number): void {
  if (depth >= SCAN_MAX_DEPTH) throw giveUp;
  let set = false;
  while (pos < limit) {
    const tag = varint();
    if (set) throw giveUp; // two fields of the oneof: leave it to the decoder
    set = true;
    switch (tag) {
      case (1 << 3) | LEN: // string_value
        string(limit);
        break;
      case (2 << 3) | VARINT: // bool_value
      case (3 << 3) | VARINT: // int_value
        skipVarint();
        break;
      case (4 << 3) | FIXED64: // double_value
        if (pos + 8 > limit) throw giveUp;
        pos += 8;
        break;
      case (5 << 3) | LEN: // array_value: repeated AnyValue values = 1
      case (6 << 3) | LEN: {
        // kvlist_value: repeated KeyValue values = 1
        const end = lengthEnd(limit);
        while (pos < end) {
          if (varint() !== ((1 << 3) | LEN)) throw giveUp;
          const itemEnd = lengthEnd(end);
          if (tag === ((5 << 3) | LEN)) anyValue(itemEnd, depth + 1);
          else keyValue(itemEnd, depth + 1);
        }
        if (pos !== end) throw giveUp;
        break;
      }
      case (7 << 3) | LEN: // bytes_value
        pos = lengthEnd(limit);
        break;
      default:
        throw giveUp;
    }
  }
  if (pos !== limit) throw giveUp;
}

function keyValue(limit: number, depth: number): void {
  let key = false;
  let value = false;
  while (pos < limit) {
    const tag = varint();
    if (tag === ((1 << 3) | LEN) && !key) {
      key = true;
      string(limit);
    } else if (tag === ((2 << 3) | LEN) && !value) {
      value = true;
      anyValue(lengthEnd(limit), depth);
    } else throw giveUp;
  }
  if (pos !== limit) throw giveUp;
}

function scope(limit: number): void {
  const seen = new Uint8Array(5);
  while (pos < limit) {
    const tag = varint();
    const number = tag >>> 3;
    if (number < 1 || number > 4 || (number !== 3 && seen[number]++ > 0)) throw giveUp;
    if (number === 4) {
      if ((tag & 7) !== VARINT) throw giveUp;
      skipVarint();
      continue;
    }
    if ((tag & 7) !== LEN) throw giveUp;
    if (number === 3) keyValue(lengthEnd(limit), 0);
    else string(limit);
  }
  if (pos !== limit) throw giveUp;
}

// The current ResourceLogs's record count and time span, as (hi, lo) pairs: no bigint per record.
let records = 0;
let minHi = 0;
let minLo = 0;
let maxHi = 0;
let maxLo = 0;

const SINGULAR_RECORD_FIELDS = 0b1_1111_1011_1110; // 1, 2, 3, 5, 7, 8, 9, 10, 11, 12 (6 is repeated)

function logRecord(limit: number): void {
  let seen = 0;
  let tHi = 0;
  let tLo = 0;
  let oHi = 0;
  let oLo = 0;
  while (pos < limit) {
    const tag = varint();
    const number = tag >>> 3;
    const bit = 1 << number;
    if (number > 12 || (seen & bit & SINGULAR_RECORD_FIELDS) !== 0) throw giveUp;
    seen |= bit;
    switch (tag) {
      case (1 << 3) | FIXED64:
        time(limit);
        tHi = timeHi;
        tLo = timeLo;
        break;
      case (11 << 3) | FIXED64:
        time(limit);
        oHi = timeHi;
        oLo = timeLo;
        break;
      case (2 << 3) | VARINT: // severity_number
      case (7 << 3) | VARINT: // dropped_attributes_count
        skipVarint();
        break;
      case (3 << 3) | LEN: // severity_text
      case (12 << 3) | LEN: // event_name
        string(limit);
        break;
      case (5 << 3) | LEN: // body
        anyValue(lengthEnd(limit), 0);
        break;
      case (6 << 3) | LEN: // attributes
        keyValue(lengthEnd(limit), 0);
        break;
      case (8 << 3) | FIXED32: // flags
        if (pos + 4 > limit) throw giveUp;
        pos += 4;
        break;
      case (9 << 3) | LEN: // trace_id
      case (10 << 3) | LEN: {
        // span_id
        const end = lengthEnd(limit);
        const size = end - pos;
        if (size !== 0 && size !== (number === 9 ? 16 : 8)) throw giveUp;
        pos = end;
        break;
      }
      default:
        throw giveUp;
    }
  }
  if (pos !== limit) throw giveUp;
  // The record's time as the decoder and the payload line take it: time, else observed; never the fallback.
  if (tHi === 0 && tLo === 0) {
    tHi = oHi;
    tLo = oLo;
  }
  if (tHi === 0 && tLo === 0) throw giveUp;
  if (records === 0 || tHi < minHi || (tHi === minHi && tLo < minLo)) {
    minHi = tHi;
    minLo = tLo;
  }
  if (records === 0 || tHi > maxHi || (tHi === maxHi && tLo > maxLo)) {
    maxHi = tHi;
    maxLo = tLo;
  }
  records++;
}

function scopeLogs(limit: number): void {
  let scopeSeen = false;
  let schemaSeen = false;
  while (pos < limit) {
    const tag = varint();
    if (tag === ((2 << 3) | LEN)) logRecord(lengthEnd(limit));
    else if (tag === ((1 << 3) | LEN) && !scopeSeen) {
      scopeSeen = true;
      scope(lengthEnd(limit));
    } else if (tag === ((3 << 3) | LEN) && !schemaSeen) {
      schemaSeen = true;
      string(limit);
    } else throw giveUp;
  }
  if (pos !== limit) throw giveUp;
}

function resourceLogs(start: number, limit: number): ScannedResourceLogs {
  let resource: [number, number] = [-1, -1];
  let schemaUrl: [number, number] = [-1, -1];
  records = 0;
  minHi = minLo = maxHi = maxLo = 0; // a resource without records says 0, not the last one's span
  while (pos < limit) {
    const fieldStart = pos;
    const tag = varint();
    if (tag === ((2 << 3) | LEN)) scopeLogs(lengthEnd(limit));
    else if (tag === ((1 << 3) | LEN) && resource[0] < 0) {
      pos = lengthEnd(limit); // checked by decoding it alone (resourceSkeleton)
      resource = [fieldStart, pos];
    } else if (tag === ((3 << 3) | LEN) && schemaUrl[0] < 0) {
      pos = lengthEnd(limit);
      schemaUrl = [fieldStart, pos];
    } else throw giveUp;
  }
  if (pos !== limit) throw giveUp;
  const nanos = (hi: number, lo: number): bigint => (BigInt(hi) << 32n) | BigInt(lo);
  return { bytes: [start, limit], resource, schemaUrl, records, begin: nanos(minHi, minLo), end: nanos(maxHi, maxLo) };
}

/**
 * Scans an ExportLogsServiceRequest protobuf body; null when the scan cannot vouch for it (see the top of
 * this file), which says nothing about whether the body is valid.
 */
export function scanLogs(body: Uint8Array): ScannedResourceLogs[] | null {
  buf = body;
  pos = 0;
  const out: ScannedResourceLogs[] = [];
  try {
    while (pos < body.length) {
      if (varint() !== ((1 << 3) | LEN)) return null;
      const end = lengthEnd(body.length);
      out.push(resourceLogs(pos, end));
    }
    return out;
  } catch (error) {
    if (error === giveUp) return null;
    throw error;
  } finally {
    buf = new Uint8Array(0);
  }
}

/**
 * The native addon's scan (src/engine/native/logs-scan.cc, the same walk rule for rule) answers 11 numbers per
 * ResourceLogs: where its bytes, resource and schema URL are (-1: absent), its record count, and its smallest
 * and largest time as 32-bit halves (no bigint crosses the boundary); null when it cannot vouch for the body.
 */
export type FlatLogsScan = (body: Uint8Array) => Float64Array | null;

/** scanLogs's answer from a flat scan's. */
export function scanLogsWith(flat: FlatLogsScan): (body: Uint8Array) => ScannedResourceLogs[] | null {
  return (body) => unflattened(flat(body));
}

/**
 * The native addon's sealLogs (src/engine/native/logs-seal.cc): the flat scan, on a worker thread, and for a body
 * of one ResourceLogs with records (stored whole) the sha256 of the body and, when `compress`, the payload as
 * ingestion-service.ts's `compressed` writes it (the 0xce mark, then brotli).
 */
export type FlatLogsSeal = (
  body: Uint8Array,
  compress: boolean,
) => Promise<{ scan: Float64Array | null; digest?: Uint8Array; payload?: Uint8Array }>;

/** A body sealed off the event loop: the scan's answer, with the digest and payload when sealLogs gave them. */
export interface SealedLogs {
  readonly scanned: ScannedResourceLogs[] | null;
  /** sha256 of the body, hex. */
  readonly digest?: string;
  readonly payload?: Uint8Array;
}

/** The seal's answer in scanLogs's terms. */
export function sealLogsWith(flat: FlatLogsSeal): (body: Uint8Array, compress: boolean) => Promise<SealedLogs> {
  return async (body, compress) => sealedIn(await flat(body, compress));
}

/**
 * The native addon's sealJsonLogs (src/engine/native/logs-json.cc, logs-seal.cc): an OTLP/JSON logs body transcoded
 * to the protobuf it stands for, then sealed as FlatLogsSeal seals that (compressed); `body` and `scan` are null when
 * the transcoder or the scan does not vouch for it.
 */
export type FlatJsonLogsSeal = (
  body: Uint8Array,
) => Promise<{ body: Uint8Array | null; scan: Float64Array | null; digest?: Uint8Array; payload?: Uint8Array }>;

/** A JSON body sealed off the event loop: its protobuf bytes (null when not vouched for) and their seal. */
export interface SealedJsonLogs extends SealedLogs {
  readonly body: Uint8Array | null;
}

/** The JSON seal's answer in scanLogs's terms. */
export function sealJsonLogsWith(flat: FlatJsonLogsSeal): (body: Uint8Array) => Promise<SealedJsonLogs> {
  return async (json) => {
    const { body, ...sealed } = await flat(json);
    return { body, ...sealedIn(sealed) };
  };
}

function sealedIn(sealed: Awaited<ReturnType<FlatLogsSeal>>): SealedLogs {
  return {
    scanned: unflattened(sealed.scan),
    digest: sealed.digest && Buffer.from(sealed.digest.buffer, sealed.digest.byteOffset, 32).toString('hex'),
    payload: sealed.payload,
  };
}

function unflattened(f: Float64Array | null): ScannedResourceLogs[] | null {
  if (f === null) return null;
  const nanos = (hi: number, lo: number): bigint => (BigInt(hi) << 32n) | BigInt(lo);
  const out: ScannedResourceLogs[] = [];
  for (let i = 0; i + 11 <= f.length; i += 11)
    out.push({
      bytes: [f[i], f[i + 1]],
      resource: [f[i + 2], f[i + 3]],
      schemaUrl: [f[i + 4], f[i + 5]],
      records: f[i + 6],
      begin: nanos(f[i + 7], f[i + 8]),
      end: nanos(f[i + 9], f[i + 10]),
    });
  return out;
}

/** `message` as field 1 of a message: a ResourceLogs wrapped as an ExportLogsServiceRequest of its own. */
export function asFieldOne(message: Uint8Array): Uint8Array {
  const header: number[] = [(1 << 3) | LEN];
  let length = message.length;
  while (length >= 0x80) {
    header.push((length & 0x7f) | 0x80);
    length = Math.floor(length / 128);
  }
  header.push(length);
  const out = Buffer.allocUnsafe(header.length + message.length);
  out.set(header, 0);
  out.set(message, header.length);
  return out;
}

/**
 * An ExportLogsServiceRequest holding, for each scanned ResourceLogs, only its resource and schema URL
 * fields: decoding it checks and returns the resources exactly as decoding the whole body would.
 */
export function resourceSkeleton(body: Uint8Array, scanned: readonly ScannedResourceLogs[]): Uint8Array {
  const part = (r: ScannedResourceLogs): Uint8Array =>
    asFieldOne(
      Buffer.concat([r.resource, r.schemaUrl].filter(([start]) => start >= 0).map(([s, e]) => body.subarray(s, e))),
    );
  return Buffer.concat(scanned.map(part));
}
