// `orrery views plan` computation: a folder (name → text) against the stored definitions, as a pure function.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  changesInApplyOrder,
  comparableDefinition,
  computePlan,
  explainOf,
  summarizeStatement,
  withOrReplace,
} from '../../src/views-cli/index.js';
import { createStatement, stored } from './view-sets-fixtures.js';

const files = (entries: Record<string, string>): Map<string, string> => new Map(Object.entries(entries));

describe('views plan computation', () => {
  it('creates a file with no stored definition, sending the trimmed file text', () => {
    const text = createStatement('error_rate', 4000);
    assert.deepEqual(computePlan(files({ error_rate: `\n${text}\n` }), [], { prune: false }), {
      entries: [{ name: 'error_rate', action: 'create', updateGroup: 4000, statement: text }],
    });
  });

  it('leaves a file alone when it matches the stored text up to whitespace around it, a trailing ; and OR REPLACE', () => {
    const plan = computePlan(
      files({
        a: `${createStatement('a', 4000)}\n`,
        b: `  ${createStatement('b', 4001)};\n`,
        c: createStatement('c', 4002),
        d: createStatement('d', 4003, '', true),
      }),
      [
        stored('a', 4000),
        stored('b', 4001),
        stored('c', 4002, createStatement('c', 4002, '', true)),
        stored('d', 4003),
      ],
      { prune: false },
    );
    assert.deepEqual(plan.entries, [
      { name: 'a', action: 'unchanged', updateGroup: 4000, statement: null },
      { name: 'b', action: 'unchanged', updateGroup: 4001, statement: null },
      { name: 'c', action: 'unchanged', updateGroup: 4002, statement: null },
      { name: 'd', action: 'unchanged', updateGroup: 4003, statement: null },
    ]);
  });

  it('replaces a file whose text differs, turning CREATE into CREATE OR REPLACE and taking its update_group', () => {
    const text = createStatement('error_rate', 4100, ' AND level <= 2');
    const plan = computePlan(files({ error_rate: `${text}\n` }), [stored('error_rate', 4000)], { prune: false });
    assert.deepEqual(plan.entries, [
      {
        name: 'error_rate',
        action: 'replace',
        updateGroup: 4100,
        statement: text.replace('CREATE MATERIALIZED VIEW', 'CREATE OR REPLACE MATERIALIZED VIEW'),
      },
    ]);
  });

  it('lists a stored definition without a file as not managed, and drops it only with prune', () => {
    const rows = [stored('log_stats', 3000), stored('legacy', 5000)];
    assert.deepEqual(computePlan(files({}), rows, { prune: false }).entries, [
      { name: 'legacy', action: 'not_managed', updateGroup: 5000, statement: null },
      { name: 'log_stats', action: 'not_managed', updateGroup: 3000, statement: null },
    ]);
    assert.deepEqual(computePlan(files({}), rows, { prune: true }).entries, [
      { name: 'legacy', action: 'drop', updateGroup: 5000, statement: 'DROP MATERIALIZED VIEW legacy' },
      { name: 'log_stats', action: 'drop', updateGroup: 3000, statement: 'DROP MATERIALIZED VIEW log_stats' },
    ]);
  });

  it('marks files it cannot use as invalid, with the reason, and never drops their stored definition', () => {
    const plan = computePlan(
      files({
        'Error Rate': createStatement('error_rate', 4000),
        empty: '  \n',
        notes: "SELECT 'not a view'",
        renamed: createStatement('other_name', 4000),
        two: `${createStatement('two', 4000)};\nDROP MATERIALIZED VIEW log_stats;`,
        table: 'CREATE TABLE table (a INT)',
      }),
      [stored('renamed', 4000)],
      { prune: true },
    );
    assert.deepEqual(plan.entries, [
      {
        name: 'Error Rate',
        action: 'invalid',
        updateGroup: null,
        statement: null,
        problem: "file name 'Error Rate.sql' is not <view name>.sql (a view name matches ^[a-z_][a-z0-9_]{0,254}$)",
      },
      { name: 'empty', action: 'invalid', updateGroup: null, statement: null, problem: 'empty.sql holds no statement' },
      {
        name: 'notes',
        action: 'invalid',
        updateGroup: null,
        statement: null,
        problem: 'notes.sql is not a CREATE [OR REPLACE] MATERIALIZED VIEW statement',
      },
      {
        name: 'renamed',
        action: 'invalid',
        updateGroup: 4000,
        statement: null,
        problem: "renamed.sql defines view 'other_name'; the file must be named other_name.sql",
      },
      {
        name: 'table',
        action: 'invalid',
        updateGroup: null,
        statement: null,
        problem: 'table.sql is not a CREATE [OR REPLACE] MATERIALIZED VIEW statement',
      },
      {
        name: 'two',
        action: 'invalid',
        updateGroup: null,
        statement: null,
        problem: 'two.sql holds more than one statement (one CREATE statement per file)',
      },
    ]);
  });

  it('orders changes for apply: creates and replaces by ascending update_group, then drops by descending update_group', () => {
    const plan = computePlan(
      files({
        c_top: createStatement('c_top', 6000),
        a_base: createStatement('a_base', 4000),
        b_mid: createStatement('b_mid', 5000, ' AND true'),
        same: createStatement('same', 4500),
      }),
      [
        stored('b_mid', 5000),
        stored('same', 4500),
        stored('old_base', 4000),
        stored('old_top', 7000),
        stored('old_mid', 5000),
      ],
      { prune: true },
    );
    assert.deepEqual(
      changesInApplyOrder(plan).map((e) => `${e.action} ${e.name} ${e.updateGroup}`),
      [
        'create a_base 4000',
        'replace b_mid 5000',
        'create c_top 6000',
        'drop old_top 7000',
        'drop old_mid 5000',
        'drop old_base 4000',
      ],
    );
  });
});

describe('views statement text', () => {
  it('reads the name, OR REPLACE and update_group, ignoring what is inside quoted query texts', () => {
    const text = createStatement('error_rate', 4000, " AND body != 'update_group = 1' AND $q$x$q$ = 'x'");
    assert.deepEqual(summarizeStatement(text), { name: 'error_rate', orReplace: false, updateGroup: 4000 });
    assert.deepEqual(
      summarizeStatement(
        `-- leading\n/* comments */ create or replace materialized view "quoted" with (update_group = '12')`,
      ),
      {
        name: 'quoted',
        orReplace: true,
        updateGroup: 12,
      },
    );
    assert.deepEqual(summarizeStatement('CREATE MATERIALIZED VIEW v WITH (extract_query = $q$ update_group = 7 $q$)'), {
      name: 'v',
      orReplace: false,
      updateGroup: null,
    });
  });

  it('adds OR REPLACE and EXPLAIN after leading comments, leaving the rest as written', () => {
    const text = '-- error rate per target\ncreate  materialized view v WITH (update_group = 1)';
    assert.equal(
      withOrReplace(text),
      '-- error rate per target\ncreate OR REPLACE  materialized view v WITH (update_group = 1)',
    );
    assert.equal(withOrReplace(withOrReplace(text)), withOrReplace(text));
    assert.equal(
      explainOf(text),
      '-- error rate per target\nEXPLAIN create  materialized view v WITH (update_group = 1)',
    );
    assert.equal(explainOf('DROP MATERIALIZED VIEW v'), 'EXPLAIN DROP MATERIALIZED VIEW v');
  });

  it('compares definitions with CREATE written as CREATE OR REPLACE, trimmed and without a trailing ;', () => {
    assert.equal(
      comparableDefinition(' create materialized view v WITH (a = 1);\n'),
      'CREATE OR REPLACE MATERIALIZED VIEW v WITH (a = 1)',
    );
    assert.equal(
      comparableDefinition('CREATE OR REPLACE\n  MATERIALIZED VIEW v WITH (a = 1)'),
      'CREATE OR REPLACE MATERIALIZED VIEW v WITH (a = 1)',
    );
    assert.notEqual(
      comparableDefinition('CREATE MATERIALIZED VIEW v WITH (a = 1)'),
      comparableDefinition('CREATE MATERIALIZED VIEW v WITH (a = 2)'),
    );
  });
});
