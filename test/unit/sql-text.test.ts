// The one SQL tokenizer (src/sql-text), through both of its users: the server's DDL parser and
// `orrery views` reading a file's statement. Each case is read by both, so the two cannot
// disagree on where a comment, a literal or a word ends (issue 8).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDdl } from '../../src/sql/ddl-parser.js';
import { summarizeStatement } from '../../src/views-cli/index.js';

const options = (extract: string): string =>
  `WITH (extract_query = ${extract}, count_src_query = 'c', merge_partitions_query = 'm', update_group = 9, time_column = 't')`;

/** What the server and the CLI each read from one statement. */
function readByBoth(text: string): {
  server: { name: string; extract?: string };
  cli: { name: string; updateGroup: number | null };
} {
  const statement = parseDdl(text);
  assert.equal(statement?.kind, 'create', 'the server reads it as CREATE MATERIALIZED VIEW');
  const { name, updateGroup } = summarizeStatement(text);
  return { server: { name: statement.name, extract: statement.options.extractQuery }, cli: { name, updateGroup } };
}

describe('one SQL tokenizer for the DDL parser and orrery views', () => {
  it('reads nested block comments whole, whatever they hold', () => {
    const text = `/* outer /* inner; CREATE MATERIALIZED VIEW wrong */ still the outer comment; */\nCREATE MATERIALIZED VIEW /* a /* b */ c */ v ${options("'e'")};`;
    assert.deepEqual(readByBoth(text), { server: { name: 'v', extract: 'e' }, cli: { name: 'v', updateGroup: 9 } });
  });

  it('reads tagged dollar quotes holding $$, quotes, ; and option-like text as one literal', () => {
    const query = ` SELECT ';' AS a, $$x$$ AS b /* not a comment */ -- update_group = 1\n `;
    const text = `CREATE MATERIALIZED VIEW v ${options(`$body$${query}$body$`)}`;
    assert.deepEqual(readByBoth(text), { server: { name: 'v', extract: query }, cli: { name: 'v', updateGroup: 9 } });
  });

  it('reads Unicode identifiers and dollar-quote tags as single words', () => {
    const tagged = `CREATE MATERIALIZED VIEW v ${options('$ünï$ SELECT \'é\' AS "çà" $ünï$')}`;
    assert.deepEqual(readByBoth(tagged), {
      server: { name: 'v', extract: ` SELECT 'é' AS "çà" ` },
      cli: { name: 'v', updateGroup: 9 },
    });
    // A Unicode name, quoted or not, is read whole: the server refuses it by its naming rule, naming it; the CLI reads the same word.
    for (const [name, written] of [
      ['vüe_ß', '"vüe_ß"'],
      ['vüe', 'vüe'],
    ]) {
      const text = `CREATE MATERIALIZED VIEW ${written} ${options("'e'")}`;
      assert.throws(() => parseDdl(text), {
        code: 'DDL_INVALID_NAME',
        message: `invalid view name '${name}': a name must match ^[a-z_][a-z0-9_]{0,254}$`,
      });
      assert.equal(summarizeStatement(text).name, name);
    }
  });

  it('refuses an unterminated nested comment at the same place in both', () => {
    const text = `CREATE MATERIALIZED VIEW v ${options("'e'")} /* a /* b */`;
    assert.throws(() => parseDdl(text), {
      code: 'DDL_SYNTAX_ERROR',
      message: 'unterminated comment starting at 1:145',
    });
    assert.throws(() => summarizeStatement(text), {
      message: 'cannot be read: unterminated comment starting at 1:145',
    });
  });

  it('finds a second statement only outside literals and comments', () => {
    const text = `CREATE MATERIALIZED VIEW v ${options('$$a; b$$')}; /* ; */ SELECT 1`;
    assert.throws(() => parseDdl(text), { code: 'DDL_MULTIPLE_STATEMENTS' });
    assert.throws(() => summarizeStatement(text), {
      message: 'holds more than one statement (one CREATE statement per file)',
    });
  });
});
