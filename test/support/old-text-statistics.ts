// A text index's statistics as files indexed before words of other letters than [0-9a-z] were (before 6060fa4)
// hold them, made from the statistics of a running Orrery: the suites that check their remaking start from them.
import assert from 'node:assert/strict';
import { asciiBitmapBytes, decodePostings, type Postings } from '../../src/resources/text-index.js';
import type { OrreryFixture } from './orrery-process.js';

/**
 * Postings as files indexed before words of other letters were (version 1) hold them: tokens of [0-9a-z]
 * alone, each with a one-byte length, and the unposted bitmap of ASCII trigrams alone, with no length. A copy
 * keeps its positions when the tokens left out sort after the others (as a token starting with 'ü' does).
 */
export function version1({ rows, unposted, tokens }: Postings): Buffer {
  const uint32 = (n: number) => Buffer.from([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]);
  const ascii = [...tokens].filter(([token]) => /^[0-9a-z]+$/.test(token));
  const parts = [Buffer.from([1]), uint32(rows), unposted.subarray(0, asciiBitmapBytes), uint32(ascii.length)];
  for (const [token, list] of ascii) {
    const gaps: number[] = [];
    let previous = -1;
    for (const row of list) {
      for (let gap = row - previous; ; gap = Math.floor(gap / 128)) {
        gaps.push(gap < 128 ? gap : (gap % 128) | 128);
        if (gap < 128) break;
      }
      previous = row;
    }
    parts.push(Buffer.from([token.length]), Buffer.from(token, 'latin1'), uint32(list.length), Buffer.from(gaps));
  }
  return Buffer.concat(parts);
}

/**
 * Rewrites every statistics row of the text index `entryKey` as before 6060fa4: the bitmap cut to its ASCII part,
 * version 1 postings, the copy under the key of then (`text-index/<hash>/all/...`, no version), the object copied
 * there; then bumps the index's generation, as a restart makes a server read them again. Returns the old keys.
 */
export async function makeStatisticsOld(fixture: OrreryFixture, entryKey: string): Promise<string[]> {
  const db = fixture.orrery.metadata;
  const keys = new Set<string>();
  for (const table of ['resource_partition_stats', 'resource_audience_stats']) {
    const { rows } = await db.query<{ ctid: string; postings: Buffer; copy_path: string }>(
      `SELECT ctid::text AS ctid, postings, copy_path FROM ${table}
        WHERE index_hash = (SELECT index_hash FROM resource_indexes WHERE entry_key = $1)`,
      [entryKey],
    );
    assert.ok(rows.length > 0, table);
    for (const row of rows) {
      const old = row.copy_path.replace(/^(text-index\/[^/]+)\/v2\//, '$1/');
      assert.notEqual(old, row.copy_path);
      if (!keys.has(old)) await fixture.orrery.store.put(old, await fixture.orrery.store.get(row.copy_path));
      keys.add(old);
      await db.query(
        `UPDATE ${table} SET bloom = substring(bloom FROM 1 FOR ${asciiBitmapBytes}), postings = $1, copy_path = $2
          WHERE ctid = $3::tid`,
        [version1(decodePostings(row.postings)!), old, row.ctid],
      );
    }
  }
  await db.query('UPDATE resource_indexes SET statistics_generation = statistics_generation + 1 WHERE entry_key = $1', [
    entryKey,
  ]);
  return [...keys];
}
