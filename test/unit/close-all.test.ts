// Issue 8 item 7: shutdown goes on past a close that fails, and reports every failure at once.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { closeAll } from '../../src/errors/index.js';

describe('closeAll (issue 8)', () => {
  it('closes every resource in order, even after failures, then names each failure', async () => {
    const closed: string[] = [];
    const resource = (name: string, failure?: string) => ({
      name,
      close: async () => {
        closed.push(name);
        if (failure) throw new Error(failure);
      },
    });
    await assert.rejects(
      closeAll([
        resource('the HTTP server'),
        resource('the engine', 'busy'),
        resource('the pool', 'gone'),
        resource('the store'),
      ]),
      (error) => {
        assert.ok(error instanceof AggregateError);
        assert.equal(error.message, '2 of 4 resource(s) failed to close: the engine: busy; the pool: gone');
        assert.deepEqual(
          error.errors.map((e: Error) => e.message),
          ['busy', 'gone'],
        );
        return true;
      },
    );
    assert.deepEqual(closed, ['the HTTP server', 'the engine', 'the pool', 'the store']);
  });

  it('resolves when every close succeeds', async () => {
    const closed: string[] = [];
    await closeAll([
      { name: 'a', close: () => closed.push('a') },
      { name: 'b', close: () => closed.push('b') },
    ]);
    assert.deepEqual(closed, ['a', 'b']);
  });
});
