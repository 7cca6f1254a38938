// The whole materialization path with the Parquet writer of our own (issue 16; since s26 the addon's WriteOrdered, which the
// materializer runs, in the variants below): the stored payloads decoded straight
// into the writer's column buffers, in time order, and written to a Parquet file on disk, with no DuckDB vector,
// JSON or Arrow copy between them. direct-writer.sh runs it beside the materializer's statement (variants.mjs
// 'ordered enums', one DuckDB thread) on the same payloads and compares CPU per 1 M rows and the files' rows.
//
// The path, measured in process CPU (every thread): the addon's own code for the read (otlp-logs-table.cc, included
// below, not copied: the validating scan, the decoder into its Rows, DecodeAhead's second thread, the merge's heap
// order and SinkTop), the block fields given as the ordered read's bind holds them (the process's six as indexes into
// their values, as its ENUMs), each merged row appended to own-writer.cc's Columns (strings copied into one arena per
// column), and every 131,072 rows that row group written by own-writer.cc's Writer (sampled dictionaries: the one
// README.md builds on), then the footer. The decoded payloads are freed as their last row is out, as in the read.
//
//   direct-writer <work dir> <statement.parquet> [--check] [--block-indexes] [--in-place] [--checksum] [--reuse]
//                 [--zstd-level N]
//
// The work dir holds what variants.mjs --prepare writes (contents.otlp, sizes.json) and --dump-blocks DIR/blocks
// (blocks.first-times, blocks.parquet). Prints one JSON line; with --check, DuckDB reads the file back and compares it
// with the statement's (rows in order, rows in one file only, schema). DIRECT_SAMPLE=0: unsampled dictionaries.
// --block-indexes: block_id and process_properties, the same text in every row of a payload, go to the writer as
// indexes into their payloads' values (its ENUM path, with a bloom filter as DuckDB writes for a VARCHAR), as the six
// process fields do, rather than copied into the column and hashed for the dictionary per row.
// The cuts measured in s25 (README.md): --in-place, the records' strings go to the writer as views into the held
// payloads' text (each payload held until its row group is written, as the read's PointString holds them until a
// chunk is through) rather than copied into the column's arena; --checksum, each payload's content checked against
// the checksum ingestion would have written once its scan passed (XXH64, the hash of zstd's frame checksum) instead
// of running the validating scan again; --reuse, the allocator keeps the memory of the payloads freed for the next
// ones (no fresh pages to fault in per payload); --zstd-level N, the writer's zstd level (3: DuckDB's default).

#include <malloc.h>

#include <fstream>
#include <numeric>
#include <sstream>
#include <unordered_map>

// --checksum: the read's validating scan (ScanLogsBody, called by DecodePayload) replaced by ScanOrVerify, which
// without --checksum is the scan itself.
#define NAPI_VERSION 8
#include "../../src/engine/native/logs-scan.h"
bool ScanOrVerify(const uint8_t *body, size_t size, std::vector<double> &out);
#define ScanLogsBody ScanOrVerify
#include "../../src/engine/native/otlp-logs-table.cc"
#undef ScanLogsBody
#define main OwnWriterMain
#include "own-writer.cc"
#undef main

// What ingestion would have written beside each payload once its scan passed (computed here before the measurement,
// by the scan itself): the XXH64 of its content, mapped to its record count (which the scan counts, and a block
// holds). Keyed by the hash itself: a bench stand-in that catches a payload changed at rest but not one payload's
// bytes read for another's (see README.md: the integration checks each payload's own, a zstd frame's checksum).
namespace {
bool verify_checksums = false;
std::unordered_map<uint64_t, double> checksums;
}  // namespace

bool ScanOrVerify(const uint8_t *body, size_t size, std::vector<double> &out) {
  if (!verify_checksums) return ScanLogsBody(body, size, out);
  const auto found = checksums.find(Xxh64(body, size));
  if (found == checksums.end()) return false;
  // DecodePayload sizes its Rows by the 7th number per ResourceLogs: the records, as one ResourceLogs here.
  out.assign(11, 0);
  out[6] = found->second;
  return true;
}

namespace {

// The ordered read's bind, as OrderedBindFunction makes it from the same inputs, the six process fields as ENUMs.
OrderedBind MakeBind(DuckDB &duck, const std::string &dir) {
  OrderedBind bind;
  bind.file = dir + "/contents.otlp";
  std::ifstream sizes_file(dir + "/sizes.json");
  std::stringstream sizes_text;
  sizes_text << sizes_file.rdbuf();
  std::string sizes = sizes_text.str();
  std::replace_if(sizes.begin(), sizes.end(), [](char c) { return c == '[' || c == ']' || c == ','; }, ' ');
  std::istringstream each(sizes);
  bind.offsets.assign(1, 0);
  for (uint64_t size; each >> size;) bind.offsets.push_back(bind.offsets.back() + size);
  std::ifstream first_times(dir + "/blocks.first-times");
  for (int64_t t; first_times >> t;) bind.mins.push_back(t);
  const std::string blocks = Quote(dir + "/blocks.parquet");
  if (duck.Strings("SELECT count(*) FILTER (field IS NULL)::VARCHAR FROM read_parquet(" + blocks + ")")[0] != "0")
    throw std::runtime_error("a block field is null: not handled here");
  bind.blocks = duck.Strings("SELECT field FROM read_parquet(" + blocks + ") ORDER BY place");
  const size_t payloads = bind.offsets.size() - 1;
  if (bind.mins.size() != payloads || bind.blocks.size() != payloads * kBlockFieldCount)
    throw std::runtime_error("the first times and block fields do not match the payloads");
  bind.nulls.assign(bind.blocks.size(), false);
  std::vector<std::unordered_map<std::string, uint32_t>> numbers(kBlockFieldCount);
  for (size_t at = 0; at < bind.blocks.size(); at++) {
    auto &seen = numbers[at % kBlockFieldCount];
    bind.values.push_back(seen.emplace(bind.blocks[at], static_cast<uint32_t>(seen.size())).first->second);
  }
  for (size_t p = 0; p < payloads; p++) bind.insert_times.push_back(std::stoll(bind.blocks[p * kBlockFieldCount + kInsertTime]));
  for (size_t f = 0; f < kBlockFieldCount; f++)
    bind.enum_index[f] = f != kInsertTime && f != kProcessProperties && f != kBlockId && numbers[f].size() <= kEnumMembers;
  return bind;
}

double ThreadSeconds(double from) { return ThreadCpu() - from; }

// The variants of the direct path (the flags of the command line).
struct Options {
  bool sample = true;
  bool block_indexes = false;  // --block-indexes
  bool in_place = false;       // --in-place: the records' strings read from the held payloads, not copied
  bool checksum = false;       // --checksum: each payload's checksum verified instead of the validating scan
  bool reuse = false;          // --reuse: freed payloads' memory kept by the allocator for the next ones
  int zstd_level = 3;          // --zstd-level N
  std::string Name() const {
    return std::string("direct") + (block_indexes ? ", block indexes" : "") + (in_place ? ", in place" : "") +
           (checksum ? ", checksum" : "") + (reuse ? ", reuse" : "") +
           (zstd_level != 3 ? ", zstd " + std::to_string(zstd_level) : "");
  }
};

long MinorFaults() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

// --checksum's set-up, before the measurement: each payload's checksum and record count (see ScanOrVerify).
void WriteChecksums(const OrderedBind &bind) {
  const int fd = open(bind.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + bind.file);
  Workspace work;
  for (size_t p = 0; p + 1 < bind.offsets.size(); p++) {
    ReadSlice(fd, bind.offsets[p], bind.offsets[p + 1], work.payload);
    const auto [content, size] =
        Content(reinterpret_cast<const uint8_t *>(work.payload.data()), work.payload.size(), work.content, 0, true);
    work.scanned.clear();
    if (!ScanLogsBody(content, size, work.scanned)) throw std::runtime_error("a payload does not pass the scan");
    double records = 0;
    for (size_t i = 6; i < work.scanned.size(); i += 11) records += work.scanned[i];
    checksums.emplace(Xxh64(content, size), records);
  }
  close(fd);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "direct-writer <work dir> <statement.parquet> [--check] [--block-indexes] [--in-place] [--checksum] "
                 "[--reuse] [--zstd-level N]\n");
    return 2;
  }
  const std::string dir = argv[1], statement = argv[2], out = dir + "/direct.parquet";
  Options options;
  bool check = false;
  for (int a = 3; a < argc; a++) {
    const std::string flag = argv[a];
    if (flag == "--check") check = true;
    else if (flag == "--block-indexes") options.block_indexes = true;
    else if (flag == "--in-place") options.in_place = true;
    else if (flag == "--checksum") options.checksum = true;
    else if (flag == "--reuse") options.reuse = true;
    else if (flag == "--zstd-level" && a + 1 < argc) options.zstd_level = std::atoi(argv[++a]);
    else {
      std::fprintf(stderr, "direct-writer: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  options.sample = !std::getenv("DIRECT_SAMPLE") || std::strcmp(std::getenv("DIRECT_SAMPLE"), "0") != 0;
  try {
    DuckDB duck;
    const OrderedBind bind = MakeBind(duck, dir);
    if (options.checksum) WriteChecksums(bind), verify_checksums = true;
    zstd_level = options.zstd_level;
    // --reuse: the allocator keeps what a payload's Rows freed (no mmap per large buffer, no trim), so the next
    // payload's decode writes to pages already mapped rather than fresh ones the kernel zeroes on first touch.
    if (options.reuse && (!mallopt(M_MMAP_THRESHOLD, 32 << 20) || !mallopt(M_TRIM_THRESHOLD, 1 << 30)))
      throw std::runtime_error("mallopt refused");
    const double load = Load1();
    std::fill(std::begin(phase_seconds), std::end(phase_seconds), 0.0);
    const double cpu0 = ProcessCpu(), thread0 = ThreadCpu();
    const long faults0 = MinorFaults();
    const auto t0 = std::chrono::steady_clock::now();
    // The addon's writer (otlp-logs-table.cc's WriteOrdered, the materializer's), in this variant.
    const Direct result = WriteOrdered(bind, out, "orrery direct-writer bench",
                                       DirectOptions{options.sample, options.block_indexes, options.in_place});
    const double cpu = ProcessCpu() - cpu0, thread = ThreadSeconds(thread0);
    const long faults = MinorFaults() - faults0;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double per = 1e6 / static_cast<double>(result.rows);
    // The writer's phases (own-writer.cc's Timed) and the rest of this thread (merge, appends, the payloads it
    // decoded itself); the decoding thread is the process's CPU less this thread's.
    std::string phases;
    double timed = 0;
    for (int p = 0; p < kPhases; ++p) {
      phases += ", \"" + std::string(kPhaseNames[p]) + "\": " + std::to_string(phase_seconds[p] * per);
      timed += phase_seconds[p];
    }
    std::printf(
        "{\"path\": \"%s\", \"rows\": %zu, \"cpu_s_per_1m_rows\": %.3f, \"seconds\": %.3f, \"file_bytes\": %ld, "
        "\"load_1m\": %.2f, \"sampled\": %s, \"zstd_level\": %d, \"minor_faults\": %ld, \"split_cpu_s_per_1m_rows\": {\"main thread\": %.3f, \"other threads "
        "(decoding ahead)\": %.3f, \"writer\": %.3f, \"merge, appends and decodes on the main thread\": %.3f%s, "
        "\"writer's rest (PLAIN values, statistics, enums, file)\": %.3f}}\n",
        options.Name().c_str(), result.rows, cpu * per, seconds, FileSize(out), load, options.sample ? "true" : "false",
        options.zstd_level, faults, thread * per,
        (cpu - thread) * per, result.write_cpu * per, (thread - result.write_cpu) * per, phases.c_str(),
        (result.write_cpu - timed) * per);
    std::fflush(stdout);
    if (check) {
      const std::string d = Digest(duck, out), s = Digest(duck, statement);
      // The bloom filters of the two columns written through indexes: no row group holding a probed value excluded.
      long probes = 0, wrong = 0;
      for (const char *column : {"block_id", "process_properties"})
        for (const std::string &v : duck.Strings(std::string("SELECT DISTINCT ") + column + " FROM read_parquet(" +
                                                 Quote(out) + ") ORDER BY hash(" + column + ") LIMIT 20"))
          ++probes, wrong += WronglyExcluded(duck, out, column, v, 131072);
      // The footers' statistics, row group by row group and column (what pruning and the materializer read): the
      // chunks whose min, max or null count differ from the statement's; and the partition's event-time bounds as
      // the materializer reads them (Materializer.write: stats_min/stats_max of time).
      const std::string stats_differ = duck.Strings(
          "SELECT count(*)::VARCHAR FROM (SELECT row_group_id, path_in_schema, stats_min, stats_max, stats_min_value, "
          "stats_max_value, stats_null_count FROM parquet_metadata(" + Quote(out) + ") EXCEPT ALL SELECT row_group_id, "
          "path_in_schema, stats_min, stats_max, stats_min_value, stats_max_value, stats_null_count FROM "
          "parquet_metadata(" + Quote(statement) + "))")[0];
      auto bounds = [&duck](const std::string &file) {
        return duck.Strings(
            "SELECT epoch_ns(min(TRY_CAST(stats_min AS TIMESTAMP_NS)))::VARCHAR || ' ' || "
            "epoch_ns(max(TRY_CAST(stats_max AS TIMESTAMP_NS)))::VARCHAR FROM parquet_metadata(" + Quote(file) +
            ") WHERE path_in_schema = 'time'")[0];
      };
      const std::string direct_bounds = bounds(out), statement_bounds = bounds(statement);
      std::printf(
          "{\"check\": \"%s against the statement\", \"rows_equal\": %s, \"digest\": \"%s\", \"statement_digest\": "
          "\"%s\", \"rows_in_one_only\": %s, \"schema_equal\": %s, \"bloom_values_probed\": %ld, "
          "\"bloom_wrongly_excluded\": %ld, \"statistics_chunks_differing\": %s, \"event_time_bounds_equal\": %s, "
          "\"event_time_bounds\": \"%s\", \"schema\": \"%s\"}\n",
          options.Name().c_str(), d == s ? "true" : "false", d.c_str(), s.c_str(), RowsInOneOnly(duck, out, statement).c_str(),
          Schema(duck, out) == Schema(duck, statement) ? "true" : "false", probes, wrong, stats_differ.c_str(),
          direct_bounds == statement_bounds ? "true" : "false", direct_bounds.c_str(), Schema(duck, out).c_str());
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "direct-writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
