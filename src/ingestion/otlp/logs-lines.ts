// A logs payload stored as received (an ExportLogsServiceRequest the scan vouched for, see logs-scan.ts)
// written straight to the NDJSON lines the log view sets read, byte for byte what decodeLogs + logLine give,
// without decoding to objects: strings are copied as UTF-8 (escaped as JSON.stringify escapes them),
// numbers formatted by JavaScript itself. It relies on what the scan guarantees (known fields of their wire
// type, one AnyValue field at most, times set); where an object's key order would differ from a JavaScript
// object's (a duplicate key, an integer-like key, a record attribute named otel.severity_text) or the body
// is an array or list, it returns null and the caller decodes the payload the slow way.

/** Thrown to give up on a payload; never escapes logsLines. */
const giveUp = new Error('not written directly');

// Input cursor and output buffer: module state, so the hot loop allocates little.
let input: Uint8Array = new Uint8Array(0);
let view: DataView = new DataView(new ArrayBuffer(8));
let pos = 0;
let out: Buffer = Buffer.alloc(0);
let at = 0;

function ensure(bytes: number): void {
  if (at + bytes <= out.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, at + bytes));
  out.copy(bigger, 0, 0, at);
  out = bigger;
}

/** ASCII text (numbers, hex, base64, ASCII JSON) as its bytes. */
function ascii(text: string): void {
  ensure(text.length);
  for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i);
}

const HEX = '0123456789abcdef';

/** Bytes [start, end) of valid UTF-8 as a JSON string, escaped exactly as JSON.stringify escapes. */
function jsonString(start: number, end: number): void {
  ensure((end - start) * 6 + 2);
  out[at++] = 0x22;
  for (let i = start; i < end; i++) {
    const c = input[i];
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) {
      out[at++] = c;
      continue;
    }
    out[at++] = 0x5c;
    switch (c) {
      case 0x22:
        out[at++] = 0x22;
        break;
      case 0x5c:
        out[at++] = 0x5c;
        break;
      case 0x08:
        out[at++] = 0x62;
        break;
      case 0x0c:
        out[at++] = 0x66;
        break;
      case 0x0a:
        out[at++] = 0x6e;
        break;
      case 0x0d:
        out[at++] = 0x72;
        break;
      case 0x09:
        out[at++] = 0x74;
        break;
      default:
        out[at++] = 0x75; // \u00XX
        out[at++] = 0x30;
        out[at++] = 0x30;
        out[at++] = HEX.charCodeAt(c >> 4);
        out[at++] = HEX.charCodeAt(c & 15);
    }
  }
  out[at++] = 0x22;
}

/** A varint's low 32 bits as unsigned (what protobufjs's uint32 reads), skipping the rest. */
function varint32(): number {
  let result = 0;
  for (let i = 0; i < 10; i++) {
    const byte = input[pos++];
    if (i < 5) result |= (byte & 0x7f) << (7 * i);
    if (byte < 0x80) return result >>> 0;
  }
  throw giveUp;
}

/** A varint as a bigint (int64 values). */
function varint64(): bigint {
  let result = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    const byte = input[pos++];
    result |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return BigInt.asIntN(64, result);
    shift += 7n;
  }
  throw giveUp;
}

/** A length-delimited field's end; pos is left at its start. */
function lengthEnd(): number {
  const length = varint32();
  return pos + length;
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An AnyValue as the JSON value anyValue() returns, serialized as JSON.stringify would; pos ends at `end`. */
function anyValueJson(end: number): void {
  if (pos >= end) {
    ascii('null');
    return;
  }
  const tag = varint32();
  switch (tag) {
    case (1 << 3) | 2: {
      const e = lengthEnd();
      jsonString(pos, e);
      pos = e;
      return;
    }
    case (2 << 3) | 0:
      ascii(varint32() !== 0 ? 'true' : 'false');
      return;
    case (3 << 3) | 0: {
      const n = varint64();
      if (n >= MIN_SAFE && n <= MAX_SAFE) ascii(String(Number(n)));
      else ascii(`"${n}"`);
      return;
    }
    case (4 << 3) | 1:
      ascii(JSON.stringify(view.getFloat64(pos, true)));
      pos += 8;
      return;
    case (5 << 3) | 2: {
      const e = lengthEnd();
      ensure(1);
      out[at++] = 0x5b; // [
      let first = true;
      while (pos < e) {
        varint32(); // values = 1
        const itemEnd = lengthEnd();
        if (!first) {
          ensure(1);
          out[at++] = 0x2c;
        }
        first = false;
        anyValueJson(itemEnd);
      }
      ensure(1);
      out[at++] = 0x5d; // ]
      return;
    }
    case (6 << 3) | 2: {
      const e = lengthEnd();
      keyValuesJson(e, 1, null);
      return;
    }
    case (7 << 3) | 2: {
      const e = lengthEnd();
      ascii(`"${Buffer.from(input.buffer, input.byteOffset + pos, e - pos).toString('base64')}"`);
      pos = e;
      return;
    }
    default:
      throw giveUp;
  }
}

const SEVERITY_KEY = Buffer.from('otel.severity_text');
const SEVERITY_KEY_JSON = Buffer.from('"otel.severity_text":');

const sameBytes = (a: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): boolean => {
  if (aEnd - a !== bEnd - bStart) return false;
  for (let i = 0; a + i < aEnd; i++) if (input[a + i] !== b[bStart + i]) return false;
  return true;
};

/** True for a key a JavaScript object would move to the front (all digits: array-index-like), or empty of them. */
function digitsOnly(start: number, end: number): boolean {
  if (start === end) return false;
  for (let i = start; i < end; i++) if (input[i] < 0x30 || input[i] > 0x39) return false;
  return true;
}

// The keys of the object being written, as [start, end) pairs, to find a duplicate without strings.
const keyRanges: number[] = [];

/**
 * KeyValues from pos to `end`, each preceded by its tag (`field`), as a JSON object. `extra`, when given,
 * is the severity text's bytes, written last as the otel.severity_text key, as `{...attributes, key: value}`
 * would.
 */
function keyValuesJson(end: number, field: number, extra: readonly [number, number] | null): void {
  ensure(1);
  out[at++] = 0x7b; // {
  let first = true;
  const keysFrom = keyRanges.length;
  while (pos < end) {
    if (varint32() >>> 3 !== field) throw giveUp; // another field between the key-values: not expected
    const kvEnd = lengthEnd();
    let keyStart = pos;
    let keyEnd = pos;
    let valueStart = -1;
    let valueEnd = -1;
    while (pos < kvEnd) {
      const tag = varint32();
      const e = lengthEnd();
      if (tag === ((1 << 3) | 2)) {
        keyStart = pos;
        keyEnd = e;
      } else {
        valueStart = pos;
        valueEnd = e;
      }
      pos = e;
    }
    if (digitsOnly(keyStart, keyEnd)) throw giveUp;
    if (extra !== null && sameBytes(keyStart, keyEnd, SEVERITY_KEY, 0, SEVERITY_KEY.length)) throw giveUp;
    for (let k = keysFrom; k < keyRanges.length; k += 2)
      if (sameBytes(keyStart, keyEnd, input, keyRanges[k], keyRanges[k + 1])) throw giveUp;
    keyRanges.push(keyStart, keyEnd);
    if (!first) {
      ensure(1);
      out[at++] = 0x2c;
    }
    first = false;
    jsonString(keyStart, keyEnd);
    ensure(1);
    out[at++] = 0x3a; // :
    if (valueStart < 0) ascii('null');
    else {
      const after = pos;
      pos = valueStart;
      anyValueJson(valueEnd);
      pos = after;
    }
  }
  keyRanges.length = keysFrom;
  if (extra !== null) {
    ensure(SEVERITY_KEY_JSON.length + 1);
    if (!first) out[at++] = 0x2c;
    SEVERITY_KEY_JSON.copy(out, at);
    at += SEVERITY_KEY_JSON.length;
    jsonString(extra[0], extra[1]);
  }
  ensure(1);
  out[at++] = 0x7d; // }
}

/** micromegas levels: 1 fatal, 2 error, 3 warn, 4 info, 5 debug, 6 trace, from OTLP severity numbers. */
export function levelOf(severity: number): number {
  if (severity <= 0) return 4;
  if (severity <= 4) return 6;
  if (severity <= 8) return 5;
  if (severity <= 12) return 4;
  if (severity <= 16) return 3;
  if (severity <= 20) return 2;
  return 1;
}

const fixed64 = (at_: number): bigint => view.getBigUint64(at_, true);

/** An id field as logLine writes it: lowercase hex, or null when absent, empty or all zero. */
function idJson(start: number, end: number): void {
  let zero = true;
  for (let i = start; i < end; i++) if (input[i] !== 0) zero = false;
  if (start < 0 || end === start || zero) {
    ascii('null');
    return;
  }
  ensure((end - start) * 2 + 2);
  out[at++] = 0x22;
  for (let i = start; i < end; i++) {
    out[at++] = HEX.charCodeAt(input[i] >> 4);
    out[at++] = HEX.charCodeAt(input[i] & 15);
  }
  out[at++] = 0x22;
}

function logRecordLine(end: number, scopeName: readonly [number, number]): void {
  let time = -1;
  let observed = -1;
  let severity = 0;
  let severityText: [number, number] = [-1, -1];
  let body: [number, number] = [-1, -1];
  let attributesStart = -1;
  let attributesEnd = -1;
  let traceId: [number, number] = [-1, -1];
  let spanId: [number, number] = [-1, -1];
  while (pos < end) {
    const tagStart = pos;
    const tag = varint32();
    switch (tag >>> 3) {
      case 1:
        time = pos;
        pos += 8;
        break;
      case 11:
        observed = pos;
        pos += 8;
        break;
      case 2:
        severity = varint32() | 0;
        break;
      case 7:
        varint32();
        break;
      case 8:
        pos += 4;
        break;
      case 6: {
        // attributes: repeated, possibly not contiguous; contiguous is what SDKs write
        if (attributesStart < 0) attributesStart = tagStart;
        else if (attributesEnd !== tagStart) throw giveUp;
        pos = lengthEnd();
        attributesEnd = pos;
        break;
      }
      default: {
        const e = lengthEnd();
        const range: [number, number] = [pos, e];
        if (tag >>> 3 === 3) severityText = range;
        else if (tag >>> 3 === 5) body = range;
        else if (tag >>> 3 === 9) traceId = range;
        else if (tag >>> 3 === 10) spanId = range;
        pos = e;
      }
    }
  }
  const t = time >= 0 && fixed64(time) !== 0n ? fixed64(time) : fixed64(observed);
  ascii(`{"time":${t},"target":`);
  if (scopeName[0] < 0) ascii('""');
  else jsonString(scopeName[0], scopeName[1]);
  ascii(`,"level":${levelOf(severity)},"msg":`);
  bodyJson(body);
  ascii(',"properties":');
  const after = pos;
  const extra = severityText[1] > severityText[0] ? severityText : null;
  if (attributesStart < 0) {
    ensure(1);
    out[at++] = 0x7b;
    if (extra !== null) {
      ensure(SEVERITY_KEY_JSON.length);
      SEVERITY_KEY_JSON.copy(out, at);
      at += SEVERITY_KEY_JSON.length;
      jsonString(extra[0], extra[1]);
    }
    ensure(1);
    out[at++] = 0x7d;
  } else {
    pos = attributesStart;
    keyValuesJson(attributesEnd, 6, extra);
  }
  pos = after;
  ascii(',"trace_id":');
  idJson(traceId[0], traceId[1]);
  ascii(',"span_id":');
  idJson(spanId[0], spanId[1]);
  ascii('}\n');
}

/** The body as anyValueText gives it, as a JSON string; arrays and lists give up (their JSON, quoted). */
function bodyJson([start, end]: readonly [number, number]): void {
  if (start < 0 || start === end) {
    ascii('""');
    return;
  }
  const after = pos;
  pos = start;
  const tag = varint32();
  switch (tag) {
    case (1 << 3) | 2: {
      const e = lengthEnd();
      jsonString(pos, e);
      break;
    }
    case (2 << 3) | 0:
      ascii(varint32() !== 0 ? '"true"' : '"false"');
      break;
    case (3 << 3) | 0: {
      // anyValueText: a safe int as its literal; a larger one is the string anyValue gives, as JSON
      const n = varint64();
      ascii(n >= MIN_SAFE && n <= MAX_SAFE ? `"${n}"` : JSON.stringify(JSON.stringify(String(n))));
      break;
    }
    case (4 << 3) | 1:
      ascii(JSON.stringify(String(view.getFloat64(pos, true))));
      break;
    case (7 << 3) | 2: {
      const e = lengthEnd();
      // bytes: base64 of them, then JSON-quoted twice over by anyValueText (a JSON string of a JSON string)
      const base64 = Buffer.from(input.buffer, input.byteOffset + pos, e - pos).toString('base64');
      ascii(JSON.stringify(JSON.stringify(base64)));
      break;
    }
    default:
      throw giveUp;
  }
  pos = after;
}

function scopeLogsLines(end: number): void {
  // The scope may come after the records: find its name first.
  let scopeName: [number, number] = [-1, -1];
  const start = pos;
  while (pos < end) {
    const tag = varint32();
    const e = lengthEnd();
    if (tag === ((1 << 3) | 2)) {
      const scopeEnd = e;
      while (pos < scopeEnd) {
        const t = varint32();
        if ((t & 7) === 0) {
          varint32();
          continue;
        }
        const fe = lengthEnd();
        if (t === ((1 << 3) | 2)) scopeName = [pos, fe];
        pos = fe;
      }
    }
    pos = e;
  }
  pos = start;
  while (pos < end) {
    const tag = varint32();
    const e = lengthEnd();
    if (tag === ((2 << 3) | 2)) logRecordLine(e, scopeName);
    pos = e;
  }
}

/**
 * The NDJSON lines of a logs payload stored as received, as decodeLogs + logLine write them; null when
 * this writer cannot vouch for the same bytes (see the top of this file).
 */
export function logsLines(payload: Uint8Array): Buffer | null {
  input = payload;
  view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  pos = 0;
  out = Buffer.allocUnsafe(payload.length * 2 + 1024);
  at = 0;
  keyRanges.length = 0;
  try {
    while (pos < payload.length) {
      varint32(); // resource_logs = 1
      const rEnd = lengthEnd();
      while (pos < rEnd) {
        const tag = varint32();
        const e = lengthEnd();
        if (tag === ((2 << 3) | 2)) scopeLogsLines(e);
        pos = e;
      }
    }
    return out.subarray(0, at);
  } catch (error) {
    if (error === giveUp) return null;
    throw error;
  } finally {
    input = new Uint8Array(0);
  }
}
