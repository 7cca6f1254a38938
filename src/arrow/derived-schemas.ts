import type { Schema } from 'apache-arrow';

// wire/ipc keeps a schema's encoding per Schema object, and described schemas are shared by every statement of the
// same columns (the engine's describedSchemas). A schema made from one of them per statement (renamed columns,
// provenance in its metadata, timestamps without their zone) was encoded again for each statement, 35-150 us at
// load 20 (#10). Made here, one object is kept per (schema, change).

const ids = new WeakMap<Schema, number>();
let nextId = 0;
/** Derived schemas by `<id of the schema they came from> <change>`, least recently used first. */
const derived = new Map<string, Schema>();
/** Few: a change's text may be long (an admin's provenance lists the partitions read). */
const derivedEntries = 256;

/**
 * The schema `make` builds from `schema`, built once per (schema, change) while used: `change` says all that `make`
 * changes (a name, or a text it puts in the metadata). Schemas are never modified once made.
 */
export function derivedSchema(schema: Schema, change: string, make: () => Schema): Schema {
  let id = ids.get(schema);
  if (id === undefined) ids.set(schema, (id = nextId++));
  const key = `${id} ${change}`;
  let made = derived.get(key);
  if (made) derived.delete(key);
  else made = make();
  derived.set(key, made);
  if (derived.size > derivedEntries) derived.delete(derived.keys().next().value!);
  return made;
}
