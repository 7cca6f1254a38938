// What is installed on a view set (stored columns, indexes, projections) as read at most `listSeconds` ago:
// one Postgres query per set, kind and interval for the statements, not one each. This process's installs
// and drops forget every list at once (forgetRecent). A list out of date changes no answer: what was
// installed since is not used yet, and what was dropped since has no rows of its files left (no file
// holds the column, no partition has statistics or a copy), so it is not used either.

/** How long a statement may use a list another statement read. */
const listSeconds = 2;
let lists = new WeakMap<object, Map<string, { at: number; value: Promise<unknown> }>>();

/** `load()`'s answer for this metadata handle and key, read at most `listSeconds` ago. */
export function recently<T>(db: object, key: string, load: () => Promise<T>): Promise<T> {
  const own = lists.get(db) ?? new Map<string, { at: number; value: Promise<unknown> }>();
  lists.set(db, own);
  const known = own.get(key);
  if (known && Date.now() - known.at < listSeconds * 1000) return known.value as Promise<T>;
  const value = load();
  own.set(key, { at: Date.now(), value });
  value.catch(() => own.delete(key));
  return value;
}

/** Forgets every list: an install or drop in this process is seen by the next statement. */
export function forgetRecent(): void {
  lists = new WeakMap();
}
