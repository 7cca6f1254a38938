// How often an in-process server calls a method (DuckDB's prepare, the engine's constant evaluation) while a test
// works: the method is wrapped on its prototype meanwhile, so every instance's calls pass through the count.
import { DuckDBConnection } from '@duckdb/node-api';

/** The calls of `prototype[method]` whose first argument `counts` accepts while `work` runs. */
export async function countedCalls(
  prototype: object,
  method: string,
  work: () => Promise<void>,
  counts: (first: unknown) => boolean = () => true,
): Promise<number> {
  const original = Object.getOwnPropertyDescriptor(prototype, method)!.value as (...args: unknown[]) => unknown;
  let count = 0;
  const counted = function (this: unknown, ...args: unknown[]): unknown {
    if (counts(args[0])) count++;
    return original.apply(this, args);
  };
  Object.defineProperty(prototype, method, { configurable: true, writable: true, value: counted });
  try {
    await work();
  } finally {
    Object.defineProperty(prototype, method, { configurable: true, writable: true, value: original });
  }
  return count;
}

/**
 * Resolves with the first argument of the next call of `prototype[method]` that `accepts` it, once that call has
 * settled: a test waits on the server's own step (a COMMIT or ROLLBACK) instead of a time.
 */
export function nextSettled(prototype: object, method: string, accepts: (first: unknown) => boolean): Promise<unknown> {
  const original = Object.getOwnPropertyDescriptor(prototype, method)!.value as (...args: unknown[]) => unknown;
  return new Promise((resolve) => {
    const watched = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      try {
        return await original.apply(this, args);
      } finally {
        if (accepts(args[0])) {
          Object.defineProperty(prototype, method, { configurable: true, writable: true, value: original });
          resolve(args[0]);
        }
      }
    };
    Object.defineProperty(prototype, method, { configurable: true, writable: true, value: watched });
  });
}

/** DuckDB's queries of DuckLake's change feed of series table `table` while `work` runs (the rollups' pending buckets). */
export const changeFeedReads = (table: string, work: () => Promise<void>): Promise<number> =>
  countedCalls(
    DuckDBConnection.prototype,
    'runAndReadAll',
    work,
    (text) => String(text).includes('ducklake_table_changes') && String(text).includes(`'${table}'`),
  );
