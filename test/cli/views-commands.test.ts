// `orrery views` commands against a fake definitions server: exact output, exit status, statements sent.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { status } from '@grpc/grpc-js';
import { FlightClientError } from '../../src/client/index.js';
import {
  applyCommand,
  listCommand,
  planCommand,
  pullCommand,
  showCommand,
  summarizeStatement,
  type DdlOutcome,
  type DefinitionServer,
  type StoredDefinition,
} from '../../src/views-cli/index.js';
import { createStatement, stored } from './view-sets-fixtures.js';

/** Stores definitions in memory, answers like the server contract, and records every statement. */
class FakeServer implements DefinitionServer {
  readonly address = 'fake:50051';
  readonly sent: string[] = [];
  readonly definitions = new Map<string, StoredDefinition>();
  /** Statements naming these views are refused with this error (EXPLAIN and real). */
  readonly refuse = new Map<string, FlightClientError>();

  constructor(rows: StoredDefinition[]) {
    for (const row of rows) this.definitions.set(row.name, row);
  }

  async listDefinitions(): Promise<StoredDefinition[]> {
    return [...this.definitions.values()].sort((a, b) => a.updateGroup - b.updateGroup || a.name.localeCompare(b.name));
  }

  async execute(sql: string): Promise<DdlOutcome> {
    this.sent.push(sql);
    const explain = /^EXPLAIN /.test(sql);
    const statement = sql.replace(/^EXPLAIN /, '');
    const drop = /^DROP MATERIALIZED VIEW (\w+)$/.exec(statement);
    const name = drop ? drop[1] : summarizeStatement(statement).name;
    const refusal = this.refuse.get(name);
    if (refusal) throw refusal;
    const exists = this.definitions.has(name);
    if (drop) {
      if (!explain) this.definitions.delete(name);
      return { name, action: exists ? (explain ? 'would_drop' : 'dropped') : 'not_found' };
    }
    if (!explain) this.definitions.set(name, stored(name, summarizeStatement(statement).updateGroup ?? 0, statement));
    return { name, action: exists ? (explain ? 'would_replace' : 'replaced') : explain ? 'would_create' : 'created' };
  }
}

function capture(): { out: string[]; err: string[]; output: { out(l: string): void; err(l: string): void } } {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, output: { out: (l) => out.push(...l.split('\n')), err: (l) => err.push(...l.split('\n')) } };
}

describe('views commands', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-views-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, text: string): void => writeFileSync(join(dir, name), text);

  it('plan EXPLAINs each change in apply order, prints a table and a summary, and changes nothing', async () => {
    const server = new FakeServer([stored('log_stats', 3000), stored('error_rate', 4000), stored('legacy', 5000)]);
    write('log_stats.sql', `${createStatement('log_stats', 3000)}\n`);
    write('error_rate.sql', `${createStatement('error_rate', 4000, ' AND level <= 2')}\n`);
    write('warn_rate.sql', createStatement('warn_rate', 4500));
    write('README.md', 'not a view');
    const { out, err, output } = capture();
    assert.equal(await planCommand(server, dir, false, output), 0);
    assert.deepEqual(out, [
      `Plan for ${dir} against fake:50051:`,
      '',
      '  NAME        ACTION       UPDATE_GROUP  CHECK',
      '  error_rate  replace      4000          ok (would_replace)',
      '  warn_rate   create       4500          ok (would_create)',
      '  legacy      not managed  5000          no file; left alone (--prune drops it)',
      '',
      '1 to create, 1 to replace, 0 to drop, 1 unchanged, 1 not managed.',
    ]);
    assert.deepEqual(err, []);
    assert.deepEqual(server.sent, [
      `EXPLAIN ${createStatement('error_rate', 4000, ' AND level <= 2', true)}`,
      `EXPLAIN ${createStatement('warn_rate', 4500)}`,
    ]);
    assert.deepEqual([...server.definitions.keys()], ['log_stats', 'error_rate', 'legacy']);
  });

  it('plan shows what the server would refuse, with its status and reason, and exits 2', async () => {
    const server = new FakeServer([stored('log_stats', 3000), stored('error_rate', 4000)]);
    server.refuse.set(
      'log_stats',
      new FlightClientError(
        status.FAILED_PRECONDITION,
        "dropping 'log_stats' would break view set 'error_rate', which reads it",
      ),
    );
    write('error_rate.sql', createStatement('error_rate', 4000));
    write('bad.sql', 'CREATE TABLE bad (a INT)');
    const { out, output } = capture();
    assert.equal(await planCommand(server, dir, true, output), 2);
    assert.deepEqual(out, [
      `Plan for ${dir} against fake:50051:`,
      '',
      '  NAME       ACTION   UPDATE_GROUP  CHECK',
      "  log_stats  drop     3000          refused: FAILED_PRECONDITION: dropping 'log_stats' would break view set 'error_rate', which reads it",
      '  bad        invalid  -             bad.sql is not a CREATE [OR REPLACE] MATERIALIZED VIEW statement',
      '',
      '0 to create, 0 to replace, 1 to drop, 1 unchanged, 1 refused, 1 invalid file(s).',
    ]);
    assert.deepEqual(server.sent, ['EXPLAIN DROP MATERIALIZED VIEW log_stats']);
  });

  it('apply runs creates and replaces by ascending update_group, then drops by descending update_group', async () => {
    const server = new FakeServer([stored('log_stats', 3000), stored('old_a', 4000), stored('old_b', 4100)]);
    write('top.sql', createStatement('top', 4600));
    write('base.sql', createStatement('base', 4500));
    write('log_stats.sql', createStatement('log_stats', 3000, ' AND true'));
    const { out, err, output } = capture();
    assert.equal(await applyCommand(server, dir, true, output), 0);
    assert.deepEqual(server.sent, [
      createStatement('log_stats', 3000, ' AND true', true),
      createStatement('base', 4500),
      createStatement('top', 4600),
      'DROP MATERIALIZED VIEW old_b',
      'DROP MATERIALIZED VIEW old_a',
    ]);
    assert.deepEqual(out, [
      `Applying 5 change(s) from ${dir} to fake:50051:`,
      '  replaced  log_stats (update_group 3000)',
      '  created   base (update_group 4500)',
      '  created   top (update_group 4600)',
      '  dropped   old_b (update_group 4100)',
      '  dropped   old_a (update_group 4000)',
      'Done: 1 replaced, 2 created, 2 dropped.',
    ]);
    assert.deepEqual(err, []);
    const again = capture();
    assert.equal(await planCommand(server, dir, true, again.output), 0);
    assert.equal(again.out.at(-1), 'Nothing to do: 3 view set(s) match the server.');
  });

  it('apply stops at the first refusal, names it, and leaves the rest unattempted', async () => {
    const server = new FakeServer([stored('legacy', 5000)]);
    server.refuse.set(
      'b_mid',
      new FlightClientError(status.INVALID_ARGUMENT, "view set 'b_mid': unknown option 'update_grup'"),
    );
    write('a_base.sql', createStatement('a_base', 4000));
    write('b_mid.sql', createStatement('b_mid', 4100));
    write('c_top.sql', createStatement('c_top', 4200));
    const { out, err, output } = capture();
    assert.equal(await applyCommand(server, dir, false, output), 2);
    assert.deepEqual(out, [
      `Applying 3 change(s) from ${dir} to fake:50051:`,
      '  created   a_base (update_group 4000)',
      "  refused   b_mid: INVALID_ARGUMENT: view set 'b_mid': unknown option 'update_grup'",
    ]);
    assert.deepEqual(err, ['Stopped at b_mid (create); applied 1 of 3 change(s); not attempted: c_top.']);
    assert.deepEqual([...server.definitions.keys()], ['legacy', 'a_base']);
  });

  it('apply changes nothing while a file is invalid', async () => {
    const server = new FakeServer([]);
    write('good.sql', createStatement('good', 4000));
    write('wrong.sql', createStatement('right', 4000));
    const { out, err, output } = capture();
    assert.equal(await applyCommand(server, dir, false, output), 2);
    assert.deepEqual(out, []);
    assert.deepEqual(err, [
      '  NAME   ACTION   UPDATE_GROUP  PROBLEM',
      "  wrong  invalid  -             wrong.sql defines view 'right'; the file must be named right.sql",
      `Nothing applied: fix the 1 invalid file(s) in ${dir} first.`,
    ]);
    assert.deepEqual(server.sent, []);
  });

  it('apply without --prune leaves stored definitions without a file alone, and says so', async () => {
    const server = new FakeServer([stored('log_stats', 3000)]);
    const { out, output } = capture();
    assert.equal(await applyCommand(server, dir, false, output), 0);
    assert.deepEqual(out, [
      'Nothing to do: 0 view set(s) match the server. 1 stored definition(s) without a file left alone (--prune drops them).',
    ]);
    assert.deepEqual(server.sent, []);
  });

  it('pull writes each definition exactly with a trailing newline, keeps other files, and round-trips to nothing to do', async () => {
    const withComment = `-- per-target counts\n${createStatement('error_rate', 4000)};`;
    const server = new FakeServer([stored('log_stats', 3000), stored('error_rate', 4000, withComment)]);
    write('notes.txt', 'keep me');
    write('log_stats.sql', 'an older text');
    write('other.sql', createStatement('other', 4200));
    const { out, output } = capture();
    assert.equal(await pullCommand(server, dir, output), 0);
    assert.deepEqual(out, [
      '  updated    log_stats.sql',
      '  new        error_rate.sql',
      `Pulled 2 definition(s) from fake:50051 into ${dir}: 1 new, 1 updated, 0 unchanged.`,
    ]);
    assert.equal(readFileSync(join(dir, 'error_rate.sql'), 'utf8'), `${withComment}\n`);
    assert.equal(readFileSync(join(dir, 'log_stats.sql'), 'utf8'), `${createStatement('log_stats', 3000)}\n`);
    assert.deepEqual(readdirSync(dir).sort(), ['error_rate.sql', 'log_stats.sql', 'notes.txt', 'other.sql']);
    rmSync(join(dir, 'other.sql'));
    const apply = capture();
    assert.equal(await applyCommand(server, dir, true, apply.output), 0);
    assert.deepEqual(apply.out, ['Nothing to do: 2 view set(s) match the server.']);
    assert.equal(await pullCommand(server, join(dir, 'new', 'folder'), capture().output), 0);
    assert.deepEqual(readdirSync(join(dir, 'new', 'folder')).sort(), ['error_rate.sql', 'log_stats.sql']);
  });

  it('pull skips a name that is not a safe file name', async () => {
    const server = new FakeServer([stored('../escape', 4000)]);
    const { out, err, output } = capture();
    assert.equal(await pullCommand(server, dir, output), 1);
    assert.deepEqual(err, ["  skipped    '../escape': not a file name this CLI writes"]);
    assert.deepEqual(out, [`Pulled 0 definition(s) from fake:50051 into ${dir}: 0 new, 0 updated, 0 unchanged.`]);
    assert.deepEqual(readdirSync(dir), []);
  });

  it('list prints name, update_group, updated_at and load status in load order', async () => {
    const server = new FakeServer([
      stored('error_rate', 4000, undefined, 'extract query: Catalog Error:\nTable "gone" does not exist'),
      stored('log_stats', 3000),
    ]);
    const { out, output } = capture();
    assert.equal(await listCommand(server, output), 0);
    assert.deepEqual(out, [
      'NAME        UPDATE_GROUP  UPDATED_AT                STATUS',
      'log_stats   3000          2026-08-01T10:00:00.000Z  loaded',
      'error_rate  4000          2026-08-01T10:00:00.000Z  error: extract query: Catalog Error: Table "gone" does not exist',
    ]);
    const empty = capture();
    assert.equal(await listCommand(new FakeServer([]), empty.output), 0);
    assert.deepEqual(empty.out, ['No view set definitions on fake:50051.']);
  });

  it('show prints the stored statement exactly, and names the known views for an unknown one', async () => {
    const server = new FakeServer([stored('log_stats', 3000)]);
    const { out, output } = capture();
    assert.equal(await showCommand(server, 'log_stats', output), 0);
    assert.deepEqual(out, createStatement('log_stats', 3000).split('\n'));
    await assert.rejects(showCommand(server, 'log_statz', output), {
      name: 'ViewsCliError',
      code: 'VIEWS_DEFINITION_NOT_FOUND',
      exitStatus: 1,
      message: "no view set definition named 'log_statz' on fake:50051 (it has: log_stats)",
    });
  });

  it('plan and apply refuse a missing folder', async () => {
    await assert.rejects(planCommand(new FakeServer([]), join(dir, 'nope'), false, capture().output), {
      code: 'VIEWS_DIR_NOT_FOUND',
      exitStatus: 2,
      message: `folder '${join(dir, 'nope')}' does not exist`,
    });
  });
});
