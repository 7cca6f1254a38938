// A text index's postings (issue 13): stored row numbers read back as written, gaps of one to four varint
// bytes included, the bitmap of rows a search may match read by DuckDB's get_bit as the rows themselves, and
// where those rows are in the copy of the posted rows.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import {
  asciiRuns,
  copyRange,
  decodePostings,
  mayContain,
  rowCount,
  rowsMatching,
  searchedTrigrams,
} from '../../src/resources/index.js';
import { encodePostings, trigramBitmap } from '../../src/resources/text-index.js';

const searchedRuns = (searched: string): string[] => asciiRuns(searched)!;

const rows = 3_000_000;
/** Rows with gaps of 1, 127, 128, 16_383, 16_384 and 2_097_152 (varints of one to four bytes). */
const timeout = [0, 1, 128, 256, 16_639, 33_023, 2_130_175, rows - 1];
const xtimeoutx = [5, 6, 7];
const cache = [2, 129];

describe('text index postings (issue 13)', () => {
  const stored = encodePostings({
    rows,
    unposted: trigramBitmap(['req', 'equ', 'que', 'ues', 'est']),
    tokens: new Map([
      ['cache', cache],
      ['timeout', timeout],
      ['xtimeoutx', xtimeoutx],
    ]),
  });

  it('reads back every token with its rows', () => {
    const postings = decodePostings(stored)!;
    assert.equal(postings.rows, rows);
    assert.deepEqual(
      [...postings.tokens],
      [
        ['cache', cache],
        ['timeout', timeout],
        ['xtimeoutx', xtimeoutx],
      ],
    );
    assert.equal(decodePostings(Buffer.concat([Buffer.from([9]), stored.subarray(1)])), null);
  });

  it('reads back tokens of any letters, and tells their trigrams apart from others', () => {
    // DuckDB's tokens of 'Größe σίσυφοσ e\u0301cole 日本語': lower(), then runs of letters, digits and marks.
    const tokens = ['größe', 'σίσυφοσ', 'e\u0301cole', '日本語', 'a'.repeat(200) + 'ö'.repeat(55)];
    const unposted = trigramBitmap(searchedTrigrams(['привет', 'σίσυφος']));
    const postings = decodePostings(
      encodePostings({ rows: 9, unposted, tokens: new Map(tokens.map((t, i) => [t, [i]])) }),
    )!;
    assert.deepEqual([...postings.tokens.keys()], tokens);
    assert.deepEqual(postings.unposted, unposted);
    assert.ok(mayContain(postings.unposted, searchedTrigrams(['привет'])));
    assert.ok(mayContain(postings.unposted, searchedTrigrams(['σίσυφος'])));
    // The final sigma's trigram is another trigram: 'φοσ' is not 'φος'.
    assert.ok(!mayContain(postings.unposted, searchedTrigrams(['σίσυφοσ'])));
    assert.ok(!mayContain(postings.unposted, searchedTrigrams(['größe'])));
    // A decomposed 'é' is two characters: its trigrams are those of code points, as DuckDB's substring counts.
    assert.deepEqual(searchedTrigrams(['e\u0301co']), ['e\u0301c', '\u0301co']);
    assert.equal(rowCount(rowsMatching(postings, [['größe']])!), 1);
    assert.equal(rowCount(rowsMatching(postings, [['öße']])!), 1);
    assert.equal(rowsMatching(postings, [['привет']]), null);
    // A bitmap of ASCII trigrams alone (written before other tokens were indexed) cannot tell of other trigrams.
    const asciiOnly = trigramBitmap(['str', 'tra']).subarray(0, 46_656 / 8);
    assert.ok(mayContain(asciiOnly, searchedTrigrams(['straße'])));
    assert.ok(!mayContain(asciiOnly, searchedTrigrams(['große'])));
    assert.equal(asciiRuns('Größe'), null);
    // Version 1's postings (tokens of [0-9a-z] alone): 'Straße 0' was posted as 'stra', so its rows are those
    // of 'stra' for a search of 'stra', and a run of other letters ('straße') restricts none.
    const version1 = Buffer.concat([
      Buffer.from([1, 0, 0, 0, 4]),
      asciiOnly.map(() => 0),
      Buffer.from([0, 0, 0, 1, 4, ...Buffer.from('stra'), 0, 0, 0, 1, 3]),
    ]);
    const old = decodePostings(version1)!;
    assert.deepEqual([...old.tokens], [['stra', [2]]]);
    assert.deepEqual(rowsMatching(old, [['stra']]), Uint8Array.from([0b00100000]));
    assert.equal(rowsMatching(old, [['straße']]), null);
    assert.deepEqual(asciiRuns('%TimeOut_after%'), ['timeout', 'after']);
  });

  it("gives the rows of the tokens holding each run, none when a run may lie in an unposted token, and DuckDB's get_bit reads them", async () => {
    const postings = decodePostings(stored)!;
    const matching = (searched: string[]) => rowsMatching(postings, searched.map(searchedRuns));
    const bits = matching(['%TimeOut%'])!;
    assert.equal(rowCount(bits), timeout.length + xtimeoutx.length);
    assert.equal(rowCount(matching(['%time%', 'cache'])!), 0);
    assert.equal(rowCount(matching(['%cache%'])!), 2);
    // 'request' lies in an unposted token, 'ok' is no run: the postings cannot tell.
    assert.equal(matching(['%request%']), null);
    assert.equal(matching(['%ok%']), null);
    assert.equal(rowCount(matching(['%request%', '%cache%'])!), 2);
    const duck = await DuckDBInstance.create(':memory:');
    const connection = await duck.connect();
    try {
      const read = await connection.runAndReadAll(
        `SELECT list(i ORDER BY i) FROM range(${rows}) t(i)
          WHERE get_bit(from_base64('${Buffer.from(bits).toString('base64')}')::BIT, i::INTEGER) = 1`,
      );
      const [[list]] = read.getRows() as unknown as Array<[{ items: bigint[] }]>;
      assert.deepEqual(
        list.items.map(Number),
        [...timeout, ...xtimeoutx].sort((a, b) => a - b),
      );
    } finally {
      connection.closeSync();
      duck.closeSync();
    }
  });

  it("finds each row once in the copy of the posted rows, at a token of the search's, else at its first", () => {
    // The copy: aaa's rows at 0-1, timeout's at 2-4, xtimeoutx's at 5-6; row 1 is aaa's and timeout's, row 3
    // timeout's and xtimeoutx's.
    const postings = decodePostings(
      encodePostings({
        rows: 8,
        unposted: trigramBitmap([]),
        tokens: new Map([
          ['aaa', [1, 4]],
          ['timeout', [1, 2, 3]],
          ['xtimeoutx', [3, 5]],
        ]),
      }),
    )!;
    const rows = () => rowsMatching(postings, [searchedRuns('%timeout%')])!;
    const left = rows();
    assert.equal(rowCount(left), 4);
    assert.deepEqual(copyRange(postings, left, ['timeout']), {
      from: 2,
      to: 6,
      bits: Uint8Array.from([0b11101000]),
      ordered: true,
    });
    assert.equal(rowCount(left), 0);
    // Rows 1, 2, 3, 5 at their first tokens: 0, 3, 4, 6.
    assert.deepEqual(copyRange(postings, rows(), []), {
      from: 0,
      to: 6,
      bits: Uint8Array.from([0b10011010]),
      ordered: true,
    });
    // Rows 1, 4 and 2 at 0, 1 and 3: not in the file's order.
    const aaaAndTimeout = rowsMatching(postings, [['aaa']])!;
    aaaAndTimeout[0] |= 0b00100000;
    assert.deepEqual(copyRange(postings, aaaAndTimeout, []), {
      from: 0,
      to: 3,
      bits: Uint8Array.from([0b11010000]),
      ordered: false,
    });
    assert.deepEqual(copyRange(postings, rowsMatching(postings, [['aaa']])!, ['aaa']), {
      from: 0,
      to: 1,
      bits: null,
      ordered: true,
    });
    // Found in both passes, merged in the copy's order: rows 3 and 5 at xtimeoutx's 5 and 6, then rows 1 and 2
    // at their first tokens' 0 and 3.
    assert.deepEqual(copyRange(postings, rows(), ['xtimeoutx']), {
      from: 0,
      to: 6,
      bits: Uint8Array.from([0b10010110]),
      ordered: true,
    });
    // Rows 1 and 4 at aaa's 0 and 1, row 3 at xtimeoutx's 5: row 4 before row 3.
    assert.deepEqual(copyRange(postings, Uint8Array.from([0b01011000]), ['xtimeoutx']), {
      from: 0,
      to: 5,
      bits: Uint8Array.from([0b11000100]),
      ordered: false,
    });
    const unlisted = new Uint8Array(1);
    unlisted[0] = 0b00000001;
    assert.equal(copyRange(postings, unlisted, ['timeout']), null);
  });

  it('counts the rows of bitmaps of any length and offset', () => {
    const bytes = Uint8Array.from({ length: 64 }, (_, i) => (i * 151 + 7) & 255);
    const bitsOf = (b: Uint8Array) => [...b].reduce((n, byte) => n + byte.toString(2).split('1').length - 1, 0);
    for (let start = 0; start < 5; start++)
      for (let length = 0; length <= 13; length++) {
        const some = bytes.subarray(start, start + length);
        assert.equal(rowCount(some), bitsOf(some), `${start}+${length}`);
      }
    assert.equal(rowCount(new Uint8Array(41).fill(255)), 328);
  });
});
