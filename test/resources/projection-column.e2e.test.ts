// A projection sorted by a column entry (issue 13, the spec's example `by_pod`): its copies hold the entry's
// stored column and are sorted by it, and a statement restricting the entry's expression reads them, whether
// the expression was replaced by the stored column or left as written. Every answer is the same as without
// the resources, for an admin and two audiences' keys.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { plainRows, refusal } from '../lakehouse/lakehouse-fixtures.js';
import { logsRequest, pastInsertTimes, postOtlp } from '../support/otlp.js';
import { adminKey } from '../support/orrery-process.js';
import { assertReads, copyRows } from '../support/projections.js';
import { publishFolder, teamKey, useAudiencesOrrery } from '../support/publish.js';

/** Each query, and whether an admin's reads the projection's copies. */
const queries: Array<[string, boolean]> = [
  ["SELECT msg FROM log_entries WHERE properties->>'k8s.pod.name' = 'pod-1' ORDER BY msg", true],
  ["SELECT count(*) AS n FROM log_entries WHERE properties->>'k8s.pod.name' IN ('pod-0', 'pod-2')", true],
  ["SELECT * FROM log_entries WHERE properties->>'k8s.pod.name' >= 'pod-1' ORDER BY msg", true],
  // The alias shadows properties: the expression is left as written, and still restricts the sort column.
  ["SELECT msg AS properties FROM log_entries WHERE properties->>'k8s.pod.name' = 'pod-2' ORDER BY 1", true],
  ['SELECT msg FROM log_entries WHERE level = 3 ORDER BY msg', false],
  ["SELECT count(*) AS n FROM log_entries WHERE properties->>'other' = 'pod-1'", false],
];

describe("a projection sorted by a column entry: the spec's example by_pod (issue 13)", () => {
  const suite = useAudiencesOrrery('orrery-projection-column-', { ORRERY_RETIRE_DELAY_SECONDS: '0' });
  const { fixture, dir } = suite;
  const answers = new Map<string, unknown>();
  const everyAnswer = () => suite.everyAnswer(queries.map(([sql]) => sql));

  before(async () => {
    const start = Math.floor(Date.now() / 1000);
    for (const i of [0, 1, 2]) {
      // Pods out of order within a partition, so its sorted copy differs from it.
      const time = 1704164645000000000n + BigInt(i) * 1_000_000n;
      const logs = ['pod-2', 'pod-0', 'pod-1', 'pod-0'].map((pod, j) => ({
        time: time + BigInt(j),
        severity: 9 + 4 * ((i + j) % 3),
        body: `entry ${i}.${j}`,
        target: 'app',
        attributes: { 'k8s.pod.name': pod },
      }));
      const body = logsRequest({ 'service.name': `svc${i}` }, logs);
      const sent = await postOtlp(fixture.orrery.httpPort, 'logs', i === 1 ? teamKey.key : adminKey.key, body);
      assert.equal(sent.status, 200, sent.text);
      await new Promise((resolve) => setTimeout(resolve, 1100));
    }
    await suite.materialize(start - 2, pastInsertTimes());
    for (const [sql, rows] of await everyAnswer()) answers.set(sql, rows);
    assert.deepEqual(answers.get(`admin: ${queries[0][0]}`), [
      { msg: 'entry 0.2' },
      { msg: 'entry 1.2' },
      { msg: 'entry 2.2' },
    ]);
  });

  it('publish installs by_pod; its copies are sorted by the stored column; queries on the expression read them', async () => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const declare = (async: boolean) =>
      writeFileSync(
        join(dir, 'resources', 'logs.resources.json'),
        JSON.stringify({
          resources: {
            pod_name: { column: { table: 'log_entries', expression: "properties->>'k8s.pod.name'", async } },
            pod_name_filter: { index: { table: 'log_entries', column: 'pod_name', kind: 'bloom_filter' } },
            by_pod: { projection: { table: 'log_entries', order_by: ['pod_name', 'time'] } },
          },
        }),
      );
    // An async column is backfilled after serving: the projection, copied before, could not be sorted by it.
    declare(true);
    const dry = await publishFolder(fixture.orrery.address, dir, '--dry-run');
    assert.match(dry.text, /^warning: omitted projection by_pod on log_entries .*'pod_name', which is async/m);
    declare(false);
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.doesNotMatch(run.text, /warning/);
    assert.match(run.text, /^backfill projection by_pod on log_entries \(by pod_name, time\): 3 of 3 partition\(s\)/m);

    const { rows } = await fixture.orrery.metadata.query<{ order_by: string[]; copy_path: string }>(
      `SELECT p.order_by, f.copy_path FROM resource_projections p
         JOIN resource_projection_files f USING (projection_hash) ORDER BY f.copy_path`,
    );
    assert.equal(rows.length, 3);
    const [stored] = rows[0].order_by;
    assert.match(stored, /^__orr_[0-9a-f]{16}$/);
    assert.deepEqual(rows[0].order_by, [stored, 'time']);
    const copy = (await fixture.orrery.store.get(rows[0].copy_path))!;
    const sorted = await copyRows(copy, (file) => `SELECT "${stored}" FROM read_parquet('${file}')`);
    assert.deepEqual(sorted.flat(), ['pod-0', 'pod-0', 'pod-1', 'pod-2']);

    const now = await everyAnswer();
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
    await assertReads(fixture.admin, queries, 'by_pod');
  });

  it('an entry an existing column satisfies, one storing some columns, an async pair; a statement naming __orr_', async () => {
    // A statement naming the stored column itself: no key's view binds it, so it fails as it would without it.
    const [{ column_name: stored }] = (
      await fixture.orrery.metadata.query<{ column_name: string }>(
        "SELECT column_name FROM resource_columns WHERE entry_key = 'pod_name'",
      )
    ).rows;
    const direct = (name: string) => `SELECT count(*) AS n FROM log_entries WHERE ${name} = 'pod-1'`;
    writeFileSync(
      join(dir, 'resources', 'logs.resources.json'),
      JSON.stringify({
        resources: {
          pod_name: { column: { table: 'log_entries', expression: "properties->>'k8s.pod.name'" } },
          pod_name_filter: { index: { table: 'log_entries', column: 'pod_name', kind: 'bloom_filter' } },
          by_pod: { projection: { table: 'log_entries', order_by: ['pod_name', 'time'] } },
          // `exe` computes it: nothing is stored, and by_exe sorts by exe.
          service: { column: { table: 'log_entries', expression: 'exe' } },
          by_exe: { projection: { table: 'log_entries', order_by: ['service'] } },
          // By a column entry, storing msg only (and the sort, audience and time columns).
          by_pod_msg: { projection: { table: 'log_entries', order_by: ['pod_name', 'time'], columns: ['msg'] } },
          // Both async: the column is backfilled after serving, then the projection copied sorted by it.
          pod_upper: {
            column: { table: 'log_entries', expression: "upper(properties->>'k8s.pod.name')", async: true },
          },
          by_pod_upper: { projection: { table: 'log_entries', order_by: ['pod_upper'], async: true } },
        },
      }),
    );
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.doesNotMatch(run.text, /warning/);
    assert.match(run.text, /^satisfied column service on log_entries: the column exe computes it$/m);
    assert.match(run.text, /^backfill projection by_exe on log_entries \(by service\): 3 of 3 partition\(s\)/m);
    assert.match(
      run.text,
      /^backfill projection by_pod_msg on log_entries \(by pod_name, time\): 3 of 3 partition\(s\)/m,
    );
    // The async pair after serving, the column first.
    const served = run.out.findIndex((l) => l.startsWith('served publication'));
    const ready = (key: string) => run.out.findIndex((l) => l.startsWith(`ready `) && l.includes(` ${key} `));
    assert.ok(served >= 0 && served < ready('pod_upper') && ready('pod_upper') < ready('by_pod_upper'), run.text);

    const { rows } = await fixture.orrery.metadata.query<{ entry_key: string; order_by: string[]; columns: string[] }>(
      "SELECT entry_key, order_by, columns FROM resource_projections WHERE entry_key <> 'by_pod' ORDER BY 1",
    );
    const upper = rows.find((r) => r.entry_key === 'by_pod_upper')!.order_by[0];
    assert.match(upper, /^__orr_[0-9a-f]{16}$/);
    assert.deepEqual(
      rows.map((r) => [r.entry_key, r.order_by, r.columns]),
      [
        ['by_exe', ['exe'], null],
        ['by_pod_msg', [stored, 'time'], [stored, 'audience', 'msg', 'time']],
        ['by_pod_upper', [upper], null],
      ],
    );
    const now = await everyAnswer();
    for (const [sql, rows] of answers) assert.deepEqual(now.get(sql), rows, sql);
    const more = [
      "SELECT msg FROM log_entries WHERE exe = 'svc1' ORDER BY msg",
      "SELECT msg FROM log_entries WHERE upper(properties->>'k8s.pod.name') = 'POD-2' ORDER BY msg",
    ];
    for (const sql of more)
      for (const [who, client] of suite.clients())
        assert.deepEqual(
          await plainRows(client, sql),
          await plainRows(client, sql.replace('WHERE ', 'WHERE (').replace(' ORDER', ') OR false ORDER')),
          `${who}: ${sql}`,
        );
    // The narrower by_pod_msg serves the statements reading msg by the stored column, not those reading * or
    // properties (the expression left as written), which by_pod serves.
    const reads = (entries: ReadonlyArray<readonly [string, boolean]>, projection: string) =>
      assertReads(fixture.admin, entries, projection);
    await reads(
      [queries[0], queries[1]].map(([sql]) => [sql, true] as const),
      'by_pod_msg',
    );
    await reads(
      [queries[2], queries[3]].map(([sql]) => [sql, true] as const),
      'by_pod',
    );
    await assertReads(fixture.admin, [[more[0], true]], 'by_exe');
    await assertReads(fixture.admin, [[more[1], true]], 'by_pod_upper');
    // (The candidate bindings DuckDB suggests are the view's columns nearest the name: never a stored one.)
    for (const [who, client] of suite.clients()) {
      const { code, details } = await refusal(client.query(direct(stored)));
      assert.equal(code, (await refusal(client.query(direct('__orr_0000000000000000')))).code, who);
      assert.match(details, new RegExp(`^Binder Error: Referenced column "${stored}" not found in FROM clause!`), who);
      assert.doesNotMatch(details.replaceAll(stored, ''), /__orr_/, who);
    }
  });
});
