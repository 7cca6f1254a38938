// Pure protocol helpers: LIKE patterns, RFC 3339 headers, SqlInfo arms.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { likeMatcher, parseRfc3339Nanos } from '../../src/flight/index.js';
import { selectSqlInfo, sqlInfoArms } from '../../src/flight/sql-info.js';

describe('likeMatcher', () => {
  const cases: Array<[string | undefined, string, boolean]> = [
    [undefined, 'anything', true],
    ['%', '', true],
    ['log%', 'log_entries', true],
    ['log%', 'blog', false],
    ['log_entries', 'logXentries', true],
    ['log\\_entries', 'logXentries', false],
    ['log\\_entries', 'log_entries', true],
    ['a.b', 'axb', false],
    ['', '', true],
    ['Log%', 'log', false],
  ];
  for (const [pattern, value, expected] of cases) {
    it(`${pattern} ~ ${value} is ${expected}`, () => assert.equal(likeMatcher(pattern)(value), expected));
  }
});

describe('parseRfc3339Nanos', () => {
  it('keeps nanoseconds and zones', () => {
    assert.equal(parseRfc3339Nanos('2024-01-02T03:04:05Z'), 1704164645000000000n);
    assert.equal(parseRfc3339Nanos('2024-01-02T03:04:05.123456789Z'), 1704164645123456789n);
    assert.equal(parseRfc3339Nanos('2024-01-02T05:04:05.5+02:00'), 1704164645500000000n);
  });
  it('is null for a time that is not RFC 3339', () => {
    assert.equal(parseRfc3339Nanos('2024-13-45'), null);
    assert.equal(parseRfc3339Nanos('2024-01-02'), null);
  });
});

describe('SqlInfo arms', () => {
  it('puts ids in the arms clients cast them to', () => {
    assert.equal(sqlInfoArms.get(562), 2);
    assert.equal(sqlInfoArms.get(556), 1);
    assert.equal(sqlInfoArms.get(8), 3);
    assert.equal(sqlInfoArms.get(517), 5);
    assert.equal(sqlInfoArms.get(0), 0);
  });
  it('answers ids asked for by id even when the full listing leaves them out', () => {
    assert.deepEqual(
      selectSqlInfo(new Map(), [100, 6]).map(([id]) => id),
      [100],
    );
    assert.ok(!selectSqlInfo(new Map(), []).some(([id]) => id === 100));
  });
});
