// CREATE / DROP MATERIALIZED VIEW parsing (spec: materialized-views.md, "Creating and dropping a view", "Options").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OrreryError } from '../../src/errors/index.js';
import type { DdlErrorCode } from '../../src/sql/ddl-errors.js';
import { parseDdl, type MaterializedViewOptions } from '../../src/sql/ddl-parser.js';
import { specExample as specExampleOf } from '../support/spec-example.js';

const specExample = specExampleOf('log_stats_copy', 'CREATE OR REPLACE MATERIALIZED VIEW');

/** The required options, each as small as it gets. */
const required =
  "extract_query = 'e', count_src_query = 'c', merge_partitions_query = 'm', update_group = 1, time_column = 't'";
const requiredOptions: MaterializedViewOptions = {
  extractQuery: 'e',
  countSrcQuery: 'c',
  mergePartitionsQuery: 'm',
  updateGroup: 1,
  minTimeColumn: 't',
  maxTimeColumn: 't',
  timeColumn: 't',
  sourcePartitionDelta: '1 day',
  sourceDeltaSeconds: 86400,
  mergePartitionDelta: '1 day',
  mergeDeltaSeconds: 86400,
};
/** `text` with its first `from` replaced by `to`, taken literally (no `$` patterns). */
const swap = (text: string, from: string, to: string): string => text.replace(from, () => to);
const create = (options: string): string => `CREATE MATERIALIZED VIEW v WITH (${options})`;
const optionsOf = (text: string): MaterializedViewOptions => {
  const statement = parseDdl(text);
  assert.equal(statement?.kind, 'create');
  return statement.options;
};

function refuses(text: string, code: DdlErrorCode, message: string): void {
  it(`refuses ${JSON.stringify(text.length > 70 ? `${text.slice(0, 67)}...` : text)}`, () =>
    assert.throws(() => parseDdl(text), { name: 'DdlError', status: 'INVALID_ARGUMENT', code, message }));
}

describe('parseDdl: CREATE MATERIALIZED VIEW', () => {
  it("parses the spec's example", () => {
    assert.deepEqual(parseDdl(specExample), {
      kind: 'create',
      orReplace: true,
      name: 'log_stats_copy',
      explain: false,
      text: specExample,
      options: {
        extractQuery:
          "\n    SELECT date_bin('1 minute', time) as time_bin, target, count(*) as count,\n" +
          "           arrow_cast(max(audience), 'Dictionary(Int32, Utf8)') as audience\n" +
          '      FROM log_entries\n' +
          "     WHERE insert_time >= '{begin}' AND insert_time < '{end}'\n" +
          '     GROUP BY time_bin, target, audience\n  ',
        countSrcQuery:
          "\n    SELECT sum(nb_objects) as count FROM blocks\n     WHERE insert_time >= '{begin}' AND insert_time < '{end}'\n  ",
        mergePartitionsQuery:
          '\n    SELECT time_bin, target, sum(count) as count, audience\n      FROM {source} GROUP BY time_bin, target, audience\n  ',
        updateGroup: 4000,
        minTimeColumn: 'time_bin',
        maxTimeColumn: 'time_bin',
        timeColumn: 'time_bin',
        sourcePartitionDelta: '1 day',
        sourceDeltaSeconds: 86400,
        mergePartitionDelta: '1 day',
        mergeDeltaSeconds: 86400,
        mergeSortOrder: ['time_bin', 'target'],
      },
    });
  });
  it('parses a plain CREATE with defaults applied', () => {
    const text = create(required);
    assert.deepEqual(parseDdl(text), {
      kind: 'create',
      orReplace: false,
      name: 'v',
      options: requiredOptions,
      explain: false,
      text,
    });
  });
  it('reads keywords and option names in any case, across any whitespace', () => {
    const text = `create\tor\n  REPLACE Materialized\r\nview V with(EXTRACT_QUERY='e',Count_Src_Query='c',merge_partitions_query='m',update_group=1,time_column='t')`;
    assert.deepEqual(parseDdl(text), {
      kind: 'create',
      orReplace: true,
      name: 'v',
      options: requiredOptions,
      explain: false,
      text,
    });
  });
  it('marks EXPLAIN as a dry run', () => {
    const statement = parseDdl(`explain ${create(required)}`);
    assert.equal(statement?.kind === 'create' && statement.explain, true);
  });
  it('takes a quoted name as is', () =>
    assert.equal(parseDdl(`CREATE MATERIALIZED VIEW "my_view" WITH (${required})`)?.name, 'my_view'));
  it('allows leading comments, comments between tokens and one trailing ;', () => {
    const text = `-- my view\n/* a /* nested */ block */ CREATE MATERIALIZED VIEW v -- name\n WITH (${required}) ; -- done\n/* end */\n`;
    assert.deepEqual(parseDdl(text), {
      kind: 'create',
      orReplace: false,
      name: 'v',
      options: requiredOptions,
      explain: false,
      text,
    });
  });
  it('keeps dollar-quoted text verbatim, with embedded $ and quotes', () =>
    assert.equal(
      optionsOf(create(swap(required, "'e'", `$$SELECT '$1', "a$b" $ x$$`))).extractQuery,
      `SELECT '$1', "a$b" $ x`,
    ));
  it('reads tagged dollar quotes, which may hold $$', () =>
    assert.equal(optionsOf(create(swap(required, "'e'", '$q$ SELECT $$x$$ $q$'))).extractQuery, ' SELECT $$x$$ '));
  it("reads '' in a quoted literal as one quote", () =>
    assert.equal(optionsOf(create(required.replace("'e'", "'SELECT ''{begin}'''"))).extractQuery, "SELECT '{begin}'"));
  it('takes min_time_column and max_time_column instead of time_column', () => {
    const options = optionsOf(
      create(required.replace("time_column = 't'", "min_time_column = 'a', max_time_column = 'b'")),
    );
    assert.deepEqual([options.minTimeColumn, options.maxTimeColumn, options.timeColumn], ['a', 'b', undefined]);
  });
  it('lets min_time_column override time_column', () => {
    const options = optionsOf(create(`${required}, min_time_column = 'begin_time'`));
    assert.deepEqual([options.minTimeColumn, options.maxTimeColumn, options.timeColumn], ['begin_time', 't', 't']);
  });
  it('defaults merge_partition_delta to source_partition_delta', () => {
    const options = optionsOf(create(`${required}, source_partition_delta = '6 hours'`));
    assert.deepEqual(
      [
        options.sourcePartitionDelta,
        options.sourceDeltaSeconds,
        options.mergePartitionDelta,
        options.mergeDeltaSeconds,
      ],
      ['6 hours', 21600, '6 hours', 21600],
    );
  });
  it('reads both deltas', () => {
    const options = optionsOf(
      create(`${required}, source_partition_delta = '1 minute', merge_partition_delta = '1 hour'`),
    );
    assert.deepEqual([options.sourceDeltaSeconds, options.mergeDeltaSeconds], [60, 3600]);
  });
  it('splits merge_sort_order on commas', () =>
    assert.deepEqual(optionsOf(create(`${required}, merge_sort_order = ' a ,b,  c'`)).mergeSortOrder, ['a', 'b', 'c']));
  it('accepts update_group 0', () => assert.equal(optionsOf(create(required.replace('= 1', '= 0'))).updateGroup, 0));
});

describe('parseDdl: DROP MATERIALIZED VIEW', () => {
  it('parses DROP', () =>
    assert.deepEqual(parseDdl('DROP MATERIALIZED VIEW v'), {
      kind: 'drop',
      ifExists: false,
      name: 'v',
      explain: false,
      text: 'DROP MATERIALIZED VIEW v',
    }));
  it('parses DROP IF EXISTS, EXPLAIN, comments and a trailing ;', () => {
    const text = '/* x */ EXPLAIN drop materialized view if exists "log_stats";\n-- bye';
    assert.deepEqual(parseDdl(text), { kind: 'drop', ifExists: true, name: 'log_stats', explain: true, text });
  });
  it('folds an unquoted name to lower case', () =>
    assert.equal(parseDdl('DROP MATERIALIZED VIEW Log_Stats')?.name, 'log_stats'));
});

describe('parseDdl: other statements', () => {
  const others = [
    'SELECT 1',
    'select * from log_entries; select 2',
    "INSERT INTO t VALUES ('$$')",
    'CREATE TABLE t (a INT)',
    'CREATE VIEW v AS SELECT 1',
    'CREATE OR REPLACE VIEW v AS SELECT 1',
    'CREATE OR REPLACE TEMP MATERIALIZED VIEW v',
    'DROP TABLE t',
    'DROP VIEW v',
    'EXPLAIN SELECT 1',
    'EXPLAIN ANALYZE CREATE MATERIALIZED VIEW v',
    '"CREATE" MATERIALIZED VIEW v',
    "SELECT 'unterminated",
    '/* unterminated comment',
    '-- only a comment',
    '',
  ];
  for (const text of others) it(`leaves ${JSON.stringify(text)} to DuckDB`, () => assert.equal(parseDdl(text), null));
});

describe('parseDdl: errors', () => {
  it('throws an OrreryError', () =>
    assert.throws(
      () => parseDdl('DROP MATERIALIZED VIEW source'),
      (error) => error instanceof OrreryError && error.status === 'INVALID_ARGUMENT',
    ));

  // One statement per call.
  refuses(
    `${create(required)}; SELECT 1`,
    'DDL_MULTIPLE_STATEMENTS',
    "one statement per call: text follows the ';' at 1:146",
  );
  refuses(
    'DROP MATERIALIZED VIEW a;\nDROP MATERIALIZED VIEW b;',
    'DDL_MULTIPLE_STATEMENTS',
    "one statement per call: text follows the ';' at 2:1",
  );
  refuses(
    'DROP MATERIALIZED VIEW a;;',
    'DDL_MULTIPLE_STATEMENTS',
    "one statement per call: text follows the ';' at 1:26",
  );

  // Statement shape.
  refuses(
    'CREATE MATERIALIZED VIEW v AS SELECT 1',
    'DDL_UNSUPPORTED_CLAUSE',
    'CREATE MATERIALIZED VIEW requires WITH (extract_query = ..., count_src_query = ..., merge_partitions_query = ..., update_group = ..., time_column = ...): AS <query> is not supported at 1:28',
  );
  refuses(
    `${create(required)} AS SELECT 1`,
    'DDL_UNSUPPORTED_CLAUSE',
    'CREATE MATERIALIZED VIEW requires WITH (extract_query = ..., count_src_query = ..., merge_partitions_query = ..., update_group = ..., time_column = ...): AS <query> is not supported at 1:145',
  );
  refuses(
    'CREATE MATERIALIZED VIEW v',
    'DDL_SYNTAX_ERROR',
    "expected WITH (...) after view name 'v', found end of statement at 1:27",
  );
  refuses(
    'CREATE MATERIALIZED VIEW v (a INT)',
    'DDL_SYNTAX_ERROR',
    "expected WITH (...) after view name 'v', found '(' at 1:28",
  );
  refuses(
    'CREATE MATERIALIZED VIEW v WITH extract_query',
    'DDL_SYNTAX_ERROR',
    "expected '(' after WITH, found extract_query at 1:33",
  );
  refuses('CREATE MATERIALIZED TABLE t', 'DDL_SYNTAX_ERROR', 'expected VIEW after MATERIALIZED, found TABLE at 1:21');
  refuses(
    'CREATE MATERIALIZED VIEW IF NOT EXISTS v WITH ()',
    'DDL_UNSUPPORTED_CLAUSE',
    'IF NOT EXISTS is not supported by CREATE MATERIALIZED VIEW (use CREATE OR REPLACE) at 1:26',
  );
  refuses(
    'DROP MATERIALIZED VIEW',
    'DDL_SYNTAX_ERROR',
    'expected a view name after MATERIALIZED VIEW, found end of statement at 1:23',
  );
  refuses(
    'DROP MATERIALIZED VIEW IF EXISTS',
    'DDL_SYNTAX_ERROR',
    'expected a view name after IF EXISTS, found end of statement at 1:33',
  );
  refuses('DROP MATERIALIZED VIEW a, b', 'DDL_SYNTAX_ERROR', "unexpected ',' after view name 'a' at 1:25");
  refuses('DROP MATERIALIZED VIEW a AS SELECT 1', 'DDL_SYNTAX_ERROR', "unexpected AS after view name 'a' at 1:26");
  refuses(`${create(required)} CASCADE`, 'DDL_SYNTAX_ERROR', 'unexpected CASCADE after WITH (...) at 1:145');
  refuses(
    'DROP MATERIALIZED VIEW a CASCADE',
    'DDL_UNSUPPORTED_CLAUSE',
    'CASCADE is not supported: drop the views that read this one first at 1:26',
  );
  refuses(
    'DROP MATERIALIZED VIEW orrery.a',
    'DDL_UNSUPPORTED_CLAUSE',
    "view name 'orrery.…' is qualified: a view set takes an unqualified name at 1:24",
  );

  // Names.
  refuses(
    'DROP MATERIALIZED VIEW "My View"',
    'DDL_INVALID_NAME',
    "invalid view name 'My View': a name must match ^[a-z_][a-z0-9_]{0,254}$",
  );
  refuses(
    'DROP MATERIALIZED VIEW 1abc',
    'DDL_INVALID_NAME',
    "invalid view name '1abc': a name must match ^[a-z_][a-z0-9_]{0,254}$",
  );
  refuses(
    'DROP MATERIALIZED VIEW ""',
    'DDL_INVALID_NAME',
    "invalid view name '': a name must match ^[a-z_][a-z0-9_]{0,254}$",
  );
  refuses(
    `DROP MATERIALIZED VIEW ${'a'.repeat(256)}`,
    'DDL_INVALID_NAME',
    `invalid view name '${'a'.repeat(39)}…': a name is at most 255 characters long`,
  );
  refuses(
    create(required).replace(' v ', ' __internal '),
    'DDL_INVALID_NAME',
    "invalid view name '__internal': names starting with '__' are reserved",
  );
  refuses(
    create(required).replace(' v ', ' Source '),
    'DDL_INVALID_NAME',
    "invalid view name 'source': 'source' is reserved for the {source} placeholder of merge queries",
  );
  it(`accepts a name of 255 characters`, () =>
    assert.equal(parseDdl(`DROP MATERIALIZED VIEW ${'a'.repeat(255)}`)?.name.length, 255));

  // Options.
  refuses(
    create(`${required}, retention = '90 days'`),
    'DDL_UNKNOWN_OPTION',
    "unknown option 'retention' at 1:145; known options: extract_query, count_src_query, merge_partitions_query, update_group, time_column, min_time_column, max_time_column, source_partition_delta, merge_partition_delta, merge_sort_order",
  );
  refuses(
    create(`${required}, UPDATE_GROUP = 2`),
    'DDL_REPEATED_OPTION',
    "option 'update_group' is given twice, again at 1:145",
  );
  refuses(
    create("extract_query = 'e'"),
    'DDL_MISSING_OPTION',
    "missing required options 'count_src_query', 'merge_partitions_query', 'update_group', 'time_column' (or both 'min_time_column' and 'max_time_column')",
  );
  refuses(
    create(required.replace(', update_group = 1', '')),
    'DDL_MISSING_OPTION',
    "missing required option 'update_group'",
  );
  refuses(
    create(required.replace("time_column = 't'", "min_time_column = 't'")),
    'DDL_MISSING_OPTION',
    "missing required option 'time_column' (or both 'min_time_column' and 'max_time_column')",
  );
  refuses(
    create(''),
    'DDL_MISSING_OPTION',
    "missing required options 'extract_query', 'count_src_query', 'merge_partitions_query', 'update_group', 'time_column' (or both 'min_time_column' and 'max_time_column')",
  );
  refuses(
    create(required.replace('= 1', "= '1'")),
    'DDL_INVALID_OPTION_VALUE',
    "option 'update_group' must be a non-negative integer literal, found '1' at 1:123",
  );
  refuses(
    create(required.replace('= 1', '= -1')),
    'DDL_INVALID_OPTION_VALUE',
    "option 'update_group' must be a non-negative integer literal, found -1 at 1:123",
  );
  refuses(
    create(required.replace('= 1', '= 1.5')),
    'DDL_INVALID_OPTION_VALUE',
    "option 'update_group' must be a non-negative integer literal, found 1.5 at 1:123",
  );
  refuses(
    create(required.replace('= 1', '= 2147483648')),
    'DDL_INVALID_OPTION_VALUE',
    "option 'update_group' must be at most 2147483647, found 2147483648 at 1:123",
  );
  refuses(
    create(required.replace("'t'", 't')),
    'DDL_INVALID_OPTION_VALUE',
    "option 'time_column' takes a quoted string ('...' or $$...$$), found t at 1:140",
  );
  refuses(
    create(required.replace("'e'", '42')),
    'DDL_INVALID_OPTION_VALUE',
    "option 'extract_query' takes a quoted string ('...' or $$...$$), found 42 at 1:50",
  );
  refuses(
    create(swap(required, "'e'", '$$  \n $$')),
    'DDL_INVALID_OPTION_VALUE',
    "option 'extract_query' must not be empty at 1:50",
  );
  refuses(
    create(required.replace("'c'", "''")),
    'DDL_INVALID_OPTION_VALUE',
    "option 'count_src_query' must not be empty at 1:73",
  );
  refuses(
    create(`${required}, source_partition_delta = '1 week'`),
    'DDL_INVALID_OPTION_VALUE',
    "option 'source_partition_delta' must be '<n> <unit>' with n > 0 and unit second(s), minute(s), hour(s) or day(s), found '1 week' at 1:170",
  );
  refuses(
    create(`${required}, merge_partition_delta = '0 days'`),
    'DDL_INVALID_OPTION_VALUE',
    "option 'merge_partition_delta' must be '<n> <unit>' with n > 0 and unit second(s), minute(s), hour(s) or day(s), found '0 days' at 1:169",
  );
  refuses(
    create(`${required}, merge_partition_delta = 86400`),
    'DDL_INVALID_OPTION_VALUE',
    "option 'merge_partition_delta' takes a quoted string ('...' or $$...$$), found 86400 at 1:169",
  );
  refuses(
    create(`${required}, merge_sort_order = 'a,,b'`),
    'DDL_INVALID_OPTION_VALUE',
    "option 'merge_sort_order' has an empty column name in 'a,,b' at 1:164",
  );
  refuses(
    create(`${required}, merge_sort_order = 'a,'`),
    'DDL_INVALID_OPTION_VALUE',
    "option 'merge_sort_order' has an empty column name in 'a,' at 1:164",
  );
  refuses(
    create(`${required}, merge_sort_order = ' '`),
    'DDL_INVALID_OPTION_VALUE',
    "option 'merge_sort_order' must not be empty at 1:164",
  );

  // Option list syntax.
  refuses(create(`${required},`), 'DDL_SYNTAX_ERROR', "expected an option name, found ')' at 1:144");
  refuses(
    create(required.replace("extract_query = 'e'", "extract_query 'e'")),
    'DDL_SYNTAX_ERROR',
    "expected '=' after option 'extract_query', found 'e' at 1:48",
  );
  refuses(
    create(required.replace("'e'", '')),
    'DDL_SYNTAX_ERROR',
    "expected a value for option 'extract_query', found ',' at 1:50",
  );
  refuses(
    create(required.replace("'e',", "'e'")),
    'DDL_SYNTAX_ERROR',
    "expected ',' or ')' after option 'extract_query', found count_src_query at 1:54",
  );

  // Unterminated literals, comments and parentheses, with where they open.
  refuses(
    `CREATE MATERIALIZED VIEW v WITH (\n  extract_query = $$SELECT 1\n)`,
    'DDL_SYNTAX_ERROR',
    'unterminated dollar-quoted string: $$ at 2:19 is never closed',
  );
  refuses(
    'CREATE MATERIALIZED VIEW v WITH (extract_query = $q$SELECT 1$$)',
    'DDL_SYNTAX_ERROR',
    'unterminated dollar-quoted string: $q$ at 1:50 is never closed',
  );
  refuses(
    "CREATE MATERIALIZED VIEW v WITH (\n\n  extract_query = 'it''s)",
    'DDL_SYNTAX_ERROR',
    'unterminated string literal starting at 3:19',
  );
  refuses('DROP MATERIALIZED VIEW "v', 'DDL_SYNTAX_ERROR', 'unterminated quoted identifier starting at 1:24');
  refuses('DROP MATERIALIZED VIEW v /* /* */', 'DDL_SYNTAX_ERROR', 'unterminated comment starting at 1:26');
  refuses(
    `CREATE MATERIALIZED VIEW v WITH (\n${required}`,
    'DDL_SYNTAX_ERROR',
    "unterminated WITH (...) list: the '(' at 1:33 is never closed",
  );
  refuses(
    'CREATE MATERIALIZED VIEW v WITH (extract_query =',
    'DDL_SYNTAX_ERROR',
    "unterminated WITH (...) list: the '(' at 1:33 is never closed",
  );
});
