// The case-file format of test/sql (test/sql/README.md): what the parser accepts, what it refuses with
// a line number, and how rows are written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Decimal,
  Table,
  TimestampNanosecond,
  makeData,
  makeVector,
  tableFromArrays,
  tableFromIPC,
  tableToIPC,
} from 'apache-arrow';
import { parseCaseFile, renderRows, substitute } from '../support/sql-cases.js';

const header = '# name: test/sql/x.test\n# description: README "Using it"\n\n';
const parse = (body: string) => parseCaseFile('test/sql/x.test', header + body, ['WINDOW_BEGIN']);

describe('sql case files', () => {
  it('reads statements, errors and queries with their user, path, line and expected text', () => {
    const file = parse(
      'setting ORRERY_RETIRE_DELAY_SECONDS 0\n\nstatement ok\nCREATE TABLE t AS\nSELECT 1 AS x\n\nuser reader\n\n' +
        'statement error PERMISSION_DENIED via update\nDROP TABLE t\n----\nfirst line\n(empty)\nsecond paragraph\n\n' +
        "query IT rowsort\nSELECT x, '${WINDOW_BEGIN}' FROM t\n----\n1\t2024-01-01T00:00:00Z\n\nquery I\nSELECT 1 WHERE false\n----\n",
    );
    assert.deepEqual(file.settings, { ORRERY_RETIRE_DELAY_SECONDS: '0' });
    assert.deepEqual(file.records, [
      { kind: 'statement ok', line: 6, user: 'admin', sql: 'CREATE TABLE t AS\nSELECT 1 AS x', path: 'query' },
      {
        kind: 'statement error',
        line: 12,
        user: 'reader',
        sql: 'DROP TABLE t',
        path: 'update',
        status: 'PERMISSION_DENIED',
        message: 'first line\n\nsecond paragraph',
      },
      {
        kind: 'query',
        line: 19,
        user: 'reader',
        sql: "SELECT x, '${WINDOW_BEGIN}' FROM t",
        path: 'query',
        types: 'IT',
        rowsort: true,
        rows: ['1\t2024-01-01T00:00:00Z'],
      },
      {
        kind: 'query',
        line: 24,
        user: 'reader',
        sql: 'SELECT 1 WHERE false',
        path: 'query',
        types: 'I',
        rowsort: false,
        rows: [],
      },
    ]);
  });

  it("reads a query's column names, the first line after '----' with `names`", () => {
    const [record] = parse('query IT rowsort names\nSELECT 1 AS n, 2\n----\nn\t2\n1\t2\n').records;
    assert.deepEqual(record, {
      kind: 'query',
      line: 4,
      user: 'admin',
      sql: 'SELECT 1 AS n, 2',
      path: 'query',
      types: 'IT',
      rowsort: true,
      names: ['n', '2'],
      rows: ['1\t2'],
    });
  });

  it('reads onlyif / skipif native for the next record only', () => {
    const file = parse(
      'onlyif native\nstatement ok\nSELECT 1\n\nskipif native\nquery I\nSELECT 2\n----\n2\n\nstatement ok\nSELECT 3\n',
    );
    assert.deepEqual(
      file.records.map((r) => r.only),
      [{ condition: 'native', holds: true }, { condition: 'native', holds: false }, undefined],
    );
  });

  it('substitutes variables, leaving other dollar text alone', () => {
    assert.equal(
      substitute("SELECT '${WINDOW_BEGIN}', $$'{begin}'$$", { WINDOW_BEGIN: 'B' }),
      "SELECT 'B', $$'{begin}'$$",
    );
  });

  it('refuses mistakes with the file and line', () => {
    const refused: Array<[string, RegExp]> = [
      ['statement error\nSELECT 1\n----\nx\n', /x\.test:4: a statement reads/],
      ['statement error NOPE\nSELECT 1\n----\nx\n', /x\.test:4: 'NOPE' is not a gRPC status name/],
      ['statement error INVALID_ARGUMENT\nSELECT 1\n', /x\.test:6: 'statement error' needs '----'/],
      ['statement ok\nSELECT 1\n----\n1\n', /x\.test:6: 'statement ok' expects no result/],
      ['query X\nSELECT 1\n----\n1\n', /x\.test:4: a query reads/],
      ['query I names names\nSELECT 1\n----\nx\n', /x\.test:4: a query reads/],
      ['query II names\nSELECT 1, 2\n----\nx\n1\t2\n', /x\.test:4: 'names' needs the first line/],
      ['query I\nSELECT ${NOPE}\n----\n1\n', /x\.test:4: unknown variable \$\{NOPE\}/],
      ['user root\n', /x\.test:4: 'user' takes one of/],
      ['statement ok\nSELECT 1\n\nsetting A b\n', /x\.test:7: 'setting' lines come before the first record/],
      ['selectt 1\n', /x\.test:4: unknown record 'selectt'/],
      ['onlyif linux\nstatement ok\nSELECT 1\n', /x\.test:4: 'onlyif' takes a condition: native/],
      ['skipif native\nuser reader\n', /x\.test:5: 'skipif' must be followed by a statement or a query/],
      ['statement ok\nSELECT 1\n\nonlyif native\n', /'onlyif' at the end of the file applies to nothing/],
    ];
    for (const [body, message] of refused) assert.throws(() => parse(body), message, body);
    assert.throws(
      () => parseCaseFile('test/sql/y.test', header, []),
      /'# name: test\/sql\/x.test' does not match the file's path test\/sql\/y.test/,
    );
  });

  it('writes NULL, (empty), nanosecond timestamps, dates and nested values', () => {
    const table = tableFromIPC(
      tableToIPC(tableFromArrays({ i: BigInt64Array.from([1n, 2n]), s: ['', null], f: Float64Array.from([2.5, -0]) })),
    );
    assert.deepEqual(renderRows(table), ['1\t(empty)\t2.5', '2\tNULL\t0']);
    const nanos = makeData({
      type: new TimestampNanosecond('UTC'),
      length: 2,
      data: BigInt64Array.from([1704164645123456789n, -1n]),
    });
    // 12.50 and -0.05 at scale 2, as 128-bit little-endian words.
    const decimals = makeData({
      type: new Decimal(2, 10, 128),
      length: 2,
      data: Uint32Array.from([1250, 0, 0, 0, 2 ** 32 - 5, 2 ** 32 - 1, 2 ** 32 - 1, 2 ** 32 - 1]),
    });
    const typed = new Table({ t: makeVector(nanos), d: makeVector(decimals) });
    assert.deepEqual(renderRows(typed), [
      '2024-01-02T03:04:05.123456789Z\t12.50',
      '1969-12-31T23:59:59.999999999Z\t-0.05',
    ]);
  });
});
