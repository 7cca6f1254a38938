// The name DuckDB gives an unaliased select item, for a rewrite that changes the item (a stored column read in
// place of its expression) and must keep its column's name: a
// client reads it, and so does an enclosing query reading a CTE's or subquery's column by name. DuckDB names the
// item by its text as parsed (ParsedExpression::ToString), before binding; json_deserialize_sql writes the same
// text but for the type of a cast the text wrote, which the parser keeps by its name (`now()::DATE` is named
// `CAST(now() AS "DATE")`, deparsed `CAST(now() AS DATE)`), where its own casts have the type itself (`INTERVAL 1
// HOUR` is `to_hours(CAST(trunc(CAST(1 AS DOUBLE)) AS BIGINT))`, as deparsed). So the item is deparsed with a
// marker for each written cast's type, each marker then replaced by the type's text as DuckDB names a cast of
// NULL to it.
import type { DuckDBEngine } from '../engine/index.js';
import type { Node } from './partition-pruning.js';

/** Cast types' text as DuckDB names a cast to them (`"DATE"`, `DECIMAL(18, 3)`), by the type's JSON; bounded. */
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
 * The column name DuckDB gives an unaliased select item (its text), or null when it cannot be told. `text`: the
 * statement's SQL, which its nodes' query_location are UTF-8 offsets into.
 */
export async function selectItemName(engine: DuckDBEngine, item: Node, text?: string): Promise<string | null> {
  const bytes = text === undefined ? undefined : Buffer.from(text);
  // A cast the text wrote: `::` or (TRY_)CAST where it is (a comment may stand before its parenthesis), or a typed
  // literal (`DATE '…'`, of no place: its query_location is none, a marked big integer). The parser's own cast of an
  // interval's value is placed at the value, where its child is: `INTERVAL (CAST(n AS INT)) HOUR` starts there too.
  const written = (cast: Node): boolean => {
    const at = cast.query_location;
    if (typeof at !== 'number' || !bytes) return true;
    if ((cast.child as Node | undefined)?.query_location === at) return false;
    return /^(::|(try_)?cast(\s|\/\*[\s\S]*?\*\/|--[^\n]*\n)*\()/i.test(bytes.subarray(at).toString());
  };
  // Types the parser kept by a name it did not know (a user type's) are deparsed as parsed already.
  const types: Node[] = [];
  const marked = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(marked);
    if (value === null || typeof value !== 'object') return value;
    const node = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, marked(v)])) as Node;
    const type = (value as Node).cast_type as Node | undefined;
    if ((value as Node).class !== 'CAST' || type?.id === 'UNBOUND' || !written(value as Node)) return node;
    types.push(type!);
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

/** Each type's text as DuckDB names `CAST(NULL AS <type>)`: one DESCRIBE for those not known yet. */
async function castTypeTexts(engine: DuckDBEngine, types: readonly Node[]): Promise<string[]> {
  const keys = types.map((t) => JSON.stringify(t));
  const missing = [...new Set(keys.filter((k) => !typeTexts.has(k)))];
  if (missing.length > 0) {
    const probe = (await engine.parseSelect('SELECT CAST(NULL AS INTEGER)'))!;
    const node = probe.statements[0].node as Node;
    const [cast] = node.select_list as Node[];
    node.select_list = missing.map((k) => ({ ...cast, cast_type: JSON.parse(k) as Node }));
    // Described, not run, and bound against no relation: a cast of NULL binds to any type DuckDB has.
    const rows = await engine.values(`SELECT column_name FROM (DESCRIBE ${await engine.deparse(probe)})`);
    rows.forEach(([name], i) => {
      const text = String(name);
      if (typeTexts.size >= typeTextsAtMost) typeTexts.delete(typeTexts.keys().next().value!);
      typeTexts.set(missing[i], text.slice('CAST(NULL AS '.length, -')'.length));
    });
  }
  return keys.map((k) => typeTexts.get(k)!);
}
