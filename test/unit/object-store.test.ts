// The file object store: atomic writes, create-only writes, listing, keys that stay inside.
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { nativeSyncedWrite } from '../../src/engine/index.js';
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

// Issue 16: a group object's write, fsync, link count and close in one trip to libuv's thread pool (the native addon's
// writeSynced, what `orrery serve` gives its FileObjectStore), with what the JavaScript path keeps: every part in
// order, a reserved file deleted meanwhile written anew, errors as fs errors, the descriptor closed once.
describe('FileObjectStore with the native synced write', () => {
  const root = mkdtempSync(join(tmpdir(), 'orrery-store-native-'));
  const write = nativeSyncedWrite();
  const store = new FileObjectStore(root, write ?? undefined);
  after(() => rmSync(root, { recursive: true, force: true }));

  it('writes a new or reserved object whole, in order, and a reserved one deleted meanwhile anew', async () => {
    assert.ok(write, 'the native addon is built with writeSynced (npm run build)');
    await store.putNew('n/group', [Buffer.from('first'), Buffer.from(''), Buffer.from('second')]);
    assert.equal(Buffer.from(await store.get('n/group')).toString(), 'firstsecond');
    await assert.rejects(store.putNew('n/group', [Buffer.from('again')]), { code: 'EEXIST' });
    store.reserveNew(['r/group', 'r/swept']);
    await waitFor(async () => (await store.size('r/swept')) === 0);
    await store.putNew('r/group', [Buffer.from('one'), Buffer.from('two')]);
    assert.equal(Buffer.from(await store.get('r/group')).toString(), 'onetwo');
    await store.delete('r/swept');
    await store.putNew('r/swept', [Buffer.from('kept')]);
    assert.equal(Buffer.from(await store.get('r/swept')).toString(), 'kept');
    // More parts than one writev call takes (IOV_MAX, 1,024): a group of that many payloads is written whole.
    const parts = Array.from({ length: 2500 }, (_, i) => Buffer.from(`${i},`));
    await store.putNew('n/large', parts);
    assert.equal(Buffer.from(await store.get('n/large')).toString(), parts.map(String).join(''));
  });

  it('answers the link count, closes the descriptor, and fails as the fs calls do', async () => {
    assert.ok(write, 'the native addon is built with writeSynced (npm run build)');
    const path = join(root, 'direct');
    const fd = openSync(path, 'wx');
    assert.equal(await write(fd, [Buffer.from('abc')]), 1);
    assert.notEqual(readlinkFd(fd), path, 'the descriptor is closed');
    const closed = openSync(join(root, 'closed'), 'wx');
    closeSync(closed);
    await assert.rejects(write(closed, [Buffer.from('x')]), { code: 'EBADF', syscall: 'write' });
    const readOnly = openSync(path, 'r');
    await assert.rejects(write(readOnly, [Buffer.from('x')]), { code: 'EBADF', syscall: 'write' });
    assert.notEqual(readlinkFd(readOnly), path, 'closed after a failure too');
    assert.equal(Buffer.from(await store.get('direct')).toString(), 'abc');
  });
});

/** What descriptor `fd` of this process names now, or null when it is not open. */
function readlinkFd(fd: number): string | null {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
}

async function waitFor(done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !(await done())) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(await done(), 'not reached within 30 s');
}
