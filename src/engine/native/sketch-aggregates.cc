// Native aggregates behind the sketch macros (src/views/sketch-functions.ts), registered in a
// database's system catalog through DuckDB's C API. Each returns exactly what the SQL definition
// of the same name returns (the macros kept for engines without the addon, ORRERY_NATIVE=off;
// test/views/sketches.test.ts compares the two), in one pass with a small state per group:
// - __orrery_dd_build(x DOUBLE) -> MAP(INTEGER, UBIGINT): the count of each log bucket of the
//   values, sorted by key. The SQL definition is DuckDB's histogram of the keys, 3-8x the cost of
//   approx_quantile with 100 to 10,000 groups.
// - __orrery_hll_build(hash UBIGINT) -> INTEGER[]: the HyperLogLog entries (register * 64 + rank,
//   the largest rank of each register that is not empty, sorted) of the hashes. The SQL
//   definition builds list(DISTINCT entry) first: a hash table over every distinct entry, 7-10x
//   the cost of DuckDB's approx_count_distinct (issue 17 item 5).
// - __orrery_hll_union(INTEGER[]) -> INTEGER[]: the same entries of the union of such lists.
// - __orrery_dd_union(MAP(INTEGER, UBIGINT)) -> MAP(INTEGER, UBIGINT): counts summed per key,
//   sorted by key. The SQL definition unnests the group's entries and sums them per key with a
//   GROUP BY in a correlated subquery, which DuckDB plans as a join.
// The states live on this addon's heap, where DuckDB's memory_limit does not see them: each
// database's states are counted together (Budget) and a query whose states would take more than
// its memory_limit fails with an error instead of exhausting the process.

#include "sketch-aggregates.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "duckdb-c-api.h"

namespace {

bool IsValid(const uint64_t *validity, idx_t row) { return !validity || ((validity[row >> 6] >> (row & 63)) & 1); }

// sketch-functions.ts's distinctPrecision: 2^14 registers, ranks from the other 50 bits.
constexpr int kPrecision = 14;
constexpr int kRankBits = 64 - kPrecision;
constexpr uint32_t kRegisters = 1u << kPrecision;
// Sparse registers turn dense past this many (8 KiB of entries, half the dense registers).
constexpr size_t kSparseMost = kRegisters / 8;

// The entry of a hash, as __orrery_hll_entry computes it: the rank through the same double log2
// (not a count of leading zeros), which rounds up just below a power of two, so that both agree.
uint32_t HllEntry(uint64_t hash) {
  const uint64_t rest = hash & ((uint64_t{1} << kRankBits) - 1);
  const int rank = std::max(1, kRankBits - static_cast<int>(std::floor(std::log2(static_cast<double>(rest | 1)))));
  return static_cast<uint32_t>(hash >> kRankBits) * 64 + rank;
}

// The bytes the sketch states of one database's running queries hold, and the most they may.
struct Budget {
  std::atomic<int64_t> used{0};
  int64_t limit = 0;
};

// What every aggregate of a database is registered with.
struct Parameters {
  double inverseLogGamma = 0;
  std::shared_ptr<Budget> budget;
};

// The part of a state that counts its bytes against its database's budget.
struct Accounted {
  Budget *budget = nullptr;
  int64_t charged = 0;
};

// One group's registers: entries appended (unsorted, repeated) and compacted now and then, or one
// byte per register once many registers are set; a group of few values stays small.
struct Hll : Accounted {
  std::vector<uint32_t> sparse;
  size_t compactAt = 64;
  // sparse[0, sorted) is the last compaction's result, sorted and one entry per register.
  size_t sorted = 0;
  std::vector<uint8_t> dense;

  void Add(uint32_t entry) {
    if (!dense.empty()) {
      uint8_t &rank = dense[entry >> 6];
      rank = std::max<uint8_t>(rank, entry & 63);
      return;
    }
    sparse.push_back(entry);
    if (sparse.size() >= compactAt) Compact();
  }

  // Sorted, the largest rank of each register kept (entries of a register sort by rank). Only the
  // entries added since the last compaction are sorted, then merged with the sorted ones: with
  // 10,000 groups of 1,000 values the sorting was most of the build's time.
  void Compact() {
    std::sort(sparse.begin() + sorted, sparse.end());
    std::inplace_merge(sparse.begin(), sparse.begin() + sorted, sparse.end());
    size_t kept = 0;
    for (size_t i = 0; i < sparse.size(); i++)
      if (i + 1 == sparse.size() || (sparse[i] >> 6) != (sparse[i + 1] >> 6)) sparse[kept++] = sparse[i];
    sparse.resize(kept);
    sorted = kept;
    if (kept > kSparseMost) {
      dense.assign(kRegisters, 0);
      for (uint32_t entry : sparse) dense[entry >> 6] = entry & 63;
      std::vector<uint32_t>().swap(sparse);
      sorted = 0;
    } else {
      compactAt = std::max<size_t>(64, 2 * kept);
    }
  }

  void Merge(const Hll &other) {
    if (!other.dense.empty()) {
      if (dense.empty()) {
        for (uint32_t entry : other.sparse) sparse.push_back(entry);
        dense.assign(kRegisters, 0);
        for (uint32_t entry : sparse) dense[entry >> 6] = std::max<uint8_t>(dense[entry >> 6], entry & 63);
        std::vector<uint32_t>().swap(sparse);
        sorted = 0;
      }
      for (uint32_t r = 0; r < kRegisters; r++) dense[r] = std::max(dense[r], other.dense[r]);
    } else {
      for (uint32_t entry : other.sparse) Add(entry);
    }
  }

  size_t Bytes() const { return sizeof(Hll) + sparse.capacity() * sizeof(uint32_t) + dense.capacity(); }

  void Entries(std::vector<int32_t> &out) {
    out.clear();
    if (dense.empty()) Compact();
    if (dense.empty()) {
      out.assign(sparse.begin(), sparse.end());
      return;
    }
    for (uint32_t r = 0; r < kRegisters; r++)
      if (dense[r]) out.push_back(static_cast<int32_t>(r * 64 + dense[r]));
  }
};

// One group's log buckets: (key, count) appended and summed per key now and then.
struct Buckets : Accounted {
  std::vector<std::pair<int32_t, uint64_t>> entries;
  size_t compactAt = 256;
  /** The entries before it are sorted by key, each key once (the last Compact's); those after were added since. */
  size_t sorted = 0;

  size_t Bytes() const { return sizeof(Buckets) + entries.capacity() * sizeof(entries[0]); }

  void Add(int32_t key, uint64_t count) {
    entries.emplace_back(key, count);
    if (entries.size() >= compactAt) Compact();
  }

  // The entries added since the last Compact are merged into the sorted ones. A union's are a few runs of
  // ascending keys (each sketch's map is sorted by key), each merged in linear time: sorting every entry at each
  // compaction made merging a day's sketches mostly sorting (bench/rollup-rewrite's p99 per day). Others (a build's
  // keys come in the values' order) are sorted first.
  void Compact() {
    const auto byKey = [](const auto &a, const auto &b) { return a.first < b.first; };
    const auto begin = entries.begin();
    std::vector<size_t> runs;
    for (size_t i = sorted + 1; i < entries.size() && runs.size() <= 8; i++)
      if (entries[i].first < entries[i - 1].first) runs.push_back(i);
    if (runs.size() > 8) {
      std::sort(begin + sorted, entries.end(), byKey);
      runs.clear();
    }
    runs.push_back(entries.size());
    for (const size_t end : runs) {
      std::inplace_merge(begin, begin + sorted, begin + end, byKey);
      sorted = end;
    }
    size_t kept = 0;
    for (size_t i = 0; i < entries.size(); i++) {
      if (kept > 0 && entries[kept - 1].first == entries[i].first)
        entries[kept - 1].second += entries[i].second;
      else
        entries[kept++] = entries[i];
    }
    entries.resize(kept);
    sorted = kept;
    compactAt = std::max<size_t>(256, 2 * kept);
  }
};

// A state holds a pointer to its group's object, made at its first value: DuckDB may move states
// (memcpy) between hash tables, which a pointer survives.
template <class T>
T *&Slot(duckdb_aggregate_state state) {
  return *reinterpret_cast<T **>(state);
}
Budget *BudgetOf(duckdb_function_info info) {
  return static_cast<Parameters *>(duckdb_aggregate_function_get_extra_info(info))->budget.get();
}
template <class T>
T &Own(duckdb_aggregate_state state, Budget *budget) {
  T *&slot = Slot<T>(state);
  if (!slot) {
    slot = new T();
    slot->budget = budget;
  }
  return *slot;
}

// Brings a state's charge up to date with its bytes (they change only when a vector grows or goes
// dense, so the shared count is touched rarely); throws when a growth takes the database past its
// budget. The state keeps what it charged, so Destroy gives exactly that back.
template <class T>
void Account(T &state) {
  const int64_t now = static_cast<int64_t>(state.Bytes());
  const int64_t growth = now - state.charged;
  if (growth == 0) return;
  const int64_t used = state.budget->used.fetch_add(growth) + growth;
  state.charged = now;
  if (growth > 0 && used > state.budget->limit) {
    char message[400];
    std::snprintf(message, sizeof message,
                  "native sketch states would take more than %.1f MiB, the engine's memory_limit "
                  "(ORRERY_DUCKDB_MEMORY_LIMIT), with the queries running: group by fewer groups, narrow the "
                  "query, or raise the limit",
                  static_cast<double>(state.budget->limit) / 1048576.0);
    throw std::runtime_error(message);
  }
}
template <class T>
idx_t StateSize(duckdb_function_info) {
  return sizeof(T *);
}
template <class T>
void Init(duckdb_function_info, duckdb_aggregate_state state) {
  Slot<T>(state) = nullptr;
}
template <class T>
void Destroy(duckdb_aggregate_state *states, idx_t count) {
  for (idx_t i = 0; i < count; i++) {
    if (T *state = Slot<T>(states[i])) {
      state->budget->used.fetch_sub(state->charged);
      delete state;
    }
    Slot<T>(states[i]) = nullptr;
  }
}

// DuckDB's callbacks are C: a failure becomes the query's error rather than an exception through them.
template <class F>
void Guarded(duckdb_function_info info, F &&body) {
  try {
    body();
  } catch (const std::bad_alloc &) {
    duckdb_aggregate_function_set_error(info, "out of memory building a sketch");
  } catch (const std::exception &error) {
    duckdb_aggregate_function_set_error(info, error.what());
  }
}

template <class T>
void Combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target, idx_t count) {
  Guarded(info, [&] {
    Budget *budget = BudgetOf(info);
    for (idx_t i = 0; i < count; i++) {
      const T *from = Slot<T>(source[i]);
      if (!from) continue;
      T &into = Own<T>(target[i], budget);
      if constexpr (std::is_same_v<T, Hll>) {
        into.Merge(*from);
      } else {
        for (const auto &[key, value] : from->entries) into.Add(key, value);
      }
      Account(into);
    }
  });
}

// Calls add(state, value) for each value of the input that is not NULL (a column of V).
template <class T, class V, class F>
void ForEachValue(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states, F &&add) {
  Budget *budget = BudgetOf(info);
  const idx_t rows = duckdb_data_chunk_get_size(input);
  duckdb_vector vector = duckdb_data_chunk_get_vector(input, 0);
  const auto *values = static_cast<const V *>(duckdb_vector_get_data(vector));
  const uint64_t *validity = duckdb_vector_get_validity(vector);
  for (idx_t i = 0; i < rows; i++) {
    if (!IsValid(validity, i)) continue;
    T &state = Own<T>(states[i], budget);
    add(state, values[i]);
    Account(state);
  }
}

void HllBuildUpdate(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  Guarded(info, [&] {
    ForEachValue<Hll, uint64_t>(info, input, states, [](Hll &hll, uint64_t hash) { hll.Add(HllEntry(hash)); });
  });
}

// For each list (or map) of the input that is not NULL, calls add(state, j) for its elements j,
// where add = reader(child vector), made once per chunk.
template <class T, class R>
void ForEachElement(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states, R &&reader) {
  Budget *budget = BudgetOf(info);
  const idx_t rows = duckdb_data_chunk_get_size(input);
  duckdb_vector vector = duckdb_data_chunk_get_vector(input, 0);
  const auto *lists = static_cast<const duckdb_list_entry *>(duckdb_vector_get_data(vector));
  const uint64_t *validity = duckdb_vector_get_validity(vector);
  auto add = reader(duckdb_list_vector_get_child(vector));
  for (idx_t i = 0; i < rows; i++) {
    if (!IsValid(validity, i)) continue;
    T &state = Own<T>(states[i], budget);
    for (idx_t j = lists[i].offset; j < lists[i].offset + lists[i].length; j++) add(state, j);
    Account(state);
  }
}

void HllUnionUpdate(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  Guarded(info, [&] {
    ForEachElement<Hll>(info, input, states, [](duckdb_vector child) {
      const auto *entries = static_cast<const int32_t *>(duckdb_vector_get_data(child));
      const uint64_t *validity = duckdb_vector_get_validity(child);
      return [entries, validity](Hll &hll, idx_t j) {
        if (!IsValid(validity, j)) return;
        const int32_t entry = entries[j];
        // A sketch written by hand could hold anything: only entries distinct_sketch makes.
        if (entry <= 0 || entry >= static_cast<int32_t>(kRegisters * 64) || entry % 64 == 0)
          throw std::runtime_error("merge() takes sketches made by distinct_sketch(): " + std::to_string(entry) +
                                   " is not a register entry (register * 64 + rank, rank 1 to 63)");
        hll.Add(static_cast<uint32_t>(entry));
      };
    });
  });
}

// Appends a group's list to a LIST (or MAP) result at row `row`; `fill` writes `length` elements
// into the child vector from position `start`.
template <class F>
void AppendList(duckdb_vector result, idx_t row, idx_t length, F &&fill) {
  const idx_t start = duckdb_list_vector_get_size(result);
  duckdb_list_vector_reserve(result, start + length);
  fill(duckdb_list_vector_get_child(result), start);
  duckdb_list_vector_set_size(result, start + length);
  static_cast<duckdb_list_entry *>(duckdb_vector_get_data(result))[row] = {start, length};
}

void HllFinalize(duckdb_function_info info, duckdb_aggregate_state *states, duckdb_vector result, idx_t count,
                 idx_t offset) {
  Guarded(info, [&] {
    std::vector<int32_t> entries;
    for (idx_t i = 0; i < count; i++) {
      entries.clear();
      if (Hll *hll = Slot<Hll>(states[i])) {
        hll->Entries(entries);
        Account(*hll);
      }
      AppendList(result, offset + i, entries.size(), [&](duckdb_vector child, idx_t start) {
        if (!entries.empty())
          std::memcpy(static_cast<int32_t *>(duckdb_vector_get_data(child)) + start, entries.data(),
                      entries.size() * sizeof(int32_t));
      });
    }
  });
}

void BucketsUpdate(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  Guarded(info, [&] {
    ForEachElement<Buckets>(info, input, states, [](duckdb_vector pairs) {
      duckdb_vector countVector = duckdb_struct_vector_get_child(pairs, 1);
      const auto *keys = static_cast<const int32_t *>(duckdb_vector_get_data(duckdb_struct_vector_get_child(pairs, 0)));
      const auto *counts = static_cast<const uint64_t *>(duckdb_vector_get_data(countVector));
      const uint64_t *validity = duckdb_vector_get_validity(countVector);
      return [keys, counts, validity](Buckets &buckets, idx_t j) {
        if (IsValid(validity, j)) buckets.Add(keys[j], counts[j]);
      };
    });
  });
}

// The log bucket of a value, as __orrery_dd_key computes it: sketch-functions.ts's keyOffset and
// infiniteIndex; NaN with +infinity, as DuckDB orders it above all values. inverseLogGamma is
// that file's 1 / ln(gamma) as JavaScript computes it (registerSketchFunctions's argument): the
// macro's constant, which libm's log might miss by a bit.
int32_t DdKey(double x, double inverseLogGamma) {
  constexpr int32_t keyOffset = 40000, infiniteIndex = 40000;
  if (std::isnan(x)) return keyOffset + infiniteIndex;
  if (x == 0) return 0;
  const double index = std::ceil(std::log(std::fabs(x)) * inverseLogGamma);
  const int32_t bounded = index >= infiniteIndex ? infiniteIndex : static_cast<int32_t>(index);
  return x > 0 ? keyOffset + bounded : -keyOffset - bounded;
}

// __orrery_dd_build(x DOUBLE): the log buckets of the values that are not NULL.
void DdBuildUpdate(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  Guarded(info, [&] {
    const double inverseLogGamma =
        static_cast<const Parameters *>(duckdb_aggregate_function_get_extra_info(info))->inverseLogGamma;
    ForEachValue<Buckets, double>(info, input, states, [inverseLogGamma](Buckets &buckets, double x) {
      buckets.Add(DdKey(x, inverseLogGamma), 1);
    });
  });
}

void BucketsFinalize(duckdb_function_info info, duckdb_aggregate_state *states, duckdb_vector result, idx_t count,
                     idx_t offset) {
  Guarded(info, [&] {
    for (idx_t i = 0; i < count; i++) {
      Buckets *buckets = Slot<Buckets>(states[i]);
      if (buckets) buckets->Compact();
      const idx_t length = buckets ? buckets->entries.size() : 0;
      AppendList(result, offset + i, length, [&](duckdb_vector pairs, idx_t start) {
        auto *keys = static_cast<int32_t *>(duckdb_vector_get_data(duckdb_struct_vector_get_child(pairs, 0)));
        auto *counts = static_cast<uint64_t *>(duckdb_vector_get_data(duckdb_struct_vector_get_child(pairs, 1)));
        for (idx_t j = 0; j < length; j++) {
          keys[start + j] = buckets->entries[j].first;
          counts[start + j] = buckets->entries[j].second;
        }
      });
    }
  });
}

struct LogicalType {
  duckdb_logical_type type;
  explicit LogicalType(duckdb_logical_type t) : type(t) {}
  LogicalType(const LogicalType &) = delete;
  ~LogicalType() { duckdb_destroy_logical_type(&type); }
};

template <class T>
bool Register(duckdb_connection connection, const char *name, duckdb_logical_type argument,
              duckdb_logical_type returns, duckdb_aggregate_update_t update, duckdb_aggregate_finalize_t finalize,
              const Parameters &parameters) {
  duckdb_aggregate_function function = duckdb_create_aggregate_function();
  // Each function holds the budget: it outlives every state, which the database destroys first.
  duckdb_aggregate_function_set_extra_info(function, new Parameters(parameters),
                                           [](void *p) { delete static_cast<Parameters *>(p); });
  duckdb_aggregate_function_set_name(function, name);
  duckdb_aggregate_function_add_parameter(function, argument);
  duckdb_aggregate_function_set_return_type(function, returns);
  duckdb_aggregate_function_set_functions(function, StateSize<T>, Init<T>, update, Combine<T>, finalize);
  duckdb_aggregate_function_set_destructor(function, Destroy<T>);
  const bool done = duckdb_register_aggregate_function(connection, function) == DuckDBSuccess;
  duckdb_destroy_aggregate_function(&function);
  return done;
}

// registerSketchFunctions(connection, inverseLogGamma, memoryLimitBytes): registers the aggregates in the
// connection's database (its system catalog, so every connection and catalog sees them), their states bounded
// together by memoryLimitBytes. Throws when DuckDB refuses.
Napi::Value RegisterSketchFunctions(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsExternal() || !info[1].IsNumber() || !info[2].IsNumber())
    throw Napi::TypeError::New(env, "registerSketchFunctions(connection, inverseLogGamma, memoryLimitBytes)");
  // @duckdb/node-bindings holds a connection as an External over { duckdb_connection }.
  duckdb_connection connection = *static_cast<duckdb_connection *>(info[0].As<Napi::External<void>>().Data());
  LogicalType integer(duckdb_create_logical_type(DUCKDB_TYPE_INTEGER));
  LogicalType ubigint(duckdb_create_logical_type(DUCKDB_TYPE_UBIGINT));
  LogicalType real(duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE));
  LogicalType entries(duckdb_create_list_type(integer.type));
  LogicalType buckets(duckdb_create_map_type(integer.type, ubigint.type));
  Parameters parameters;
  parameters.inverseLogGamma = info[1].As<Napi::Number>().DoubleValue();
  parameters.budget = std::make_shared<Budget>();
  parameters.budget->limit = info[2].As<Napi::Number>().Int64Value();
  const bool done =
      Register<Hll>(connection, "__orrery_hll_build", ubigint.type, entries.type, HllBuildUpdate, HllFinalize,
                    parameters) &&
      Register<Hll>(connection, "__orrery_hll_union", entries.type, entries.type, HllUnionUpdate, HllFinalize,
                    parameters) &&
      Register<Buckets>(connection, "__orrery_dd_union", buckets.type, buckets.type, BucketsUpdate, BucketsFinalize,
                        parameters) &&
      Register<Buckets>(connection, "__orrery_dd_build", real.type, buckets.type, DdBuildUpdate, BucketsFinalize,
                        parameters);
  if (!done) throw Napi::Error::New(env, "DuckDB refused to register the native sketch aggregates");
  return env.Undefined();
}

}  // namespace

void DefineSketchAggregates(Napi::Env env, Napi::Object exports) {
  exports.Set("registerSketchFunctions", Napi::Function::New(env, RegisterSketchFunctions));
}
