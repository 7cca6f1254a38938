// Issue 15: the S3 object store against a real S3-compatible server (scripts/s3-server.mjs):
// whole-object writes, create-only writes that exactly one of many concurrent writers wins,
// listing past a page, keys that stay under the prefix, and what housekeeping's orphan sweep
// needs: keys by the time they were written, unfinished multipart uploads abandoned.
import assert from 'node:assert/strict';
import {
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { S3ObjectStore, s3Settings } from '../../src/lakehouse/index.js';
import { testS3, type TestS3 } from '../support/s3-server.js';

describe('S3ObjectStore (issue 15)', () => {
  let s3: TestS3;
  let store: S3ObjectStore;
  let prefix: string;

  before(async () => {
    s3 = await testS3();
    prefix = `store-${randomUUID()}`;
    store = new S3ObjectStore(s3Settings(`s3://${s3.bucket}/${prefix}`, s3.env));
  });
  after(() => store.close());

  it('puts, gets, sizes, lists and deletes under its prefix', async () => {
    await store.put('a/b/one.txt', Buffer.from('one'));
    await store.put('a/two.txt', Buffer.from('two!'));
    await store.put('a/two.txt', Buffer.from('two, again'));
    assert.equal(Buffer.from(await store.get('a/b/one.txt')).toString(), 'one');
    assert.equal(Buffer.from(await store.get('a/two.txt')).toString(), 'two, again');
    assert.equal(await store.size('a/two.txt'), 10);
    assert.equal(await store.size('a/none'), null);
    assert.deepEqual(await store.list('a/'), ['a/b/one.txt', 'a/two.txt']);
    assert.deepEqual(await store.list('a/b'), ['a/b/one.txt']);
    await store.delete('a/two.txt');
    await store.delete('a/two.txt');
    assert.equal(await store.size('a/two.txt'), null);
    assert.equal(store.location('a/b/one.txt'), `s3://${s3.bucket}/${prefix}/a/b/one.txt`);
    assert.equal(store.root, `s3://${s3.bucket}/${prefix}/`);
  });

  it('putIfAbsent: of concurrent writers of one key exactly one wins, and its bytes stay', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => store.putIfAbsent('once/x', Buffer.from(`writer ${i}`))),
    );
    assert.equal(outcomes.filter(Boolean).length, 1, String(outcomes));
    const winner = outcomes.indexOf(true);
    assert.equal(Buffer.from(await store.get('once/x')).toString(), `writer ${winner}`);
    assert.equal(await store.putIfAbsent('once/x', Buffer.from('later')), false);
  });

  it('readRange reads a segment with a ranged GET: short at the end, empty past it, null when missing', async () => {
    await store.put('group/one', Buffer.from('firstsecondthird'));
    const text = async (offset: number, length: number) => {
      const bytes = await store.readRange('group/one', offset, length);
      return bytes === null ? null : Buffer.from(bytes).toString();
    };
    assert.equal(await text(5, 6), 'second');
    assert.equal(await text(11, 10), 'third');
    assert.equal(await text(40, 3), '');
    assert.equal(await text(3, 0), '');
    assert.equal(await store.readRange('group/missing', 0, 3), null);
  });

  it('lists past one page of keys', async () => {
    const keys = Array.from({ length: 1005 }, (_, i) => `many/${String(i).padStart(4, '0')}`);
    for (let i = 0; i < keys.length; i += 50)
      await Promise.all(keys.slice(i, i + 50).map((key) => store.put(key, Buffer.from('x'))));
    assert.deepEqual(await store.list('many/'), keys);
    // A range starts its listing after `after` (past the first page) and stops past `until`.
    assert.deepEqual(await store.listBetween('many/', 'many/0998', 'many/1003'), keys.slice(999, 1004));
    assert.deepEqual(await store.listBetween('many/', 'many/0001', 'many/00025'), keys.slice(2, 3));
    assert.deepEqual(await store.listBetween('many/', 'many/1004', 'many/~'), []);
  });

  it('refuses keys that leave the prefix', () => {
    for (const key of ['../escape', 'a/../../b', '/absolute', './x'])
      assert.throws(() => store.location(key), /leaves the store/, key);
  });

  it('lists the keys written before a time, and abandons the multipart uploads started before it', async () => {
    const before = new Date(Date.now() - 60_000);
    await store.put('aged/one', Buffer.from('1'));
    await store.put('aged/two', Buffer.from('2'));
    const written = async (cutoff: Date): Promise<string[]> => {
      const keys: string[] = [];
      for await (const page of store.listWrittenBefore('aged/', cutoff)) keys.push(...page);
      return keys.sort();
    };
    assert.deepEqual(await written(before), []);
    assert.deepEqual(await written(new Date(Date.now() + 60_000)), ['aged/one', 'aged/two']);

    // An upload a killed DuckDB COPY left: started, one part sent, never completed.
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: s3.env.AWS_ENDPOINT_URL,
      forcePathStyle: true,
      credentials: { accessKeyId: s3.env.AWS_ACCESS_KEY_ID, secretAccessKey: s3.env.AWS_SECRET_ACCESS_KEY },
    });
    try {
      const Key = `${prefix}/views/killed.parquet`;
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
      await client.send(
        new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId, PartNumber: 1, Body: Buffer.alloc(1024) }),
      );
      const uploads = async (): Promise<number> =>
        (
          (await client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: `${prefix}/` }))).Uploads ??
          []
        ).length;
      assert.equal(await uploads(), 1);
      assert.equal(await store.abortUploadsStartedBefore(before), 0, 'an upload under way is left alone');
      assert.equal(await store.abortUploadsStartedBefore(new Date(Date.now() + 60_000)), 1);
      assert.equal(await uploads(), 0);
    } finally {
      client.destroy();
    }
  });
});
