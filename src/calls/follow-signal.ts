/**
 * An AbortController that also aborts (with the same reason) when `source` does, until `unfollow`. What
 * AbortSignal.any([source, controller.signal]) gives, without its composite signal: Node 20 builds that
 * with a WeakRef per source and a Set on each side, and every DoGet made two of them (PROFILE.md s20).
 * Call `unfollow` once the work the controller stops is over, so a long-lived source keeps no listener.
 */
export function followSignal(source: AbortSignal | undefined): { controller: AbortController; unfollow: () => void } {
  const controller = new AbortController();
  if (!source) return { controller, unfollow: () => {} };
  if (source.aborted) {
    controller.abort(source.reason);
    return { controller, unfollow: () => {} };
  }
  const onAbort = (): void => controller.abort(source.reason);
  source.addEventListener('abort', onAbort, { once: true });
  return { controller, unfollow: () => source.removeEventListener('abort', onAbort) };
}
