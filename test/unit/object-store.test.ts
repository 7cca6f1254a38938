// The file object store: atomic writes, create-only writes, listing, keys that stay inside.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { FileObjectStore } from '../../src/lakehouse/index.js';

describe('FileObjectStore', () => {
  const root = mkdtempSync(join(tmpdir(), 'orrery-store-'));
  const store = new FileObjectStore(root);
  after(() => rmSync(root, { recursive: true, force: true }));

  it('puts, gets, sizes, lists and deletes', async () => {
    await store.put('a/b/one.txt', Buffer.from('one'));
    await store.put('a/two.txt', Buffer.from('two!'));
    assert.equal(Buffer.from(await store.get('a/b/one.txt')).toString(), 'one');
    assert.equal(await store.size('a/two.txt'), 4);
    assert.deepEqual(await store.list('a/'), ['a/b/one.txt', 'a/two.txt']);
    await store.delete('a/two.txt');
    await store.delete('a/two.txt');
    assert.equal(await store.size('a/two.txt'), null);
    assert.deepEqual(
      readdirSync(join(root, 'a')).filter((f) => f.startsWith('.tmp-')),
      [],
    );
  });

  it('putIfAbsent writes once', async () => {
    assert.equal(await store.putIfAbsent('c/x', Buffer.from('first')), true);
    assert.equal(await store.putIfAbsent('c/x', Buffer.from('second')), false);
    assert.equal(Buffer.from(await store.get('c/x')).toString(), 'first');
  });

  it('putAllIfAbsent writes the absent objects (in new folders too) and leaves those there', async () => {
    await store.put('d/old', Buffer.from('old'));
    const objects = [
      { key: 'd/old', bytes: Buffer.from('new') },
      { key: 'd/e/f/one', bytes: Buffer.from('one') },
      { key: 'd/e/two', bytes: Buffer.from('two') },
    ];
    assert.deepEqual(await store.putAllIfAbsent(objects), [false, true, true]);
    assert.deepEqual(await store.putAllIfAbsent(objects), [false, false, false]);
    assert.deepEqual(await Promise.all(objects.map(async (o) => Buffer.from(await store.get(o.key)).toString())), [
      'old',
      'one',
      'two',
    ]);
    assert.deepEqual(
      readdirSync(join(root, 'd'), { recursive: true }).filter((f) => String(f).includes('.tmp-')),
      [],
    );
  });

  it('refuses keys that leave the store', () => {
    assert.throws(() => store.location('../escape'), /leaves the store/);
  });
});
