// What the resources record of each partition file (an index's statistics, a projection's copy), kept in
// memory: a file never changes once written, so neither does what is recorded of it, and a statement
// over partitions already seen asks Postgres nothing (a query per statement cost 2-10 ms under load, which
// made queries skipping nothing slower with an index than without). A file with nothing recorded yet (a
// backfill or the daemon has not reached it) is asked again after `absentSeconds`, or at once after this
// process records something (forgetAbsent): until then it is read as unindexed, which changes no answer.
// Facts of a dropped index or projection stay until evicted but are never asked for (the installed lists
// no longer name it), and one installed again under the same hash records the same facts.

/** How long a file with nothing recorded is taken as such (as long as the installed lists are kept). */
const absentSeconds = 2;
/** Bytes kept per metadata handle before starting over (text bitmaps are 5.8 KB, bloom filters up to 1 MB). */
const maxBytes = 64 * 1024 * 1024;

interface Facts {
  readonly known: Map<string, unknown>;
  bytes: number;
}

const facts = new WeakMap<object, Facts>();
let absent = new WeakMap<object, Map<string, number>>();

/**
 * The facts of kind `kind` (e.g. an index's hash) recorded for these files, by file: those kept, and
 * `load(missing)` for the others (what it does not return is remembered as absent for a while).
 * `size` is a fact's bytes in memory, for the bound.
 */
export async function factsOf<T>(
  db: object,
  kind: string,
  files: readonly string[],
  load: (missing: string[]) => Promise<Map<string, T>>,
  size: (fact: T) => number,
): Promise<Map<string, T>> {
  const own = facts.get(db) ?? { known: new Map<string, unknown>(), bytes: 0 };
  facts.set(db, own);
  const gaps = absent.get(db) ?? new Map<string, number>();
  absent.set(db, gaps);
  const found = new Map<string, T>();
  const missing: string[] = [];
  const now = Date.now();
  for (const file of files) {
    const key = `${kind}\u0000${file}`;
    if (own.known.has(key)) found.set(file, own.known.get(key) as T);
    else if ((gaps.get(key) ?? 0) <= now) missing.push(file);
  }
  if (missing.length === 0) return found;
  const loaded = await load(missing);
  if (gaps.size > 100_000) gaps.clear();
  for (const file of missing) {
    const key = `${kind}\u0000${file}`;
    const fact = loaded.get(file);
    if (fact === undefined) {
      gaps.set(key, now + absentSeconds * 1000);
      continue;
    }
    found.set(file, fact);
    own.bytes += size(fact) + key.length * 2;
    if (own.bytes > maxBytes) {
      own.known.clear();
      own.bytes = size(fact) + key.length * 2;
    }
    own.known.set(key, fact);
    gaps.delete(key);
  }
  return found;
}

/** Forgets which files had nothing recorded: this process just recorded something. */
export function forgetAbsent(): void {
  absent = new WeakMap();
}
