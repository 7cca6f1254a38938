// The name DuckDB gives an unaliased select item, for a rewrite that changes the item (a stored column read in
// place of its expression, a cast made a TIMESTAMP_NS one) and must keep its column's name: a client reads it,
// and so does an enclosing query reading a CTE's or subquery's column by name. DuckDB names the item by its text
// as parsed (ParsedExpression::ToString), before binding; json_deserialize_sql writes the same text but for the
// type of a cast the text wrote, which the parser keeps as written (`now()::DATE` is named `CAST(now() AS
// "DATE")`, `x::VARCHAR(10)` `CAST(x AS VARCHAR(10))`, deparsed `CAST(now() AS DATE)` and `CAST(x AS VARCHAR)`),
// where its own casts have the type itself (`INTERVAL 1 HOUR` is `to_hours(CAST(trunc(CAST(1 AS DOUBLE)) AS
// BIGINT))`, as deparsed). So the item is deparsed with a marker for each written cast's type, each marker then
// replaced by the type's text as DuckDB names a cast of NULL to the type as the statement wrote it.
import type { DuckDBEngine } from '../engine/index.js';
import type { Node } from './partition-pruning.js';

/** Cast types' text as DuckDB names a cast to them (`"DATE"`, `DECIMAL(18, 3)`), by the type as written; bounded. */
const typeTexts = new Map<string, string>();
const typeTextsAtMost = 512;

/** A type json_deserialize_sql writes as its name, quoted, as the parser does: the marker of a cast's type. */
const unboundType = (name: string): Node => ({
  id: 'UNBOUND',
  type_info: {
    type: 'UNBOUND_TYPE_INFO',
    alias: '',
    extension_info: null,
    name,
    catalog: '',
    schema: '',
    user_type_modifiers: [],
  },
});

/**
 * `text` with each comment outside quoted text made spaces of its length in UTF-8 (so the parse tree's places stay
 * true), as they are to DuckDB's parser, which takes them anywhere in a type: `x::/*c*\/VARCHAR(3)`,
 * `DECIMAL(20 /*c*\/)`. A line comment kept would end the probe naming the type (castTypeTexts), and one in a type's
 * words would stop them being read. Block comments nest, as in Postgres's scanner, which DuckDB's is.
 */
function withoutComments(text: string): string {
  const quoted = /'[^']*'|"[^"]*"|(\$[A-Za-z_]*\$)[\s\S]*?\1/y;
  let out = '';
  for (let i = 0; i < text.length;) {
    quoted.lastIndex = i;
    let end = quoted.test(text) ? quoted.lastIndex : i + 1;
    let comment = false;
    if (text.startsWith('--', i)) {
      comment = true;
      end = text.indexOf('\n', i) < 0 ? text.length : text.indexOf('\n', i);
    } else if (text.startsWith('/*', i)) {
      comment = true;
      end = i + 2;
      for (let depth = 1; depth > 0 && end < text.length; end++) {
        const pair = text.slice(end, end + 2);
        if (pair === '/*' || pair === '*/') {
          depth += pair === '/*' ? 1 : -1;
          end++;
        }
      }
    }
    out += comment ? ' '.repeat(Buffer.byteLength(text.slice(i, end))) : text.slice(i, end);
    i = end;
  }
  return out;
}

/** A cast's start, in text without comments (see withoutComments). */
const castStart = /^(?:(::)|(?:try_)?cast\s*\()/i;
/** A type's name after `::`: words (quoted or not, qualified), and the words some types are written with. */
const typeName = new RegExp(
  String.raw`^\s*(?:"(?:[^"]|"")*"|[a-z_][\w$]*)(?:\s*\.\s*(?:"(?:[^"]|"")*"|[a-z_][\w$]*))*` +
    String.raw`(?:\s+(?:precision|varying|with(?:out)?\s+time\s+zone))?`,
  'i',
);

/**
 * The end (exclusive) of the bracketed text starting at `from` (an opening parenthesis or bracket), skipping
 * quoted text (in text without comments); -1 when it does not end.
 */
function closing(text: string, from: number): number {
  let depth = 0;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    const dollar = c === '$' ? /^\$[A-Za-z_]*\$/.exec(text.slice(i)) : null;
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) return -1;
      i = end; // a doubled quote is two quoted runs in a row
    } else if (dollar) {
      const end = text.indexOf(dollar[0], i + dollar[0].length);
      if (end < 0) return -1;
      i = end + dollar[0].length - 1;
    } else if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') if (--depth === 0) return i + 1;
  }
  return -1;
}

/**
 * A cast's type as the statement text (without comments) wrote it, where the cast starts at `at`: what follows `::` (a name, its
 * parenthesized modifiers, `[]`s), or what follows the last `AS` of `CAST(…)`'s parentheses; null if not told.
 */
function writtenType(text: string, at: number): string | null {
  const start = castStart.exec(text.slice(at));
  if (!start) return null;
  if (!start[1]) {
    const end = closing(text, at + start[0].length - 1);
    if (end < 0) return null;
    // The child's own `AS` are inside parentheses or quotes (comments, which may hold one, are spaces now): blank
    // those out, then take the last `AS`.
    const inside = text.slice(at + start[0].length, end - 1);
    let flat = '';
    for (let i = 0; i < inside.length;) {
      const c = inside[i];
      const skip = c === '(' || c === '[' || c === "'" || c === '"' ? closing(inside, i) : -1;
      const next = c === "'" || c === '"' ? inside.indexOf(c, i + 1) + 1 : skip;
      const to = next > i ? next : i + 1;
      flat += c === '(' || c === '[' || c === "'" || c === '"' ? ' '.repeat(to - i) : c;
      i = to;
    }
    const as = [...flat.matchAll(/\bas\b/gi)].pop();
    return as ? inside.slice(as.index + 2).trim() : null;
  }
  let rest = text.slice(at + 2);
  const name = typeName.exec(rest);
  if (!name) return null;
  let type = name[0];
  rest = rest.slice(type.length);
  // Modifiers (`(10)`, `(20, 2)`, a STRUCT's fields), then array brackets.
  for (let m = /^\s*[([]/.exec(rest); m; m = /^\s*\[/.exec(rest)) {
    const end = closing(rest, m[0].length - 1);
    if (end < 0) return null;
    type += rest.slice(0, end);
    rest = rest.slice(end);
  }
  return type.trim();
}

/**
 * The column name DuckDB gives an unaliased select item (its text), or null when it cannot be told. `text`: the
 * statement's SQL, which its nodes' query_location are UTF-8 offsets into.
 */
export async function selectItemName(engine: DuckDBEngine, item: Node, text?: string): Promise<string | null> {
  const bytes = text === undefined ? undefined : Buffer.from(withoutComments(text));
  // A cast the text wrote: `::` or (TRY_)CAST where it is (comments are space here, see withoutComments), its type
  // as written (null: a typed literal, `DATE '…'`, of no place, its query_location none, a marked big integer);
  // undefined for the parser's own cast of an interval's value, placed at the value, where its child is:
  // `INTERVAL (CAST(n AS INT)) HOUR` starts there too.
  const written = (cast: Node): string | null | undefined => {
    const at = cast.query_location;
    if (typeof at !== 'number' || !bytes) return null;
    if ((cast.child as Node | undefined)?.query_location === at) return undefined;
    const from = bytes.subarray(at).toString();
    return castStart.test(from) ? (writtenType(from, 0) ?? null) : undefined;
  };
  // Types the parser kept by a name it did not know (a user type's) are deparsed as parsed already.
  const types: Array<{ type: Node; as: string | null }> = [];
  const marked = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(marked);
    if (value === null || typeof value !== 'object') return value;
    const node = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, marked(v)])) as Node;
    const type = (value as Node).cast_type as Node | undefined;
    if ((value as Node).class !== 'CAST' || type?.id === 'UNBOUND') return node;
    const as = written(value as Node);
    if (as === undefined) return node;
    types.push({ type: type!, as });
    return { ...node, cast_type: unboundType(`__orr_cast_type_${types.length - 1}`) };
  };
  const single = (await engine.parseSelect('SELECT 1'))!;
  (single.statements[0].node as Node).select_list = [{ ...(marked(item) as Node), alias: '' }];
  const sql = await engine.deparse(single);
  if (!sql.startsWith('SELECT ')) return null;
  const texts = await castTypeTexts(engine, types).catch(() => null);
  if (!texts) return null;
  let name = sql.slice('SELECT '.length);
  for (const [i, typeText] of texts.entries()) {
    const marker = `"__orr_cast_type_${i}"`;
    // The statement's own text may hold the marker (a quoted name): not told apart, so not named.
    if (name.split(marker).length !== 2) return null;
    name = name.replace(marker, () => typeText);
  }
  return name;
}

/** A parse tree without its nodes' places in their text. */
const placeless = (tree: unknown): string =>
  JSON.stringify(tree, (key, value: unknown) => (key === 'query_location' ? undefined : value));

/**
 * Each type's text as DuckDB names `CAST(NULL AS <type>)`, by the type as parsed and, where known, as the statement
 * wrote it: one DESCRIBE for those not known yet. A type as written is put in the probe's text only when the probe
 * then parses to exactly the casts of NULL to the types as parsed (the statement's text is a key's, never run).
 */
async function castTypeTexts(
  engine: DuckDBEngine,
  types: ReadonlyArray<{ type: Node; as: string | null }>,
): Promise<string[]> {
  const keys = types.map(({ type, as }) => as ?? JSON.stringify(type));
  const missing = [...new Map(types.map((t, i) => [keys[i], t])).entries()].filter(([k]) => !typeTexts.has(k));
  if (missing.length > 0) {
    const probe = (await engine.parseSelect('SELECT CAST(NULL AS INTEGER)'))!;
    const node = probe.statements[0].node as Node;
    const [cast] = node.select_list as Node[];
    node.select_list = missing.map(([, { type }]) => ({ ...cast, cast_type: type }));
    const expected = placeless(probe);
    node.select_list = missing.map(([, { type, as }], i) => ({
      ...cast,
      cast_type: as ? unboundType(`__orr_t${i}`) : type,
    }));
    let sql = await engine.deparse(probe);
    missing.forEach(([, { as }], i) => {
      if (as) sql = sql.replace(`"__orr_t${i}"`, () => as);
    });
    if (placeless(await engine.parseSelect(sql)) !== expected) throw new Error('not the types as parsed');
    // Described, not run, and bound against no relation: a cast of NULL binds to any type DuckDB has.
    const rows = await engine.values(`SELECT column_name FROM (DESCRIBE ${sql})`);
    rows.forEach(([name], i) => {
      const text = String(name);
      if (typeTexts.size >= typeTextsAtMost) typeTexts.delete(typeTexts.keys().next().value!);
      typeTexts.set(missing[i][0], text.slice('CAST(NULL AS '.length, -')'.length));
    });
  }
  return keys.map((k) => typeTexts.get(k)!);
}

/** A statement's unaliased select items as parsed, each with its list and place there: named after rewrites. */
export type ParsedItems = ReadonlyArray<{ readonly list: Node[]; readonly at: number; readonly item: Node }>;

/** The unaliased select items of every SELECT of a statement (subqueries', CTEs'), copied as they are now. */
export function parsedItems(tree: { statements: Node[] }): ParsedItems {
  const items: Array<{ list: Node[]; at: number; item: Node }> = [];
  const visit = (value: unknown, key: string): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      value.forEach((v, at) => {
        if (key === 'select_list' && (v as Node).alias === '' && (v as Node).class !== 'STAR')
          items.push({ list: value as Node[], at, item: structuredClone(v as Node) });
        visit(v, '');
      });
      return;
    }
    for (const [k, v] of Object.entries(value)) visit(v, k);
  };
  visit(tree.statements, '');
  return items;
}

/** Whether an expression holds a cast placed in the statement's text (`::`, CAST(…); not a typed literal). */
const holdsPlacedCast = (value: unknown): boolean =>
  value !== null &&
  typeof value === 'object' &&
  (Array.isArray(value)
    ? value.some(holdsPlacedCast)
    : ((value as Node).class === 'CAST' && typeof (value as Node).query_location === 'number') ||
      Object.values(value).some(holdsPlacedCast));

/**
 * Before a statement's rewritten tree is deparsed to run: aliases each unaliased select item a rewrite changed (a
 * cast made a TIMESTAMP_NS one: `CAST(x AS TIMESTAMP)`, not `"TIMESTAMP_NS"`), or that holds a cast the text wrote
 * (the deparsed type loses how it was written: `x::VARCHAR(10)` would be named `CAST(x AS VARCHAR)`), with the name
 * DuckDB gives it as parsed (selectItemName). An item that cannot be named keeps the deparsed text's.
 */
export async function keepItemNames(engine: DuckDBEngine, items: ParsedItems, text: string): Promise<void> {
  for (const { list, at, item } of items) {
    const now = list[at];
    if (!now || now.alias !== '' || (!holdsPlacedCast(item) && JSON.stringify(now) === JSON.stringify(item))) continue;
    const name = await selectItemName(engine, item, text);
    if (name !== null) now.alias = name;
  }
}
