// Issue 16: the ordered read of logs payloads decodes payloads ahead of its merge (81137bf0), bounded by the
// memory the decoded ones hold, not by their stored bytes: a client's gzip body expands up to ~1,000-fold, so
// sixteen small stored payloads could otherwise hold gigabytes beside the merge. Sixteen gzip payloads of 24 MiB
// of protobuf each (well under 4 MiB stored in all), their times apart, read by a statement that consumes slower
// than they decode: the process's peak memory grows by a bounded amount (102-145 MiB measured), where sixteen decoded
// ahead grew it by 367-422 MiB. Run in a child process, so the peak is this read's alone.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

const script = `
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
const { DuckDBEngine } = await import(${JSON.stringify(new URL('../../src/engine/index.js', import.meta.url).href)});
const views = await import(${JSON.stringify(new URL('../../src/views/index.js', import.meta.url).href)});
const { protobufOf, t0 } = await import(${JSON.stringify(new URL('../support/otlp-logs-corpus.js', import.meta.url).href)});
const dir = mkdtempSync(join(tmpdir(), 'orrery-ordered-memory-'));
const engine = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir });
const count = 16;
const body = 'a'.repeat(12000);
const payloads = Array.from({ length: count }, (_, p) =>
  gzipSync(protobufOf({ resourceLogs: [{ scopeLogs: [{ logRecords: Array.from({ length: 2048 }, (_, i) => ({
    timeUnixNano: (t0 + BigInt(p) * 1_000_000_000n + BigInt(i)).toString(), body: { stringValue: body } })) }] }] }), { level: 1 }));
const file = join(dir, 'bundle');
writeFileSync(file, Buffer.concat(payloads));
const blocks = \`CREATE OR REPLACE TEMP TABLE __blocks AS SELECT 'p' AS process_id, 's' AS stream_id, 'block-' || i AS block_id,
  make_timestamp_ns(1700000000000000000 + i * 1000) AS insert_time, 'exe' AS exe, NULL::VARCHAR AS username, 'host' AS computer,
  json_object('service.name', 'svc') AS process_properties, 'public' AS audience, \${views.quoteLiteral(file)} || '#' || i AS path,
  i::UBIGINT AS payload FROM range(\${count}) t(i)\`;
const first = payloads.map((_, p) => t0 + BigInt(p) * 1_000_000_000n);
const read = views.builtinViewSets.find((v) => v.name === 'log_entries').source.ordered.replaceAll(
  '{payloads}', views.orderedProtobufLogs(file, payloads.map((p) => p.length), first));
// Slower per row than the decode: the decoding thread runs ahead as far as it may.
const sql = \`SELECT count(*), sum(length(replace(msg, 'a', 'bb'))) FROM (\${read})\`;
const before = process.resourceUsage().maxRSS;
const { batches } = await engine.query(sql, { setup: [blocks, views.orderedBlocks] });
let answer;
for await (const batch of batches) answer = [batch.getChildAt(0).get(0), batch.getChildAt(1).get(0)].map(String);
const grown = process.resourceUsage().maxRSS - before;
await engine.close();
rmSync(dir, { recursive: true, force: true });
console.log(JSON.stringify({ answer, grownMiB: grown / 1024 }));
`;

describe('issue 16: the ordered read decodes ahead within a memory bound', () => {
  it('holds a bounded amount beside the merge however far the stored payloads expand', () => {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(child.status, 0, child.stderr);
    const { answer, grownMiB } = JSON.parse(child.stdout.trim().split('\n').pop()!) as {
      answer: string[];
      grownMiB: number;
    };
    assert.deepEqual(answer, [String(16 * 2048), String(16 * 2048 * 24000)]);
    // 64 MiB decoded ahead, two payloads being decoded (~30 MiB each with their content), the merge's one and
    // DuckDB's vectors.
    assert.ok(grownMiB < 250, `the read's peak memory grew by ${Math.round(grownMiB)} MiB`);
  });
});
