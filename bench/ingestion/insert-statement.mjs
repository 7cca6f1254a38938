// Postgres CPU of one commit group's insert (issue 16), the statement before migration 11 against the function that
// replaced it (orrery_insert_blocks: a process or stream inserted only when missing), on a fresh database of a built
// tree (its embedded Postgres, migrated). One pg client runs each form for BATCH calls in turn, ROUNDS times; every
// call inserts BLOCKS new blocks of one process and stream that exist (what nearly every group is). Prints per form
// the median over rounds of the backend's CPU per call (/proc of the backend: user + system), the wall time per
// call and this process's CPU per call (pg's client), and each form's ratios to the function.
// The other forms skip the function (s18): `alone`, the blocks insert by itself; `guarded`, the same in one statement
// that inserts nothing unless every process and stream exists (its snapshot is taken after the lock on blocks that
// retention's delete waits for), sending only their ids; `epoch`, the blocks insert guarded by a one-row count of
// the deletes of streams and processes (what insertRows runs for a group of known ones, see
// src/ingestion/known-streams.ts; this script makes its own copy of the table, so that it runs on older trees).
//
//   node bench/ingestion/insert-statement.mjs <tree> [BLOCKS=1] [BATCH=500] [ROUNDS=8]
//
// A tree is a built checkout (dist/ compiled) from migration 11 on: e.g. /tmp/orrery-bench-build-<sha> (bench/lib.sh).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { openTree } from './tree.mjs';

const [tree, blocksArg, batchArg, roundsArg] = process.argv.slice(2);
if (!tree) {
  console.error('usage: node bench/ingestion/insert-statement.mjs <tree> [blocks] [batch] [rounds]');
  process.exit(2);
}
const blocks = Number(blocksArg ?? 1);
const batch = Number(batchArg ?? 500);
const rounds = Number(roundsArg ?? 8);
const pg = createRequire(import.meta.url)('pg');

const tag = '/* orrery: block insert */';
// The statement of insertRows before migration 11 (deferred: without the WAL flush, as nearly every group commits).
const before = `${tag}
     WITH p AS (
       INSERT INTO processes (process_id, exe, username, realname, computer, distro, cpu_brand, start_time, properties, audience)
       SELECT id, exe, username, realname, computer, distro, cpu_brand, now(), properties, audience
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::jsonb[], $9::text[])
              AS t (id, exe, username, realname, computer, distro, cpu_brand, properties, audience)
       ON CONFLICT (process_id) DO NOTHING
     ), s AS (
       INSERT INTO streams (stream_id, process_id, tags, properties, format)
       SELECT id, process_id, ARRAY[$12::text], '{}', $13 FROM unnest($10::uuid[], $11::uuid[]) AS t (id, process_id)
       ON CONFLICT (stream_id) DO NOTHING
     ), b AS (
       INSERT INTO blocks (block_id, stream_id, process_id, begin_time, begin_ticks, end_time, end_ticks, nb_objects,
                           payload_file, object_offset, payload_size, audience)
       SELECT id, stream_id, process_id, begin_time, 0, end_time, 0, nb_objects, payload_file, object_offset, payload_size, audience
         FROM unnest($14::uuid[], $15::uuid[], $16::uuid[], $17::timestamptz[], $18::timestamptz[], $19::int[], $20::text[],
                     $21::bigint[], $22::bigint[], $23::text[])
              AS t (id, stream_id, process_id, begin_time, end_time, nb_objects, payload_file, object_offset, payload_size, audience)
       ON CONFLICT (block_id) DO NOTHING
       RETURNING block_id
     ), c AS (SELECT set_config('synchronous_commit', 'off', true))
     SELECT block_id FROM b, c`;
// The blocks insert alone, its arrays from $<first> on, then whether to skip the WAL flush; `guard` a WHERE clause.
const blocksInsert = (first, guard = '') => {
  const $ = (i) => `$${first + i}`;
  return `WITH b AS (
       INSERT INTO blocks (block_id, stream_id, process_id, begin_time, begin_ticks, end_time, end_ticks, nb_objects,
                           payload_file, object_offset, payload_size, audience)
       SELECT id, stream_id, process_id, begin_time, 0, end_time, 0, nb_objects, payload_file, object_offset, payload_size, audience
         FROM unnest(${$(0)}::uuid[], ${$(1)}::uuid[], ${$(2)}::uuid[], ${$(3)}::timestamptz[], ${$(4)}::timestamptz[],
                     ${$(5)}::int[], ${$(6)}::text[], ${$(7)}::bigint[], ${$(8)}::bigint[], ${$(9)}::text[])
              AS t (id, stream_id, process_id, begin_time, end_time, nb_objects, payload_file, object_offset, payload_size, audience)
        ${guard}
       ON CONFLICT (block_id) DO NOTHING
       RETURNING block_id
     ), c AS (SELECT set_config('synchronous_commit',
                                CASE WHEN ${$(10)}::boolean THEN 'off' ELSE current_setting('synchronous_commit') END, true))`;
};
const alone = `${tag}
     ${blocksInsert(1)}
     SELECT coalesce((SELECT array_agg(block_id) FROM b), '{}') AS inserted FROM c`;
const guarded = `${tag}
     WITH missing AS (
       SELECT 1 FROM unnest($1::uuid[]) AS t (id) WHERE NOT EXISTS (SELECT 1 FROM processes p WHERE p.process_id = t.id)
       UNION ALL
       SELECT 1 FROM unnest($2::uuid[]) AS t (id) WHERE NOT EXISTS (SELECT 1 FROM streams s WHERE s.stream_id = t.id)
     ), ${blocksInsert(3, 'WHERE NOT EXISTS (SELECT 1 FROM missing)').slice('WITH '.length)}
     SELECT coalesce((SELECT array_agg(block_id) FROM b), '{}') AS inserted, EXISTS (SELECT 1 FROM missing) AS missing FROM c`;
const epoch = `${tag}
     ${blocksInsert(1, 'WHERE (SELECT n FROM bench_deletes) = $12::bigint')}
     SELECT coalesce((SELECT array_agg(block_id) FROM b), '{}') AS inserted FROM c`;
const fn = `${tag}
     SELECT orrery_insert_blocks(${Array.from({ length: 24 }, (_, i) => `$${i + 1}`).join(', ')}) AS inserted`;

const processId = randomUUID();
const streamId = randomUUID();
const resource = { 'service.name': 'bench', 'host.name': 'h' };
function values() {
  const ids = Array.from({ length: blocks }, () => randomUUID());
  const each = (v) => ids.map(() => v);
  return [
    [processId],
    ['bench'],
    [null],
    [null],
    ['h'],
    [null],
    [null],
    [JSON.stringify(resource)],
    ['public'],
    [streamId],
    [processId],
    'log',
    'otlp/v1/logs',
    ids,
    each(streamId),
    each(processId),
    each('2026-12-06 10:00:00+00'),
    each('2026-12-06 10:00:01+00'),
    each(1000),
    each('blobs/groups/bench'),
    each(0),
    each(40000),
    each('public'),
  ];
}
const blockValues = (v) => v.slice(13);
const forms = {
  before: [before, () => values()],
  function: [fn, () => [...values(), true]],
  guarded: [guarded, () => ((v) => [v[0], v[9], ...blockValues(v), true])(values())],
  epoch: [epoch, () => [...blockValues(values()), true, 0]],
  alone: [alone, () => [...blockValues(values()), true]],
};

const { db, close } = await openTree(tree, 'insert-statement');
const client = new pg.Client({ connectionString: db.connectionString });
await client.connect();
try {
  await client.query('CREATE TABLE bench_deletes (n bigint NOT NULL); INSERT INTO bench_deletes VALUES (0)');
  const backend = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const backendMs = () => {
    const stat = readFileSync(`/proc/${backend}/stat`, 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // USER_HZ 100
  };
  for (const [name, [text, params]] of Object.entries(forms)) await client.query({ name, text, values: params() });
  const results = Object.fromEntries(Object.keys(forms).map((name) => [name, []]));
  for (let round = 0; round < rounds; round++)
    for (const [name, [text, params]] of Object.entries(forms)) {
      const pg0 = backendMs();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < batch; i++) await client.query({ name, text, values: params() });
      const cpu = process.cpuUsage(cpu0);
      const r = {
        pg: (backendMs() - pg0) / batch,
        wall: (performance.now() - t0) / batch,
        client: (cpu.user + cpu.system) / 1000 / batch,
      };
      results[name].push(r);
      console.log(
        `round ${round + 1} ${name.padEnd(9)} postgres ${r.pg.toFixed(3)}  wall ${r.wall.toFixed(3)}  client ${r.client.toFixed(3)} ms/call`,
      );
    }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const load = readFileSync('/proc/loadavg', 'latin1').split(' ').slice(0, 3).join(' ');
  console.log(
    `insert-statement: ${blocks} block(s) per call, ${batch} calls x ${rounds} rounds per form, load ${load}`,
  );
  console.log('form       postgres cpu ms/call  wall ms/call  client cpu ms/call');
  const m = {};
  for (const [name, rows] of Object.entries(results)) {
    m[name] = Object.fromEntries(['pg', 'wall', 'client'].map((k) => [k, median(rows.map((r) => r[k]))]));
    console.log(
      `${name.padEnd(9)} ${m[name].pg.toFixed(3).padStart(21)} ${m[name].wall.toFixed(3).padStart(13)} ${m[name].client.toFixed(3).padStart(19)}`,
    );
  }
  for (const name of Object.keys(forms).filter((n) => n !== 'function')) {
    const ratio = (k) => (m[name][k] / m.function[k]).toFixed(2);
    console.log(
      `${name} / function: postgres cpu ${ratio('pg')}x, wall ${ratio('wall')}x, client cpu ${ratio('client')}x`,
    );
  }
} finally {
  await client.end();
  await close();
}
