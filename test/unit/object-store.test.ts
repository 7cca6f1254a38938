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
    assert.deepEqual(await store.listBetween('a/', 'a/b/one.txt', 'a/z'), ['a/two.txt']);
    assert.deepEqual(await store.listBetween('a/', 'a/', 'a/b/one.txt'), ['a/b/one.txt']);
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

  it('putIfAbsent writes in new folders too, and leaves no temporary file', async () => {
    assert.equal(await store.putIfAbsent('d/e/f/one', Buffer.from('one')), true);
    assert.equal(Buffer.from(await store.get('d/e/f/one')).toString(), 'one');
    assert.deepEqual(
      readdirSync(join(root, 'd'), { recursive: true }).filter((f) => String(f).includes('.tmp-')),
      [],
    );
  });

  it('putNew writes its parts in order, in place (new folders too), and refuses a key that exists', async () => {
    await store.putNew('n/o/p/group', [Buffer.from('first'), Buffer.from(''), Buffer.from('second')]);
    assert.equal(Buffer.from(await store.get('n/o/p/group')).toString(), 'firstsecond');
    await store.putNew('n/o/p/other', [Buffer.from('x')]);
    assert.deepEqual(readdirSync(join(root, 'n/o/p')).sort(), ['group', 'other'], 'no temporary file left');
    await assert.rejects(store.putNew('n/o/p/group', [Buffer.from('again')]), { code: 'EEXIST' });
    assert.equal(Buffer.from(await store.get('n/o/p/group')).toString(), 'firstsecond');
  });

  it('a reserved key exists empty at once (new folders too); putNew fills it, even when it was deleted meanwhile', async () => {
    store.reserveNew(['r/s/group']);
    await waitFor(async () => (await store.size('r/s/group')) === 0);
    await store.putNew('r/s/group', [Buffer.from('first'), Buffer.from('second')]);
    assert.equal(Buffer.from(await store.get('r/s/group')).toString(), 'firstsecond');
    // As an orphan sweep would, if its clock took the empty file for an old one: the bytes still land.
    store.reserveNew(['r/s/swept']);
    await waitFor(async () => (await store.size('r/s/swept')) === 0);
    await store.delete('r/s/swept');
    await store.putNew('r/s/swept', [Buffer.from('kept')]);
    assert.equal(Buffer.from(await store.get('r/s/swept')).toString(), 'kept');
    // A reservation never written is deleted when the store closes.
    const other = new FileObjectStore(root);
    other.reserveNew(['r/s/unused']);
    await waitFor(async () => (await other.size('r/s/unused')) === 0);
    other.close();
    await waitFor(async () => (await other.size('r/s/unused')) === null);
    assert.deepEqual(readdirSync(join(root, 'r/s')).sort(), ['group', 'swept']);
  });

  it('keys reserved together exist empty at once (a new folder too); each putNew fills its own, the rest go at close', async () => {
    const batch = new FileObjectStore(root);
    batch.reserveNew(['m/n/a', 'm/n/b', 'm/n/c']);
    await waitFor(async () =>
      (await Promise.all(['a', 'b', 'c'].map((k) => batch.size(`m/n/${k}`)))).every((s) => s === 0),
    );
    await batch.putNew('m/n/c', [Buffer.from('third')]);
    await batch.putNew('m/n/a', [Buffer.from('first'), Buffer.from('!')]);
    assert.equal(Buffer.from(await batch.get('m/n/a')).toString(), 'first!');
    assert.equal(Buffer.from(await batch.get('m/n/c')).toString(), 'third');
    batch.close();
    await waitFor(async () => (await batch.size('m/n/b')) === null);
    assert.deepEqual(readdirSync(join(root, 'm/n')).sort(), ['a', 'c']);
  });

  it('readRange reads a segment: short at the end, empty past it, null when the object is missing', async () => {
    await store.put('g/group', Buffer.from('firstsecondthird'));
    const cases: Array<[number, number, string]> = [
      [5, 6, 'second'],
      [11, 10, 'third'],
      [40, 3, ''],
    ];
    for (const [offset, length, expected] of cases)
      assert.equal(Buffer.from((await store.readRange('g/group', offset, length))!).toString(), expected);
    assert.equal(await store.readRange('g/missing', 0, 3), null);
  });

  it('refuses keys that leave the store', () => {
    assert.throws(() => store.location('../escape'), /leaves the store/);
  });
});

async function waitFor(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await done()); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(await done(), 'not reached within 5 s');
}
