// regenerate_partitions with a delta_seconds smaller than the partition its range lies in (an hour-wide partition of
// log_entries regenerated ten minutes at a time) rebuilds that partition once for the call: its first step rebuilds
// the whole span in pieces (the step, then the rest) and the later steps inside it answer that they were built with
// it. Each step rebuilt the rest of the hour again, six builds of the hour for one (s21-review F1): told here by the
// partitions' `updated` (the time of the transaction that registered them), one for every build that made them.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { plainRows } from './lakehouse-fixtures.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

describe('regenerate_partitions rebuilds a wider partition once per call, not once per step', () => {
  const fixture = useOrrery();
  let hour = 0;
  const partitions = async () =>
    (
      await fixture.orrery.metadata.query<{ begin: number; end: number; updated: string }>(
        `SELECT extract(epoch FROM begin_insert_time)::int - $1 AS begin, extract(epoch FROM end_insert_time)::int - $1 AS end,
                updated::text AS updated
           FROM lakehouse_partitions WHERE view_set_name = 'log_entries' ORDER BY begin_insert_time`,
        [hour],
      )
    ).rows;

  before(async () => {
    const time = BigInt(Date.now()) * 1_000_000n;
    const sent = await postOtlp(
      fixture.orrery.httpPort,
      'logs',
      adminKey.key,
      logsRequest({ 'service.name': 'svc' }, [{ time, severity: 9, body: 'one', target: 'app' }]),
    );
    assert.equal(sent.status, 200, sent.text);
    const { rows } = await fixture.orrery.metadata.query<{ at: Date }>('SELECT min(insert_time) AS at FROM blocks');
    hour = Math.floor(rows[0].at.getTime() / 3_600_000) * 3600;
    const made = await plainRows(
      fixture.admin,
      `SELECT msg FROM materialize_partitions('log_entries', '${iso(hour)}', '${iso(hour + 3600)}', 3600)`,
    );
    assert.match(String(made[0].msg), /: created$/);
    assert.deepEqual(
      (await partitions()).map((p) => [p.begin, p.end]),
      [[0, 3600]],
    );
  });

  it('ten-minute steps over the hour: one build, the step and the rest of the hour; the other steps built with it', async () => {
    const steps = (
      await plainRows(
        fixture.admin,
        `SELECT msg FROM regenerate_partitions('log_entries', '${iso(hour)}', '${iso(hour + 3600)}', 600)`,
      )
    ).map((r) => String(r.msg));
    assert.equal(steps.length, 6, steps.join('\n'));
    assert.match(steps[0], /: created$/);
    for (const step of steps.slice(1))
      assert.match(
        step,
        new RegExp(`: created with \\[${iso(hour).slice(0, 19)}.*, ${iso(hour + 3600).slice(0, 19)}.*\\)$`),
      );
    const after = await partitions();
    assert.deepEqual(
      after.map((p) => [p.begin, p.end]),
      [
        [0, 600],
        [600, 3600],
      ],
    );
    // One transaction registered both: the hour was built once.
    assert.equal(new Set(after.map((p) => p.updated)).size, 1, JSON.stringify(after));
    assert.deepEqual(await plainRows(fixture.admin, 'SELECT msg FROM log_entries'), [{ msg: 'one' }]);
  });
});
