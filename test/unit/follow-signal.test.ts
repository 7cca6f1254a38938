// followSignal: an AbortController that follows another signal until told not to (a DoGet's run follows its call).
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { followSignal } from '../../src/calls/index.js';

describe('followSignal', () => {
  it("aborts with the source's reason while it follows it", () => {
    const source = new AbortController();
    const { controller } = followSignal(source.signal);
    const reason = new Error('the client went away');
    source.abort(reason);
    assert.equal(controller.signal.aborted, true);
    assert.equal(controller.signal.reason, reason);
  });

  it('is aborted at once when the source already is', () => {
    const source = new AbortController();
    source.abort('gone');
    const { controller, unfollow } = followSignal(source.signal);
    assert.equal(controller.signal.reason, 'gone');
    unfollow();
  });

  it('leaves no listener on the source after unfollow, and no longer follows it', () => {
    const source = new AbortController();
    const { controller, unfollow } = followSignal(source.signal);
    assert.equal(getEventListeners(source.signal, 'abort').length, 1);
    unfollow();
    assert.equal(getEventListeners(source.signal, 'abort').length, 0);
    source.abort();
    assert.equal(controller.signal.aborted, false);
  });

  it('aborts on its own without aborting the source', () => {
    const source = new AbortController();
    const { controller, unfollow } = followSignal(source.signal);
    controller.abort();
    assert.equal(source.signal.aborted, false);
    unfollow();
    const alone = followSignal(undefined);
    alone.controller.abort();
    assert.equal(alone.controller.signal.aborted, true);
  });
});
