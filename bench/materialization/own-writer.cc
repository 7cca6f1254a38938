// A Parquet writer of our own against DuckDB's (issue 16): can a writer fed with decoded columns write log_entries'
// partition for less than DuckDB 1.5.5's COPY does (0.93-0.96 CPU-s per 1 M rows from a table, floor.sh), so that
// decode + write fit 3 M rows/s on 2 cores (0.67 CPU-s per 1 M rows)? The first, cheap test of README.md's lead:
// the same rows, columns, types, compression (zstd at DuckDB's default level, 3) and row groups (131,072 rows),
// written from memory by both, alternately in this one process on one thread, each measured in process CPU.
//
// The rows: a file DuckDB wrote with the materializer's statement (variants.mjs --keep). They are loaded, before any
// measurement, into what a decoder would fill (per column: values, or offsets into one byte arena, and validity;
// the process's block fields as an index into their few values, as the decoder's ENUMs are), and into a DuckDB
// table with the same types as floor.sh's write from a table (those six columns as ENUMs). The writer here, per row
// group and column: a dictionary (an open-addressing hash table that grows with the values, the row before's value
// taken without a hash), kept when smaller than PLAIN and given up on past a third of the rows (or, "own sampled",
// when the first 16,384 values are nearly all distinct); RLE/bit-packed definition levels and indexes; one data page
// per chunk (up to 64 MiB) compressed with libduckdb's own zstd; min/max/null-count statistics; a split-block bloom
// filter (XXH64) of each dictionary that is not an ENUM's, as DuckDB writes; the Thrift-compact footer. Not built:
// field ids and the partition's registration (the integration's part), nor the decoder feeding it (the rows are
// loaded before the measurement). OWN_PHASES=1 prints where the writer's CPU goes; OWN_WRITER=NAME runs one writer.
//
// After the rounds (with --check), DuckDB reads the files back and compares each own file with its own: the rows in
// order (a hash of every column and the row's place; rows in one file only, either way), the schema, the bloom
// filters (no row group holding a probed value excluded; a value in none excluded from every row group), and prints
// each column's encodings and MB. own-writer.sh builds and runs this beside the materializer's statement.
//
//   own-writer <duckdb-written.parquet> <work dir> [rounds] [--check]

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../../src/engine/native/duckdb-c-api.h"

#include "../../src/engine/native/parquet-writer.h"

extern "C" {
typedef struct _duckdb_database {
  void *internal_ptr;
} * duckdb_database;
duckdb_state duckdb_open(const char *path, duckdb_database *out);
void duckdb_close(duckdb_database *database);
duckdb_state duckdb_connect(duckdb_database database, duckdb_connection *out);
void duckdb_disconnect(duckdb_connection *connection);
const char *duckdb_result_error(duckdb_result *result);
}


namespace {

struct DuckDB {
  duckdb_database db = nullptr;
  duckdb_connection con = nullptr;
  DuckDB() {
    if (duckdb_open(nullptr, &db) != DuckDBSuccess || duckdb_connect(db, &con) != DuckDBSuccess)
      throw std::runtime_error("duckdb_open failed");
  }
  ~DuckDB() {
    duckdb_disconnect(&con);
    duckdb_close(&db);
  }
  // Runs sql; each chunk of its result to `each` (if given).
  template <typename Each>
  void Query(const std::string &sql, Each each) {
    duckdb_result result;
    if (duckdb_query(con, sql.c_str(), &result) != DuckDBSuccess) {
      std::string error = duckdb_result_error(&result);
      duckdb_destroy_result(&result);
      throw std::runtime_error(error + "\n  in: " + sql);
    }
    for (duckdb_data_chunk chunk; (chunk = duckdb_fetch_chunk(result)) != nullptr;) {
      each(chunk);
      duckdb_destroy_data_chunk(&chunk);
    }
    duckdb_destroy_result(&result);
  }
  void Run(const std::string &sql) {
    Query(sql, [](duckdb_data_chunk) {});
  }
  // The first column of the result's rows, as text (the query casts).
  std::vector<std::string> Strings(const std::string &sql) {
    std::vector<std::string> out;
    Query(sql, [&out](duckdb_data_chunk chunk) {
      duckdb_vector v = duckdb_data_chunk_get_vector(chunk, 0);
      auto *s = static_cast<duckdb_string_t *>(duckdb_vector_get_data(v));
      uint64_t *valid = duckdb_vector_get_validity(v);
      for (idx_t i = 0; i < duckdb_data_chunk_get_size(chunk); ++i) {
        if (valid && !(valid[i / 64] >> (i % 64) & 1)) out.emplace_back("NULL");
        else
          out.emplace_back(s[i].value.inlined.length <= 12 ? s[i].value.inlined.inlined : s[i].value.pointer.ptr,
                           s[i].value.inlined.length);
      }
    });
    return out;
  }
};

std::string Quote(const std::string &s) { return "'" + s + "'"; }

std::vector<Column> Load(DuckDB &duck, const std::string &file) {
  std::vector<Column> columns = EmptyColumns();
  std::string select;
  // Timestamps as their nanoseconds.
  for (const Spec &s : kColumns)
    select += (select.empty() ? "" : ", ") + (s.kind == Kind::kInt64 ? "epoch_ns(" + std::string(s.name) + ")" : std::string(s.name));
  std::vector<std::vector<std::pair<std::string, uint8_t>>> enum_values(columns.size());
  duck.Query("SELECT " + select + " FROM read_parquet(" + Quote(file) + ")", [&](duckdb_data_chunk chunk) {
    const idx_t n = duckdb_data_chunk_get_size(chunk);
    for (size_t ci = 0; ci < columns.size(); ++ci) {
      Column &c = columns[ci];
      duckdb_vector v = duckdb_data_chunk_get_vector(chunk, ci);
      uint64_t *valid = duckdb_vector_get_validity(v);
      void *data = duckdb_vector_get_data(v);
      for (idx_t i = 0; i < n; ++i) {
        const bool ok = !valid || (valid[i / 64] >> (i % 64) & 1);
        c.valid.push_back(ok);
        if (c.kind == Kind::kInt64) c.ints.push_back(ok ? static_cast<int64_t *>(data)[i] : 0);
        else if (c.kind == Kind::kInt32) c.ints.push_back(ok ? static_cast<int32_t *>(data)[i] : 0);
        else {
          const duckdb_string_t &s = static_cast<duckdb_string_t *>(data)[i];
          std::string_view text;
          if (ok) text = std::string_view(s.value.inlined.length <= 12 ? s.value.inlined.inlined : s.value.pointer.ptr,
                                          s.value.inlined.length);
          if (c.kind == Kind::kString) {
            c.bytes.append(text);
            c.offsets.push_back(static_cast<uint32_t>(c.bytes.size()));
          } else {
            auto it = std::find(c.values.begin(), c.values.end(), text);
            if (ok && it == c.values.end()) c.values.emplace_back(text), it = c.values.end() - 1;
            c.index.push_back(ok ? static_cast<uint32_t>(it - c.values.begin()) : 0);
          }
        }
      }
    }
  });
  return columns;
}

// A file's rows in order: their count and a sum of hashes of every column with the row's place.
std::string Digest(DuckDB &duck, const std::string &file) {
  std::string all;
  for (const Spec &s : kColumns) all += std::string(all.empty() ? "" : ", ") + s.name;
  return duck.Strings("SELECT count(*)::VARCHAR || ' ' || sum(hash(file_row_number, " + all +
                      ")::HUGEINT)::VARCHAR FROM read_parquet(" + Quote(file) + ", file_row_number = true)")[0];
}

// A file's columns and the types DuckDB reads them as.
std::string Schema(DuckDB &duck, const std::string &file) {
  return duck.Strings("SELECT string_agg(column_name || ' ' || column_type, ', ') FROM (DESCRIBE SELECT * FROM read_parquet(" +
                      Quote(file) + "))")[0];
}

// How many rows are in one file and not the other, either way (a check independent of the hash).
std::string RowsInOneOnly(DuckDB &duck, const std::string &a, const std::string &b) {
  const std::string r = "read_parquet(" + Quote(a) + ")", q = "read_parquet(" + Quote(b) + ")";
  return duck.Strings("SELECT count(*)::VARCHAR FROM ((SELECT * FROM " + q + " EXCEPT ALL SELECT * FROM " + r +
                      ") UNION ALL (SELECT * FROM " + r + " EXCEPT ALL SELECT * FROM " + q + "))")[0];
}

// How many of a file's row groups that hold `value` in `column` its bloom filters exclude (0 when they are right).
long WronglyExcluded(DuckDB &duck, const std::string &file, const std::string &column, const std::string &value,
                     size_t row_group) {
  std::string literal = value;
  for (size_t at = 0; (at = literal.find('\'', at)) != std::string::npos; at += 2) literal.insert(at, "'");
  return std::stol(duck.Strings("SELECT count(*)::VARCHAR FROM parquet_bloom_probe(" + Quote(file) + ", '" + column +
                                "', '" + literal + "') WHERE bloom_filter_excludes AND row_group_id IN (SELECT DISTINCT " +
                                "file_row_number // " + std::to_string(row_group) + " FROM read_parquet(" + Quote(file) +
                                ", file_row_number = true) WHERE " + column + " = '" + literal + "')")[0]);
}

double ProcessCpu() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double Load1() {
  double l = 0;
  if (FILE *f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = 0;
    std::fclose(f);
  }
  return l;
}

long FileSize(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) return -1;
  std::fseek(f, 0, SEEK_END);
  const long n = std::ftell(f);
  std::fclose(f);
  return n;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "own-writer <duckdb-written.parquet> <work dir> [rounds] [--check]\n");
    return 2;
  }
  const std::string input = argv[1], dir = argv[2];
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
  constexpr size_t kRowGroup = 131072;
  try {
    DuckDB duck;
    duck.Run("SET threads = 1");  // the maintenance engine's one thread on 2 cores (floor.sh's write from a table)
    std::vector<Column> columns = Load(duck, input);
    const size_t rows = columns[0].valid.size();
    // DuckDB's input: the same rows in a table, the process's block fields as ENUMs (floor.sh's --from-table).
    std::string casts;
    for (const Spec &s : kColumns) {
      if (s.kind != Kind::kEnum) continue;
      duck.Run(std::string("CREATE TYPE e_") + s.name + " AS ENUM (SELECT DISTINCT " + s.name + " FROM read_parquet(" +
               Quote(input) + ") WHERE " + s.name + " IS NOT NULL)");
      casts += (casts.empty() ? "" : ", ") + std::string(s.name) + "::e_" + s.name + " AS " + s.name;
    }
    duck.Run("CREATE TABLE rows AS SELECT * REPLACE (" + casts + ") FROM read_parquet(" + Quote(input) + ")");
    const std::string duck_out = dir + "/duckdb.parquet", own_out = dir + "/own.parquet",
                      sampled_out = dir + "/own-sampled.parquet";
    std::printf("{\"rows\": %zu, \"row_group\": %zu}\n", rows, kRowGroup);
    for (int round = 1; round <= rounds; ++round) {
      for (const std::string side : {"duckdb", "own", "own sampled"}) {
        // OWN_WRITER=NAME: that writer alone (a profile of it: perf record -g -- own-writer ...).
        if (std::getenv("OWN_WRITER") && side != std::getenv("OWN_WRITER")) continue;
        const std::string &out = side == "duckdb" ? duck_out : side == "own" ? own_out : sampled_out;
        const double load = Load1();
        std::fill(std::begin(phase_seconds), std::end(phase_seconds), 0.0);
        const double cpu0 = ProcessCpu();
        const auto t0 = std::chrono::steady_clock::now();
        if (side == "duckdb") {
          duck.Run("COPY rows TO " + Quote(out) + " (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE " +
                   std::to_string(kRowGroup) + ")");
        } else {
          FILE *f = std::fopen(out.c_str(), "wb");
          if (!f) throw std::runtime_error("cannot open " + out);
          Writer w(columns, f, side == "own sampled", "orrery own-writer bench");
          for (size_t begin = 0; begin < rows; begin += kRowGroup) w.RowGroup(begin, std::min(rows, begin + kRowGroup));
          w.Finish();
          std::fclose(f);
        }
        const double cpu = ProcessCpu() - cpu0;
        if (std::getenv("OWN_PHASES") && side != "duckdb") {
          std::string phases;
          double timed = 0;
          for (int p = 0; p < kPhases; ++p) {
            phases += "\"" + std::string(kPhaseNames[p]) + "\": " + std::to_string(phase_seconds[p] / rows * 1e6) + ", ";
            timed += phase_seconds[p];
          }
          std::printf("{\"phases_cpu_s_per_1m_rows\": {%s\"the rest (PLAIN values, statistics, enums, file)\": %f}}\n", phases.c_str(),
                      (cpu - timed) / rows * 1e6);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("{\"round\": %d, \"writer\": \"%s\", \"cpu_s_per_1m_rows\": %.3f, \"seconds\": %.3f, \"file_bytes\": %ld, \"load_1m\": %.2f}\n",
                    round, side.c_str(), cpu / static_cast<double>(rows) * 1e6, seconds, FileSize(out), load);
        std::fflush(stdout);
      }
    }
    if (argc < 5 || std::strcmp(argv[4], "--check") != 0) return 0;
    // The checks, of each own file against DuckDB's: the same rows in the same order, the same schema, bloom filters
    // that exclude no row group holding a value and most of them for a value in none.
    auto one = [&](const std::string &sql) { return duck.Strings(sql)[0]; };
    auto digest = [&](const std::string &file) { return Digest(duck, file); };
    auto schema = [&](const std::string &file) { return Schema(duck, file); };
    auto encodings = [&](const std::string &file) {
      return one(
          "SELECT string_agg(path_in_schema || '=' || encodings || ' ' || round(bytes / 1e6, 2)::VARCHAR, '; ' ORDER BY column_id) FROM "
          "(SELECT column_id, path_in_schema, any_value(encodings) AS encodings, sum(total_compressed_size) AS bytes FROM parquet_metadata(" +
          Quote(file) + ") GROUP BY ALL)");
    };
    const std::string d = digest(duck_out), ds = schema(duck_out);
    std::printf("{\"check\": \"duckdb\", \"digest\": \"%s\", \"input_digest\": \"%s\", \"columns\": \"%s\"}\n", d.c_str(),
                digest(input).c_str(), encodings(duck_out).c_str());
    for (const std::string &file : {own_out, sampled_out}) {
      // Rows of one file missing from the other, either way (a check independent of the hash).
      const std::string r = "read_parquet(" + Quote(file) + ")";
      const std::string diff = RowsInOneOnly(duck, file, duck_out);
      // Bloom filters: 40 values of each filtered text column, each probed against the row groups that hold it; and
      // one value in none, against all of them.
      long wrong = 0, probes = 0, absent_excluded = 0, groups = 0;
      for (const char *column : {"block_id", "target", "properties", "trace_id", "span_id", "process_properties"}) {
        const std::string c = column;
        for (const std::string &v : duck.Strings("SELECT DISTINCT " + c + " FROM " + r + " WHERE " + c +
                                                 " IS NOT NULL ORDER BY hash(" + c + ") LIMIT 40")) {
          ++probes;
          wrong += WronglyExcluded(duck, file, c, v, kRowGroup);
        }
        groups += std::stol(one("SELECT count(*)::VARCHAR FROM parquet_bloom_probe(" + Quote(file) + ", '" + c + "', '\"no such value\"')"));
        absent_excluded += std::stol(one("SELECT count(*)::VARCHAR FROM parquet_bloom_probe(" + Quote(file) + ", '" + c +
                                         "', '\"no such value\"') WHERE bloom_filter_excludes"));
      }
      const std::string o = digest(file), os = schema(file);
      std::printf(
          "{\"check\": \"%s\", \"rows_equal\": %s, \"digest\": \"%s\", \"rows_in_one_only\": %s, \"schema_equal\": %s, "
          "\"bloom_values_probed\": %ld, \"bloom_wrongly_excluded\": %ld, \"bloom_absent_excluded\": \"%ld of %ld\", \"columns\": \"%s\"}\n",
          file.c_str(), o == d ? "true" : "false", o.c_str(), diff.c_str(), os == ds ? "true" : "false", probes, wrong,
          absent_excluded, groups, encodings(file).c_str());
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "own-writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
