// Issue 8 item 2: every error code Orrery declares has a row in docs/errors.md (code and status), and
// every row names a declared code; an error cannot be built with a code that is not declared.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { OrreryError, declareErrors, declaredErrorCodes } from '../../src/errors/index.js';

const srcDir = new URL('../../src/', import.meta.url);
const docs = new URL('../../../docs/errors.md', import.meta.url);

/** Every compiled module of src/ except the CLI entry point (it runs on import), so every declareErrors call runs. */
async function loadEverySourceModule(): Promise<void> {
  for (const entry of readdirSync(srcDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js') || entry.name === 'cli.js') continue;
    await import(new URL(`${entry.parentPath}/${entry.name}`, 'file://').href);
  }
}

function documentedCodes(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of readFileSync(docs, 'utf8').split('\n')) {
    const match = /^\| `([A-Z0-9_]+)` \| ([A-Z_]+)(?: \(HTTP (\d+)\))? \|/.exec(line);
    if (match) rows.set(match[1], match[3] ? `${match[2]} (HTTP ${match[3]})` : match[2]);
  }
  return rows;
}

describe('error codes (issue 8)', () => {
  it('docs/errors.md has one row per declared code, with its status', async () => {
    await loadEverySourceModule();
    const declared = new Map(
      declaredErrorCodes().map((c) => [c.code, c.httpStatus ? `${c.status} (HTTP ${c.httpStatus})` : c.status]),
    );
    assert.ok(declared.size > 40, `only ${declared.size} codes declared: the modules did not load`);
    assert.deepEqual(documentedCodes(), declared);
  });

  it('refuses an error built with an undeclared code', () => {
    assert.throws(() => new OrreryError('NO_SUCH_CODE_ANYWHERE', 'x'), {
      message: /error code 'NO_SUCH_CODE_ANYWHERE' is not declared/,
    });
  });

  it('refuses a code declared twice', () => {
    declareErrors('test', { TEST_ONLY_CODE: { status: 'INTERNAL', meaning: 'declared by this test' } });
    assert.throws(() => declareErrors('other', { TEST_ONLY_CODE: { status: 'INTERNAL', meaning: 'again' } }), {
      message: "error code 'TEST_ONLY_CODE' of other is already declared by test",
    });
  });
});
