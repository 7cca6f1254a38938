// MICROMEGAS_API_KEYS / MICROMEGAS_ADMINS parsing and key lookup.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Keyring, loadOrCreateLocalCredentials, parseAdmins, parseApiKeys } from '../../src/auth/index.js';

describe('parseApiKeys', () => {
  it('defaults audiences to public', () => {
    assert.deepEqual(parseApiKeys('[{"name":"a","key":"aaaaaaaa"}]'), [
      { name: 'a', key: 'aaaaaaaa', audiences: ['public'] },
    ]);
    assert.deepEqual(parseApiKeys('[{"name":"a","key":"aaaaaaaa","audiences":[]}]')[0].audiences, ['public']);
  });
  const bad: Array<[string, RegExp]> = [
    ['not json', /MICROMEGAS_API_KEYS is not valid JSON/],
    ['{}', /must be a JSON array/],
    ['[{"name":"a","key":"aaaaaaaa"},{"name":"a","key":"bbbbbbbb"}]', /duplicate key name 'a'/],
    ['[{"name":"a","key":"aaaaaaaa","audiences":["bad name"]}]', /audience 'bad name' must match/],
    ['[{"name":"a","key":"short"}]', /at least 8 characters/],
  ];
  for (const [text, message] of bad) {
    it(`refuses ${text}`, () => assert.throws(() => parseApiKeys(text), { name: 'ConfigError', message }));
  }
});

describe('parseAdmins', () => {
  const keys = parseApiKeys('[{"name":"a","key":"aaaaaaaa"}]');
  it('accepts known names', () => assert.deepEqual([...parseAdmins('["a"]', keys)], ['a']));
  it('refuses a name that is no key', () =>
    assert.throws(() => parseAdmins('["b"]', keys), { message: /MICROMEGAS_ADMINS names 'b'/ }));
});

describe('Keyring', () => {
  const keyring = new Keyring(
    parseApiKeys('[{"name":"a","key":"aaaaaaaa","audiences":["team1"]},{"name":"b","key":"bbbbbbbb"}]'),
    new Set(['a']),
  );
  it('finds principals by key, and by name and key together', () => {
    assert.deepEqual(keyring.byKey('aaaaaaaa'), { name: 'a', admin: true, audiences: ['team1', 'public'] });
    assert.equal(keyring.byNameAndKey('b', 'aaaaaaaa'), null);
    assert.equal(keyring.byKey('zzzzzzzz'), null);
  });
});

describe('loadOrCreateLocalCredentials', () => {
  it('creates one admin key on first use and returns the same key after', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orrery-credentials-'));
    try {
      const first = loadOrCreateLocalCredentials(dir);
      assert.equal(first.created, true);
      assert.equal(first.key.name, 'admin');
      assert.match(first.key.key, /^orr_[A-Za-z0-9_-]{32}$/);
      assert.equal(statSync(first.path).mode & 0o777, 0o600);
      const second = loadOrCreateLocalCredentials(dir);
      assert.deepEqual(second, { ...first, created: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
