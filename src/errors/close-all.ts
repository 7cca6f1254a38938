import { messageOf } from './messages.js';

/** One resource to release at shutdown, named for the report when its close fails. */
export interface Closer {
  readonly name: string;
  close(): unknown;
}

/**
 * Closes every resource in order, each even when an earlier one failed, and then reports every
 * failure at once: an AggregateError whose message names each resource and its error.
 */
export async function closeAll(closers: readonly Closer[]): Promise<void> {
  const failures: Array<{ name: string; error: unknown }> = [];
  for (const closer of closers) {
    try {
      await closer.close();
    } catch (error) {
      failures.push({ name: closer.name, error });
    }
  }
  if (failures.length === 0) return;
  const what = failures.map(({ name, error }) => `${name}: ${messageOf(error)}`).join('; ');
  throw new AggregateError(
    failures.map((f) => f.error),
    `${failures.length} of ${closers.length} resource(s) failed to close: ${what}`,
  );
}
