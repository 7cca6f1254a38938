// Prints, as JSON, what the server's materializer runs for a payload view set (default log_entries):
// its extract query (with the {payloads} placeholder) and its typed column list, taken from the
// built server (<root>/dist/src/views/builtin-views.js), so the in-process baseline runs the same SQL.
//   node bench/materialization/view-sql.mjs [root] [view]
const root = process.argv[2] ?? new URL('../..', import.meta.url).pathname;
const name = process.argv[3] ?? 'log_entries';
const views = await import(`${root}/dist/src/views/builtin-views.js`);
const view = views.builtinViewSets.find((v) => v.name === name);
if (!view) throw new Error(`no built-in view set ${name}`);
if (view.source.kind !== 'payload') throw new Error(`${name} is not built from block payloads`);
console.log(
  JSON.stringify({
    name,
    // Since the native logs decoder the extract reads a relation ({payloads}); before, a list of files.
    extract: views.ndjsonPayloads
      ? view.source.extract.replaceAll('{payloads}', views.ndjsonPayloads(view.source.tag, '{payloads}'))
      : view.source.extract,
    columns: view.columns,
    sortOrder: view.mergeSortOrder ?? null,
  }),
);
