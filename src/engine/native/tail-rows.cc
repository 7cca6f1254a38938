// Which row of a rollup's ring of kept tails (src/rollups/tail-values.ts) a statement reads, told to it without a
// statement of its own. A never-stale read's text names the ring alone, so that the connection set up with it and
// the statement DuckDB keeps prepared on it serve the reads after every write; the row is chosen at each run. A
// fill statement (an UPDATE of a temporary table the text joins the ring with) cost each read a statement and a
// join, ~1 ms of DuckDB's ~1.6 for bench/rollups' never-stale read (bench/rollups/tail-read.mjs). Here:
// - registerTailRowFunction(connection) registers the function in a DuckDB instance and answers the instance's
//   number: DuckDB numbers connections per instance (every engine's first are 2, 3, ...), so a connection is
//   known by (instance's number, connection id), the function's extra info telling a run its instance;
// - setTailReads(connection, instance, rings, ids) keeps, for the connection, the row of each ring its next
//   statement reads;
// - __orrery_tail_row('<ring>') -> BIGINT, volatile (never folded into a kept plan), answers that row's id, read
//   once per run, when DuckDB sets the expression up (its init), so a statement filters the ring by it in the
//   ring's scan pipeline, no join;
// - tailRowGone(ring, id), told before the row is deleted: a run that would read it fails instead ("kept tail
//   <ring> is gone", planned again by the server, as a deleted row failed the join's read). The init runs after
//   the run's transaction began, so a row not yet told gone then is deleted by a later transaction, which the run
//   does not see: it reads the row whole. The check is at init, so it holds for a ring whose rows are all gone.
// - tailRingMade(ring) and forgetTailRing(ring): a run reads a ring made and not yet dropped only. A run whose
//   transaction began before the ring's DETACH reads on in it, perhaps after forgetTailRing: what was told gone
//   of the ring is forgotten then, and a row deleted before the run began would be read as no rows.
#include "tail-rows.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "duckdb-c-api.h"

namespace {

std::mutex lock;
// The number given to the last DuckDB instance the function was registered in.
uint64_t instances = 0;
// A connection: its instance's number and DuckDB's connection id in it.
using Reader = std::pair<uint64_t, idx_t>;
// By connection: each ring's row its next statement reads.
std::map<Reader, std::map<std::string, int64_t>> reads;
// By ring made and not dropped (names are never used twice): its rows told gone (ids are never used twice).
std::map<std::string, std::set<int64_t>> rings;

duckdb_connection ConnectionOf(const Napi::Value &value) {
  // @duckdb/node-bindings holds a connection as an External over { duckdb_connection }.
  return *static_cast<duckdb_connection *>(value.As<Napi::External<void>>().Data());
}

idx_t IdOf(duckdb_client_context context) {
  const idx_t id = duckdb_client_context_get_connection_id(context);
  duckdb_destroy_client_context(&context);
  return id;
}

// A connection closed already (node-bindings nulls its handle) has no client context, whose id DuckDB would read
// through a null pointer: a TypeError instead.
idx_t ConnectionId(Napi::Env env, duckdb_connection connection) {
  duckdb_client_context context = nullptr;
  if (connection) duckdb_connection_get_client_context(connection, &context);
  if (!context) throw Napi::TypeError::New(env, "the DuckDB connection is closed");
  return IdOf(context);
}

void DeleteString(void *data) { delete static_cast<std::string *>(data); }
void *CopyString(void *data) { return new std::string(*static_cast<std::string *>(data)); }
void DeleteId(void *data) { delete static_cast<int64_t *>(data); }
void DeleteInstance(void *data) { delete static_cast<uint64_t *>(data); }

// The ring's name, a constant argument, kept as the expression's bind data.
void Bind(duckdb_bind_info info) {
  duckdb_expression argument = duckdb_scalar_function_bind_get_argument(info, 0);
  duckdb_client_context context = nullptr;
  duckdb_scalar_function_get_client_context(info, &context);
  duckdb_value value = nullptr;
  duckdb_error_data error = duckdb_expression_is_foldable(argument)
                                ? duckdb_expression_fold(context, argument, &value)
                                : nullptr;
  const bool folded = value && !duckdb_is_null_value(value) && !(error && duckdb_error_data_has_error(error));
  if (folded) {
    char *text = duckdb_get_varchar(value);
    duckdb_scalar_function_set_bind_data(info, new std::string(text), DeleteString);
    duckdb_scalar_function_set_bind_data_copy(info, CopyString);
    duckdb_free(text);
  } else {
    duckdb_scalar_function_bind_set_error(info, "__orrery_tail_row takes a ring's name, a constant");
  }
  if (error) duckdb_destroy_error_data(&error);
  if (value) duckdb_destroy_value(&value);
  duckdb_destroy_client_context(&context);
  duckdb_destroy_expression(&argument);
}

// Once per run (per thread of it): the row its connection was told, unless told gone since.
void Init(duckdb_init_info info) {
  const std::string &ring = *static_cast<std::string *>(duckdb_scalar_function_init_get_bind_data(info));
  duckdb_client_context context = nullptr;
  duckdb_scalar_function_init_get_client_context(info, &context);
  const Reader connection{*static_cast<uint64_t *>(duckdb_scalar_function_init_get_extra_info(info)), IdOf(context)};
  std::lock_guard<std::mutex> guard(lock);
  const auto of = reads.find(connection);
  const auto row = of == reads.end() ? std::map<std::string, int64_t>::const_iterator() : of->second.find(ring);
  const auto gone = rings.find(ring);
  if (of == reads.end() || row == of->second.end() || gone == rings.end() || gone->second.count(row->second)) {
    duckdb_scalar_function_init_set_error(info, ("kept tail " + ring + " is gone").c_str());
    return;
  }
  duckdb_scalar_function_init_set_state(info, new int64_t(row->second), DeleteId);
}

void Row(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  const int64_t id = *static_cast<int64_t *>(duckdb_scalar_function_get_state(info));
  int64_t *out = static_cast<int64_t *>(duckdb_vector_get_data(output));
  const idx_t count = duckdb_data_chunk_get_size(input);
  for (idx_t i = 0; i < count; i++) out[i] = id;
}

// registerTailRowFunction(connection) -> the instance's number: __orrery_tail_row in the connection's database
// (its system catalog, so every connection sees it). Throws when DuckDB refuses.
Napi::Value RegisterTailRowFunction(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(env, "registerTailRowFunction(connection)");
  duckdb_scalar_function function = duckdb_create_scalar_function();
  duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
  duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_scalar_function_set_name(function, "__orrery_tail_row");
  duckdb_scalar_function_add_parameter(function, varchar);
  duckdb_scalar_function_set_return_type(function, bigint);
  duckdb_scalar_function_set_volatile(function);
  duckdb_scalar_function_set_bind(function, Bind);
  duckdb_scalar_function_set_init(function, Init);
  duckdb_scalar_function_set_function(function, Row);
  uint64_t instance;
  {
    std::lock_guard<std::mutex> guard(lock);
    instance = ++instances;
  }
  duckdb_scalar_function_set_extra_info(function, new uint64_t(instance), DeleteInstance);
  const bool done = duckdb_register_scalar_function(ConnectionOf(info[0]), function) == DuckDBSuccess;
  duckdb_destroy_logical_type(&varchar);
  duckdb_destroy_logical_type(&bigint);
  duckdb_destroy_scalar_function(&function);
  if (!done) throw Napi::Error::New(env, "DuckDB refused to register __orrery_tail_row");
  return Napi::Number::New(env, static_cast<double>(instance));
}

// The connection a call names: (its instance's number, its id).
Reader ReaderOf(const Napi::CallbackInfo &info) {
  return {static_cast<uint64_t>(info[1].As<Napi::Number>().Int64Value()),
          ConnectionId(info.Env(), ConnectionOf(info[0]))};
}

// setTailReads(connection, instance, rings: string[], ids: number[]): the rows the connection's next statements read.
Napi::Value SetTailReads(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 4 || !info[0].IsExternal() || !info[1].IsNumber() || !info[2].IsArray() || !info[3].IsArray())
    throw Napi::TypeError::New(env, "setTailReads(connection, instance, rings, ids)");
  const Napi::Array rings = info[2].As<Napi::Array>();
  const Napi::Array ids = info[3].As<Napi::Array>();
  std::map<std::string, int64_t> rows;
  for (uint32_t i = 0; i < rings.Length(); i++)
    rows[rings.Get(i).As<Napi::String>().Utf8Value()] = ids.Get(i).As<Napi::Number>().Int64Value();
  const Reader connection = ReaderOf(info);
  std::lock_guard<std::mutex> guard(lock);
  reads[connection] = std::move(rows);
  return env.Undefined();
}

// forgetTailReads(connection, instance): the connection closes.
Napi::Value ForgetTailReads(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsExternal() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "forgetTailReads(connection, instance)");
  const Reader connection = ReaderOf(info);
  std::lock_guard<std::mutex> guard(lock);
  reads.erase(connection);
  return env.Undefined();
}

// tailRingMade(ring): the ring was made; its rows may be read.
Napi::Value TailRingMade(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "tailRingMade(ring)");
  std::lock_guard<std::mutex> guard(lock);
  rings[info[0].As<Napi::String>().Utf8Value()];
  return env.Undefined();
}

// tailRowGone(ring, id): the row is about to be deleted.
Napi::Value TailRowGone(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsString() || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "tailRowGone(ring, id)");
  std::lock_guard<std::mutex> guard(lock);
  const auto ring = rings.find(info[0].As<Napi::String>().Utf8Value());
  if (ring != rings.end()) ring->second.insert(info[1].As<Napi::Number>().Int64Value());
  return env.Undefined();
}

// forgetTailRing(ring): the ring was dropped (a statement naming it fails to bind): no run reads it from now on.
Napi::Value ForgetTailRing(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "forgetTailRing(ring)");
  std::lock_guard<std::mutex> guard(lock);
  rings.erase(info[0].As<Napi::String>().Utf8Value());
  return env.Undefined();
}

}  // namespace

void DefineTailRows(Napi::Env env, Napi::Object exports) {
  exports.Set("registerTailRowFunction", Napi::Function::New(env, RegisterTailRowFunction));
  exports.Set("setTailReads", Napi::Function::New(env, SetTailReads));
  exports.Set("forgetTailReads", Napi::Function::New(env, ForgetTailReads));
  exports.Set("tailRingMade", Napi::Function::New(env, TailRingMade));
  exports.Set("tailRowGone", Napi::Function::New(env, TailRowGone));
  exports.Set("forgetTailRing", Napi::Function::New(env, ForgetTailRing));
}
