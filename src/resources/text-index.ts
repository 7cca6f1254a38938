// A text index's two levels (issue 13): per partition file, a bitmap of the trigrams of its values' tokens
// (a search whose trigrams it lacks skips the file), and postings: for the tokens of a bounded share of its
// rows, the row numbers holding each, plus a bitmap of the trigrams of every token left without one. A
// search whose word lies in no unposted token (one of the word's trigrams is not in that bitmap) can match
// only rows of posted tokens holding the word, so those rows are all a statement reads of the file (the
// search itself is still evaluated on them: the index only skips).

/**
 * A text index's tokens: the runs of three or more letters, digits and marks (Unicode's L, N and M) of
 * DuckDB's lower() of a value, as DuckDB's regexp_extract_all finds them. The searched text is split by the
 * same SQL (see asciiRuns): lower() maps each character to one (σ and final ς differ, 'İ' becomes 'i'),
 * which JavaScript's toLowerCase does not, so a search and the values it matches are lowercased alike. A
 * substring search's run of these characters lies inside one token of every value it matches, so the
 * trigrams of its run are trigrams of that token (ClickHouse's ngrambf, exact).
 */
export const tokensOf = (sql: string): string => `regexp_extract_all(lower(${sql}), '[\\p{L}\\p{N}\\p{M}]{3,}')`;

/** The ASCII token characters: a trigram of them has its own bit; any other trigram's bit is hashed. */
const asciiCharacters = '0123456789abcdefghijklmnopqrstuvwxyz';
const asciiBits = asciiCharacters.length ** 3;
/**
 * The bytes of a bitmap of ASCII trigrams alone, as files indexed before other tokens were (postings of
 * version 1) have: every bitmap written since is longer (see trigramBitmap).
 */
export const asciiBitmapBytes = asciiBits / 8;

/** A trigram's bit among the ASCII trigrams' (its three characters), -1 when it holds another character. */
function asciiBit(trigram: string): number {
  let [bit, n] = [0, 0];
  for (const c of trigram) {
    const i = asciiCharacters.indexOf(c);
    if (i < 0) return -1;
    bit = bit * asciiCharacters.length + i;
    n++;
  }
  return n === 3 ? bit : -1;
}

/** FNV-1a of a trigram's UTF-16 code units: its bit among a bitmap's hashed bits. */
function hashOf(trigram: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < trigram.length; i++) h = Math.imul(h ^ trigram.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A trigram's bit in a bitmap of `bytes` bytes: an ASCII trigram's own (below 46,656); another's hashed over
 * the bits after those (at least 64). Null for another trigram in a bitmap of ASCII trigrams alone (one
 * written before other tokens were indexed: it cannot tell).
 */
function trigramBit(trigram: string, bytes: number): number | null {
  const ascii = asciiBit(trigram);
  if (ascii >= 0) return ascii;
  const hashed = bytes * 8 - asciiBits;
  return hashed > 0 ? asciiBits + (hashOf(trigram) % hashed) : null;
}

/**
 * A bitmap of trigrams, a bit set for each trigram given: the 46,656 ASCII trigrams' bits (exact), then the
 * other trigrams' hashed over a power of two of bits, eight per distinct one (64 to 2^20: about 12 % of
 * other trigrams' bits are set, a search needs each of its trigrams').
 */
export function trigramBitmap(trigrams: readonly string[]): Buffer {
  const others = new Set(trigrams.filter((t) => asciiBit(t) < 0)).size;
  let hashed = 64;
  while (hashed < others * 8 && hashed < 1 << 20) hashed *= 2;
  const bitmap = Buffer.alloc((asciiBits + hashed) / 8);
  for (const t of trigrams) {
    const bit = trigramBit(t, bitmap.length)!;
    bitmap[bit >> 3] |= 1 << (bit & 7);
  }
  return bitmap;
}

/** A character other than ASCII (see asciiRuns). */
const nonAscii = /[^\p{ASCII}]/u;

/**
 * A searched text's runs of letters, digits and marks, three or more long, lowercased, when it is ASCII
 * alone: JavaScript's runs of [0-9a-z], which are DuckDB's tokensOf of it. Null for another text: its runs
 * are DuckDB's (partition-pruning.ts asks). A value matching the search holds each run inside one of its
 * tokens: sound for `ILIKE`, `LIKE` (`%`, `_` and any escape are not letters or digits, so they only end
 * runs) and `contains`; a shorter word yields none and skips nothing.
 */
export function asciiRuns(searched: string): string[] | null {
  return !nonAscii.test(searched) ? (searched.toLowerCase().match(/[0-9a-z]{3,}/g) ?? []) : null;
}

/** A token's trigrams, by characters (DuckDB's substring counts code points: 'é' may be 'e' and a mark). */
export const trigramsOf = (run: string): string[] => {
  const characters = Array.from(run);
  return Array.from({ length: characters.length - 2 }, (_, i) => characters.slice(i, i + 3).join(''));
};

/** The trigrams a value must hold for a substring search of these runs to match it. */
export const searchedTrigrams = (runs: readonly string[]): string[] => [...new Set(runs.flatMap(trigramsOf))];

/** Whether a bitmap of trigrams holds every one of these (false: no token it was made of holds them all). */
export function mayContain(bitmap: Buffer, trigrams: readonly string[]): boolean {
  return trigrams.every((t) => {
    const bit = trigramBit(t, bitmap.length);
    return bit === null || (bitmap[bit >> 3] & (1 << (bit & 7))) !== 0;
  });
}

/** A partition file's postings: its row count, the posted tokens' rows, the trigrams of the other tokens. */
export interface Postings {
  readonly rows: number;
  readonly unposted: Buffer;
  readonly tokens: ReadonlyMap<string, readonly number[]>;
}

/**
 * The share of a file's rows a token may hold to be posted, the share all postings may hold together, and
 * the tokens posted at most (a file of unique ids would otherwise post each): the most frequent first.
 */
export const postedShare = 8;
export const postingsShare = 2;
export const postedTokens = 1024;

/**
 * 2: tokens of any letters (UTF-8), the unposted bitmap of any length (see trigramBitmap). 1 (still read):
 * tokens of [0-9a-z] alone (latin1), the bitmap of their trigrams alone, which cannot tell of a run of other
 * letters, so such a run restricts no row by them (see rowsMatching).
 */
export const postingsVersion = 2;

/**
 * Postings as stored: version, rows, the unposted bitmap's bytes and the bitmap, then each token (its UTF-8
 * bytes: at most 255 characters) with its rows as gaps (varints).
 */
export function encodePostings({ rows, unposted, tokens }: Postings): Buffer {
  const parts: Buffer[] = [
    Buffer.from([postingsVersion]),
    uint32(rows),
    uint32(unposted.length),
    unposted,
    uint32(tokens.size),
  ];
  for (const [token, list] of tokens) {
    const bytes = Buffer.from(token, 'utf8');
    parts.push(uint16(bytes.length), bytes, uint32(list.length));
    const gaps: number[] = [];
    let previous = -1;
    for (const row of list) {
      for (let gap = row - previous; ; gap = Math.floor(gap / 128)) {
        if (gap < 128) {
          gaps.push(gap);
          break;
        }
        gaps.push((gap % 128) | 128);
      }
      previous = row;
    }
    parts.push(Buffer.from(gaps));
  }
  return Buffer.concat(parts);
}

function uint16(n: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** Stored postings read back (version 2 or 1); null for another version (read as no postings: the file is read whole). */
export function decodePostings(stored: Buffer): Postings | null {
  const [v] = stored;
  if (v !== postingsVersion && v !== 1) return null;
  const rows = stored.readUInt32BE(1);
  let at = v === 1 ? 5 : 9;
  const unposted = stored.subarray(at, (at += v === 1 ? asciiBitmapBytes : stored.readUInt32BE(5)));
  const count = stored.readUInt32BE(at);
  at += 4;
  const tokens = new Map<string, number[]>();
  for (let t = 0; t < count; t++) {
    const length = v === 1 ? stored[at] : stored.readUInt16BE(at);
    at += v === 1 ? 1 : 2;
    const token = stored.toString(v === 1 ? 'latin1' : 'utf8', at, (at += length));
    const n = stored.readUInt32BE(at);
    at += 4;
    const list: number[] = [];
    let previous = -1;
    while (list.length < n) {
      let [gap, scale] = [0, 1];
      for (;;) {
        const byte = stored[at++];
        gap += (byte & 127) * scale;
        if (byte < 128) break;
        scale *= 128;
      }
      list.push((previous += gap));
    }
    tokens.set(token, list);
  }
  return { rows, unposted, tokens };
}

/**
 * The rows of a file that may match every one of these searches (each given as its runs: see asciiRuns),
 * as a bitmap of the file's rows, first row in the first byte's highest bit (DuckDB's BIT); null when the
 * postings cannot tell (a run may lie in an unposted token, or holds letters other than [0-9a-z] in postings of
 * version 1, whose bitmap cannot tell of them). A row is left out only when a run of a search lies in none of
 * its tokens.
 */
export function rowsMatching(postings: Postings, searches: ReadonlyArray<readonly string[]>): Uint8Array | null {
  let rows: Uint8Array | null = null;
  // Version 1's tokens are of [0-9a-z] alone (its unposted bitmap holds their trigrams alone): a run of other
  // letters is in none of them, while a value holding it has its [0-9a-z] part in a posted one.
  const asciiTokens = postings.unposted.length === asciiBitmapBytes;
  for (const run of searches.flat()) {
    if ((asciiTokens && nonAscii.test(run)) || mayContain(postings.unposted, trigramsOf(run))) continue;
    const holding = new Uint8Array(Math.ceil(postings.rows / 8));
    for (const [token, list] of postings.tokens)
      if (token.includes(run)) for (const row of list) holding[row >> 3] |= 0x80 >> (row & 7);
    rows = rows ? bothOf(rows, holding) : holding;
  }
  return rows;
}

/** The rows two bitmaps of one file's rows both hold (a new bitmap). */
export function bothOf(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] & b[i];
  return out;
}

/** The rows either of two bitmaps of one file's rows holds (a new bitmap). */
export function eitherOf(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] | b[i];
  return out;
}

/** The rows a bitmap of rows holds: a statement counts each file's (tens of kB), so four bytes at a time. */
export function rowCount(rows: Uint8Array): number {
  const words = rows.byteOffset % 4 === 0 ? new Uint32Array(rows.buffer, rows.byteOffset, rows.length >> 2) : null;
  let n = 0;
  for (let i = 0; words && i < words.length; i++) {
    let w = words[i];
    if (w === 0) continue;
    w -= (w >>> 1) & 0x55555555;
    w = (w & 0x33333333) + ((w >>> 2) & 0x33333333);
    n += (((w + (w >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
  }
  for (let i = words ? words.length * 4 : 0; i < rows.length; i++) n += bitsIn[rows[i]];
  return n;
}
const bitsIn = Uint8Array.from({ length: 256 }, (_, b) => b.toString(2).replace(/0/g, '').length);

/**
 * A range of a text index's copy of a file's posted rows (see partition-stats.ts: each posted token's rows
 * in turn, in the postings' order, numbered from 0 in `__orr_position`): the positions from `from` to `to`,
 * all of them, or those `bits` holds (from `from`, in the first byte's highest bit).
 */
export interface CopyRange {
  readonly from: number;
  readonly to: number;
  readonly bits: Uint8Array | null;
  /** Whether the rows at those positions are in their file's order (one token's, or tokens' in turn). */
  readonly ordered: boolean;
}

/**
 * Where the rows of `left` (a bitmap of a file's rows) are in the copy of these postings' rows, each at the
 * first token holding it of those holding one of `runs` (the searches': their rows are together), else at its
 * first token; the rows found are cleared from `left`. Null when the postings list none of them. Run at each
 * statement for each file it reads from a copy, so without a sort: each of the two passes finds positions in
 * increasing order (tokens in the copy's order, each token's rows in turn), and the two are merged.
 */
export function copyRange(postings: Postings, left: Uint8Array, runs: readonly string[]): CopyRange | null {
  const holds: boolean[] = [];
  for (const token of postings.tokens.keys()) holds.push(runs.some((run) => token.includes(run)));
  const pass = (searched: boolean): { positions: number[]; rows: number[] } => {
    const [positions, rows]: [number[], number[]] = [[], []];
    let [first, t] = [0, 0];
    for (const list of postings.tokens.values()) {
      if (holds[t++] === searched)
        for (let i = 0; i < list.length; i++) {
          const row = list[i];
          const bit = 0x80 >> (row & 7);
          if ((left[row >> 3] & bit) === 0) continue;
          left[row >> 3] &= ~bit;
          positions.push(first + i);
          rows.push(row);
        }
      first += list.length;
    }
    return { positions, rows };
  };
  const [a, b] = [pass(true), pass(false)];
  const count = a.positions.length + b.positions.length;
  if (count === 0) return null;
  // The positions of both passes in increasing order, and whether their rows are then in the file's order.
  const merged: number[] = [];
  let [i, j, ordered, lastRow] = [0, 0, true, -1];
  while (i < a.positions.length || j < b.positions.length) {
    const fromA = j >= b.positions.length || (i < a.positions.length && a.positions[i] < b.positions[j]);
    const row = fromA ? a.rows[i] : b.rows[j];
    merged.push(fromA ? a.positions[i++] : b.positions[j++]);
    ordered &&= row > lastRow;
    lastRow = row;
  }
  const [from, to] = [merged[0], merged[count - 1]];
  if (to - from + 1 === count) return { from, to, bits: null, ordered };
  const bits = new Uint8Array(Math.ceil((to - from + 1) / 8));
  for (const p of merged) bits[(p - from) >> 3] |= 0x80 >> ((p - from) & 7);
  return { from, to, bits, ordered };
}
