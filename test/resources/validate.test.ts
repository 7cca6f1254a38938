// Issue 13 items 1, 2 and 7: resources files (the spec's entries) and every error and warning of the
// spec's Validation section, reported as <file>: <entry>: error|warning: <message>. Expressions are
// parsed and bound by a real DuckDB against the built-in view sets' columns.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ExpressionAnalyzer,
  diagnosticLine,
  parseResourcesFile,
  tableResolver,
  validateFolder,
  validateResources,
  type ServerViewSet,
} from '../../src/resources/index.js';
import { builtinViewSets } from '../../src/views/index.js';

const viewSets: ServerViewSet[] = [
  ...builtinViewSets.map((v) => ({ name: v.name, columns: v.columns, loadError: null })),
  { name: 'broken_counts', columns: [], loadError: 'Catalog Error: Table with name nowhere does not exist!' },
];
const errorsView = `CREATE MATERIALIZED VIEW log_entries_copy WITH (extract_query = $$SELECT 1$$)`;

describe('resources validation (issue 13)', () => {
  let analyzer: ExpressionAnalyzer;
  before(async () => {
    analyzer = await ExpressionAnalyzer.open();
  });
  after(() => analyzer.close());

  const check = async (resources: unknown, views: Record<string, string> = {}): Promise<string[]> => {
    const file = parseResourcesFile('resources/logs.resources.json', JSON.stringify({ resources }));
    const result = await validateResources([file], tableResolver(viewSets, new Map(Object.entries(views))), analyzer);
    return result.diagnostics.map(diagnosticLine);
  };
  const at = (entry: string, severity: string, message: string): string =>
    `resources/logs.resources.json: ${entry}: ${severity}: ${message}`;

  it("the spec's example file is valid, its column stored as VARCHAR under __orr_<hash>", async () => {
    const file = parseResourcesFile(
      'resources/logs.resources.json',
      JSON.stringify({
        resources: {
          pod_name: { column: { table: 'log_entries', expression: "properties->>'k8s.pod.name'" } },
          pod_name_filter: { index: { table: 'log_entries', column: 'pod_name', kind: 'bloom_filter' } },
          by_pod: { projection: { table: 'log_entries', order_by: ['pod_name', 'time'] } },
        },
      }),
    );
    const result = await validateResources([file], tableResolver(viewSets, new Map()), analyzer);
    assert.deepEqual(result.diagnostics, []);
    assert.deepEqual(
      result.entries.map((e) => [e.key, e.kind, e.physical, e.unsupported]),
      [
        ['pod_name', 'column', 'log_entries', null],
        ['pod_name_filter', 'index', 'log_entries', null],
        ['by_pod', 'projection', 'log_entries', null],
      ],
    );
    const column = result.entries[0];
    assert.ok(column.kind === 'column');
    assert.equal(column.storedType, 'VARCHAR');
    assert.match(column.storedName, /^__orr_[0-9a-f]{16}$/);
    // The projection sorts by the stored column; one by columns alone has no sortedBy, so its hash is as before.
    const projection = result.entries[2];
    assert.ok(projection.kind === 'projection');
    assert.deepEqual(projection.sortedBy, [column.storedName, 'time']);
    // The index reads the column entry's expression, part of its hash: a changed expression is another index.
    const index = result.entries[1];
    assert.ok(index.kind === 'index');
    assert.equal(index.indexedExpression, "properties->>'k8s.pod.name'");
    const [byTime] = (
      await validateResources(
        [
          parseResourcesFile(
            'resources/logs.resources.json',
            JSON.stringify({ resources: { by_time: { projection: { table: 'log_entries', order_by: ['time'] } } } }),
          ),
        ],
        tableResolver(viewSets, new Map()),
        analyzer,
      )
    ).entries;
    assert.ok(byTime.kind === 'projection' && !('sortedBy' in byTime));
  });

  it('parses every kind and its fields; a rollup with measures, grain, retention and from', async () => {
    const file = parseResourcesFile(
      'resources/r.resources.json',
      JSON.stringify({
        resources: {
          per_minute: {
            rollup: {
              table: 'log_entries',
              grain: '1m',
              dimensions: ['exe', 'level'],
              measures: { entries: 'count(*)', last_time: 'max(time)' },
              retention: '30d',
              async: true,
            },
          },
          per_hour: {
            rollup: {
              table: 'log_entries',
              grain: '1h',
              dimensions: ['exe'],
              measures: { entries: 'count(*)' },
              from: 'per_minute',
            },
          },
        },
      }),
    );
    assert.deepEqual(file.diagnostics, []);
    const [minute, hour] = file.entries;
    assert.deepEqual(minute, {
      key: 'per_minute',
      file: 'resources/r.resources.json',
      table: 'log_entries',
      async: true,
      kind: 'rollup',
      grain: '1m',
      grainSeconds: 60,
      dimensions: ['exe', 'level'],
      measures: [
        { name: 'entries', expression: 'count(*)' },
        { name: 'last_time', expression: 'max(time)' },
      ],
      retention: '30d',
      retentionSeconds: 30 * 86400,
      from: null,
    });
    assert.equal(hour.kind === 'rollup' && hour.from, 'per_minute');
    const result = await validateResources([file], tableResolver(viewSets, new Map()), analyzer);
    assert.deepEqual(result.diagnostics, []);
  });

  it('errors: the table does not exist, its views file or alias does not, its view does not compile', async () => {
    assert.deepEqual(
      await check(
        {
          a: { column: { table: 'no_such_view', expression: 'msg' } },
          b: { column: { table: 'views/missing.sql#missing', expression: 'msg' } },
          c: { column: { table: 'views/copy.sql#other_name', expression: 'msg' } },
          d: { column: { table: 'broken_counts', expression: 'msg' } },
          e: { column: { table: 'views/copy.sql', expression: 'msg' } },
        },
        { 'views/copy.sql': errorsView },
      ),
      [
        at('a', 'error', "view set 'no_such_view' does not exist on the server"),
        at('b', 'error', "views file 'views/missing.sql' does not exist in the publication"),
        at('c', 'error', "views/copy.sql defines view set 'log_entries_copy', not 'other_name'"),
        at(
          'd',
          'error',
          "the view of 'broken_counts' does not compile: Catalog Error: Table with name nowhere does not exist!",
        ),
        at('e', 'error', "table 'views/copy.sql' names a views file; write views/copy.sql#<view set>"),
      ],
    );
  });

  it('errors: a column expression that does not parse, aggregates, windows, is qualified or reads an entry or measure', async () => {
    const lines = await check({
      bad_syntax: { column: { table: 'log_entries', expression: 'lower(msg' } },
      aggregate: { column: { table: 'log_entries', expression: 'count(*)' } },
      window: { column: { table: 'log_entries', expression: 'row_number() OVER (ORDER BY time)' } },
      qualified: { column: { table: 'log_entries', expression: 'log_entries.msg' } },
      unknown: { column: { table: 'log_entries', expression: 'lower(nothing_here)' } },
      reads_entry: { column: { table: 'log_entries', expression: 'lower(aggregate)' } },
      reads_measure: { column: { table: 'log_entries', expression: 'entries + 1', type: 'BIGINT' } },
      r: { rollup: { table: 'log_entries', grain: '1m', dimensions: ['exe'], measures: { entries: 'count(*)' } } },
    });
    assert.equal(lines.length, 7, lines.join('\n'));
    assert.match(
      lines[0],
      /^resources\/logs\.resources\.json: bad_syntax: error: expression 'lower\(msg' does not parse: syntax error at or near /,
    );
    assert.equal(
      lines[1],
      at(
        'aggregate',
        'error',
        "expression 'count(*)' calls an aggregate function; a stored column is a row expression",
      ),
    );
    assert.equal(
      lines[2],
      at(
        'window',
        'error',
        "expression 'row_number() OVER (ORDER BY time)' calls a window function; a stored column is a row expression",
      ),
    );
    assert.equal(
      lines[3],
      at(
        'qualified',
        'error',
        "expression 'log_entries.msg' uses a qualified name (log_entries.msg); name the table's columns alone",
      ),
    );
    assert.match(
      lines[4],
      /^resources\/logs\.resources\.json: unknown: error: expression 'lower\(nothing_here\)' Binder Error: Referenced column "nothing_here" not found/,
    );
    assert.equal(
      lines[5],
      at(
        'reads_entry',
        'error',
        "expression 'lower(aggregate)' reads 'aggregate', another resource entry; read the table's columns",
      ),
    );
    assert.equal(
      lines[6],
      at('reads_measure', 'error', "expression 'entries + 1' reads 'entries', a measure of rollup 'r'"),
    );
  });

  it('errors: a name of another kind, a column entry of another table, a measure, or nothing', async () => {
    assert.deepEqual(
      await check({
        pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
        span_kind: { column: { table: 'spans', expression: 'lower(name)' } },
        by_pod: { projection: { table: 'log_entries', order_by: ['pod', 'time'] } },
        on_projection: { index: { table: 'log_entries', column: 'by_pod', kind: 'minmax' } },
        on_other_table: { index: { table: 'log_entries', column: 'span_kind', kind: 'set' } },
        on_measure: { index: { table: 'log_entries', column: 'entries', kind: 'minmax' } },
        on_nothing: { projection: { table: 'log_entries', order_by: ['nowhere'] } },
        r: { rollup: { table: 'log_entries', grain: '1h', dimensions: ['exe'], measures: { entries: 'count(*)' } } },
      }),
      [
        at('on_projection', 'error', "index.column 'by_pod' is a projection entry, not a column"),
        at('on_other_table', 'error', "index.column 'span_kind' is a column entry of spans, not of log_entries"),
        at('on_measure', 'error', "index.column 'entries' is a measure of rollup 'r', not a column"),
        at(
          'on_nothing',
          'error',
          "projection.order_by 'nowhere' is neither a column entry of this file nor a column of log_entries",
        ),
      ],
    );
  });

  it('errors: rollup measures missing or row scalars; from not a rollup, a cycle, or not dividing the grain', async () => {
    assert.deepEqual(
      await check({
        no_measures: { rollup: { table: 'log_entries', grain: '1m', dimensions: ['exe'] } },
        row_scalar: { rollup: { table: 'log_entries', grain: '1m', measures: { level: 'level + 1' } } },
        a_column: { column: { table: 'log_entries', expression: 'lower(msg)' } },
        from_column: { rollup: { table: 'log_entries', grain: '1h', measures: { n: 'count(*)' }, from: 'a_column' } },
        from_nothing: { rollup: { table: 'log_entries', grain: '1h', measures: { n: 'count(*)' }, from: 'nope' } },
        loop_a: { rollup: { table: 'log_entries', grain: '1h', measures: { n: 'count(*)' }, from: 'loop_b' } },
        loop_b: { rollup: { table: 'log_entries', grain: '1h', measures: { n: 'count(*)' }, from: 'loop_a' } },
        by_7m: { rollup: { table: 'log_entries', grain: '7m', measures: { n: 'count(*)' } } },
        by_10m: { rollup: { table: 'log_entries', grain: '10m', measures: { n: 'count(*)' }, from: 'by_7m' } },
      }),
      [
        at(
          'no_measures',
          'error',
          'rollup.measures is missing: an object of named aggregate expressions, {"requests": "count(*)"}',
        ),
        at(
          'row_scalar',
          'error',
          "measure 'level' (level + 1) is a row scalar; a measure aggregates (count(*), sum(x), …)",
        ),
        at('from_column', 'error', "from: 'a_column' is not a rollup of this file"),
        at('from_nothing', 'error', "from: 'nope' is not a rollup of this file"),
        at('loop_a', 'error', "from: 'loop_b' forms a cycle (loop_a → loop_b → loop_a)"),
        at('loop_b', 'error', "from: 'loop_a' forms a cycle (loop_b → loop_a → loop_b)"),
        at('by_7m', 'warning', 'cannot be installed: grain 7m does not divide the bucket ladder (one day)'),
        at('by_10m', 'error', "from: 'by_7m': its grain 7m does not divide 10m"),
      ],
    );
  });

  it('errors: a key twice, two column entries storing one expression (a JSON property read spelled four ways)', async () => {
    const text = `{"resources": {
      "pod": {"column": {"table": "log_entries", "expression": "properties->>'pod'"}},
      "pod": {"column": {"table": "log_entries", "expression": "lower(msg)"}},
      "pod_again": {"column": {"table": "log_entries", "expression": "json_extract_string(properties, 'pod')"}},
      "pod_thrice": {"column": {"table": "log_entries", "expression": "property_get(\\"properties\\", 'pod')"}},
      "pod_path": {"column": {"table": "log_entries", "expression": "json_extract_string(properties, '$.\\"pod\\"')"}},
      "other_key": {"column": {"table": "log_entries", "expression": "properties->>'node'"}},
      "pointer": {"column": {"table": "log_entries", "expression": "properties->>'/node'"}},
      "slash_key": {"column": {"table": "log_entries", "expression": "property_get(properties, '/node')"}}
    }}`;
    const file = parseResourcesFile('resources/logs.resources.json', text);
    const result = await validateResources([file], tableResolver(viewSets, new Map()), analyzer);
    assert.deepEqual(result.diagnostics.map(diagnosticLine), [
      at('pod', 'error', "the key 'pod' appears twice in the file"),
      // JSON.parse's rule: the last of two equal keys is the one read, so pod is lower(msg) here.
      at(
        'pod_thrice',
        'error',
        'stores the same expression on log_entries as resources/logs.resources.json: pod_again',
      ),
      at('pod_path', 'error', 'stores the same expression on log_entries as resources/logs.resources.json: pod_again'),
      // A JSON pointer and property_get's key `/node` read different values: two expressions.
    ]);
  });

  it('errors: key syntax, no kind, two kinds, unknown fields, bad field types, bad JSON', async () => {
    assert.deepEqual(
      await check({
        '9lives': { column: { table: 'log_entries', expression: 'msg' } },
        nothing: {},
        both: {
          column: { table: 'log_entries', expression: 'msg' },
          index: { table: 'log_entries', column: 'msg', kind: 'set' },
        },
        extra: { index: { table: 'log_entries', column: 'msg', kind: 'hash', size: 3 } },
        not_async: { projection: { table: 'log_entries', order_by: [], async: 'yes' } },
      }),
      [
        at('9lives', 'error', "the key '9lives' must start with a letter or _ and hold only letters, digits, _ or -"),
        at('nothing', 'error', 'the entry has no kind (one of column, index, projection, rollup)'),
        at('both', 'error', 'the entry has 2 kinds (column, index); an entry has one kind'),
        at('extra', 'error', "unknown index field 'size' (table, async, column, kind)"),
        at('extra', 'error', "index.kind 'hash' is not one of bloom_filter, minmax, set, text"),
        at('not_async', 'error', 'projection.async must be true or false, not string'),
        at('not_async', 'error', 'projection.order_by must be a non-empty array of column names'),
      ],
    );
    const broken = parseResourcesFile('resources/x.resources.json', '{"resources": {"a": }');
    assert.deepEqual(broken.diagnostics.map(diagnosticLine), [
      "resources/x.resources.json: error: not valid JSON: unexpected '}' at line 1, column 21",
    ]);
  });

  it('warnings: a column the database cannot store without a type, measures that cannot be stored, a second text index', async () => {
    assert.deepEqual(
      await check({
        hour: { column: { table: 'log_entries', expression: "date_trunc('hour', time)" } },
        day_typed: { column: { table: 'log_entries', expression: "date_trunc('day', time)", type: 'TIMESTAMP' } },
        bad_type: { column: { table: 'log_entries', expression: 'msg', type: 'NOT_A_TYPE' } },
        exact: {
          rollup: {
            table: 'log_entries',
            grain: '1h',
            measures: { exes: 'count(DISTINCT exe)', p99: 'quantile_cont(level, 0.99)' },
          },
        },
        msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } },
        msg_text_2: { index: { table: 'log_entries', column: 'msg', kind: 'text' } },
        level_text: { index: { table: 'log_entries', column: 'level', kind: 'text' } },
      }),
      [
        at(
          'hour',
          'warning',
          `cannot be installed: declare "type" for expression 'date_trunc('hour', time)' (TIMESTAMP); only JSON property reads, string literals and string functions are stored as VARCHAR without it`,
        ),
        at(
          'bad_type',
          'error',
          "type 'NOT_A_TYPE' cannot hold expression 'msg': Catalog Error: Type with name NOT_A_TYPE does not exist!",
        ),
        at(
          'exact',
          'warning',
          'cannot be installed: count(DISTINCT …) is exact and cannot be stored; use approx_count_distinct',
        ),
        at('msg_text_2', 'warning', "cannot be installed: msg already has text index 'msg_text' (one per column)"),
        at('level_text', 'warning', 'cannot be installed: a text index needs a text column; level is INTEGER'),
      ],
    );
  });

  it("warnings: a measure of measures' value that mixes series (name neither a dimension nor pinned by its FILTER); no warning for one that does not (#14)", async () => {
    const rollup = (dimensions: string[], measures: Record<string, string>): unknown => ({
      rollup: { table: 'measures', grain: '1h', dimensions, measures },
    });
    const mixes = (key: string, measure: string, expression: string, fn: string): string =>
      at(
        key,
        'warning',
        `cannot be installed: measure '${measure}' (${expression}) mixes series: value is per name of measures, and ${fn}() reads it with name neither a dimension nor pinned by its FILTER (WHERE name = '…'); add name to dimensions or pin it`,
      );
    assert.deepEqual(
      await check({
        // Valid: the series a dimension, pinned by FILTER (=, IN, ORs of those, within an AND), or no value read.
        by_name: rollup(['name', 'exe'], {
          mean: 'avg(value)',
          top: 'arg_max(exe, value)',
          p99: 'approx_quantile(value, 0.99)',
        }),
        pinned: rollup(['exe'], {
          cpu_max: "max(value) FILTER (WHERE name = 'cpu')",
          cpu_mean: "avg(value) FILTER (WHERE 'cpu' = name AND exe <> 'x')",
          io: "sum(value) FILTER (WHERE name IN ('read_bytes', 'write_bytes'))",
          either: "max(value) FILTER (WHERE (name = 'a' AND exe = 'x') OR name = 'b')",
          ratio: "sum(value) FILTER (WHERE name = 'a') / nullif(count(*) FILTER (WHERE name = 'a'), 0)",
        }),
        points: rollup(['exe'], {
          n: 'count(*)',
          valued: 'count(value)',
          set: 'count(*) FILTER (WHERE value IS NOT NULL)',
        }),
        other_tables: {
          rollup: { table: 'log_entries', grain: '1h', dimensions: ['exe'], measures: { worst: 'max(level)' } },
        },
        // Mixing: bytes and seconds summed, compared or picked among.
        summed: rollup(['exe'], { total: 'sum(value)' }),
        other_pin: rollup(['exe'], { m: "max(value) FILTER (WHERE exe = 'x')" }),
        or_other: rollup(['exe'], { m: "max(value) FILTER (WHERE name = 'a' OR exe = 'x')" }),
        like: rollup(['exe'], { m: "max(value) FILTER (WHERE name LIKE 'cpu%')" }),
        threshold: rollup(['exe'], { hot: 'count(*) FILTER (WHERE value > 0.9)' }),
        last: rollup(['exe'], { last: 'arg_max(value, time)' }),
        second_call: rollup(['exe'], { m: "sum(value) FILTER (WHERE name = 'a') + max(value)" }),
      }),
      [
        mixes('summed', 'total', 'sum(value)', 'sum'),
        mixes('other_pin', 'm', "max(value) FILTER (WHERE exe = 'x')", 'max'),
        mixes('or_other', 'm', "max(value) FILTER (WHERE name = 'a' OR exe = 'x')", 'max'),
        mixes('like', 'm', "max(value) FILTER (WHERE name LIKE 'cpu%')", 'max'),
        mixes('threshold', 'hot', 'count(*) FILTER (WHERE value > 0.9)', 'count'),
        mixes('last', 'last', 'arg_max(value, time)', 'arg_max'),
        mixes('second_call', 'm', "sum(value) FILTER (WHERE name = 'a') + max(value)", 'max'),
      ],
    );
  });

  it('warnings, not errors: maxMap and minMap (If too), which DuckDB has no aggregate for, are not installed; the rest of the publication is (#14)', async () => {
    const rollup = (measures: Record<string, string>): unknown => ({
      rollup: { table: 'log_entries', grain: '1h', dimensions: ['exe'], measures },
    });
    const result = await check({
      by_target: rollup({ worst: 'maxMap([target], [level])' }),
      best_errors: rollup({ best: 'minMapIf([target], [level], level <= 2)' }),
      plain: rollup({ worst: 'max(level)' }),
    });
    assert.deepEqual(result, [
      at(
        'by_target',
        'warning',
        "cannot be installed: measure 'worst' (maxMap([target], [level])): maxMap has no DuckDB aggregate, and Orrery stores no per-key state; add the map's key to dimensions and store max(value) instead",
      ),
      at(
        'best_errors',
        'warning',
        "cannot be installed: measure 'best' (minMapIf([target], [level], level <= 2)): minMapIf has no DuckDB aggregate, and Orrery stores no per-key state; add the map's key to dimensions and store min(value) instead",
      ),
    ]);
  });

  it('warnings: a name that is a column entry and a physical column is read as the column; an existing column satisfies an entry', async () => {
    const file = parseResourcesFile(
      'resources/logs.resources.json',
      JSON.stringify({
        resources: {
          exe: { column: { table: 'log_entries', expression: 'exe' } },
          by_exe: { projection: { table: 'log_entries', order_by: ['exe'] } },
          exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } },
        },
      }),
    );
    const result = await validateResources([file], tableResolver(viewSets, new Map()), analyzer);
    assert.deepEqual(result.diagnostics.map(diagnosticLine), [
      at(
        'by_exe',
        'warning',
        "projection.order_by 'exe' names both column entry 'exe' and the column exe of log_entries; it is read as the column",
      ),
      at(
        'exe_set',
        'warning',
        "index.column 'exe' names both column entry 'exe' and the column exe of log_entries; it is read as the column",
      ),
    ]);
    const exe = result.entries[0];
    assert.ok(exe.kind === 'column');
    assert.equal(exe.satisfiedBy, 'exe');
    // The index reads the column, as the warning says: no expression of the entry's.
    const index = result.entries[2];
    assert.ok(index.kind === 'index' && !('indexedExpression' in index));
  });

  it('local files cannot declare objects; resources files take no overlays', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-resources-'));
    try {
      const entry = { resources: { pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } } } };
      const write = (path: string, body: unknown): void => {
        mkdirSync(dirname(join(dir, path)), { recursive: true });
        writeFileSync(join(dir, path), JSON.stringify(body));
      };
      write('resources/logs.resources.json', entry);
      write('resources/dev.local.resources.json', entry);
      write('resources/dev.resources.local.json', entry);
      write('resources/.local/mine.resources.json', entry);
      write('resources/empty.local.resources.json', { resources: {} });
      write('resources/logs.resources.overrides.json', entry);
      const result = await validateFolder(dir, viewSets);
      assert.deepEqual(result.diagnostics.map(diagnosticLine), [
        'resources/.local/mine.resources.json: pod: error: a local file cannot declare database objects (it is under a .local/ folder, and local files are excluded from publications)',
        'resources/dev.local.resources.json: pod: error: a local file cannot declare database objects (its name is .local, and local files are excluded from publications)',
        'resources/dev.resources.local.json: pod: error: a local file cannot declare database objects (its name is .local, and local files are excluded from publications)',
        'resources/logs.resources.overrides.json: error: resources files take no .overrides or .local overlays; edit the resources file itself',
      ]);
      assert.deepEqual(
        result.entries.map((e) => `${e.file}#${e.key}`),
        ['resources/logs.resources.json#pod'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
