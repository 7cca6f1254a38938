// The whole materialization path with the Parquet writer of our own (issue 16): the stored payloads decoded straight
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
//   direct-writer <work dir> <statement.parquet> [--check] [--block-indexes]
//
// The work dir holds what variants.mjs --prepare writes (contents.otlp, sizes.json) and --dump-blocks DIR/blocks
// (blocks.first-times, blocks.parquet). Prints one JSON line; with --check, DuckDB reads the file back and compares it
// with the statement's (rows in order, rows in one file only, schema). DIRECT_SAMPLE=0: unsampled dictionaries.
// --block-indexes: block_id and process_properties, the same text in every row of a payload, go to the writer as
// indexes into their payloads' values (its ENUM path, with a bloom filter as DuckDB writes for a VARCHAR), as the six
// process fields do, rather than copied into the column and hashed for the dictionary per row.

#include <fstream>
#include <numeric>
#include <sstream>

#include "../../src/engine/native/otlp-logs-table.cc"
#define main OwnWriterMain
#include "own-writer.cc"
#undef main

namespace {

constexpr size_t kBlockId = 2;  // in kBlockFields

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

// Where each of log_entries' columns (kColumns, in order) comes from: a block field (its index in kBlockFields), or
// the record's column (kRecord + its place: time, target, level, msg, properties, trace_id, span_id).
constexpr int kRecord = 100;
constexpr int kSource[] = {0, 1, 2, 3, 4, 5, 6, kRecord + 0, kRecord + 1, kRecord + 2, kRecord + 3, kRecord + 4,
                           kRecord + 5, kRecord + 6, 7, 8};

void AppendString(Column &c, const char *p, size_t n, bool valid) {
  c.valid.push_back(valid);
  if (valid) c.bytes.append(p, n);
  c.offsets.push_back(static_cast<uint32_t>(c.bytes.size()));
}

void Clear(std::vector<Column> &columns) {
  for (Column &c : columns) {
    c.valid.clear();
    c.ints.clear();
    c.index.clear();
    c.bytes.clear();
    if (c.kind == Kind::kString) c.offsets.assign(1, 0);
  }
}

double ThreadSeconds(double from) { return ThreadCpu() - from; }

struct Result {
  size_t rows = 0;
  double write_cpu = 0;  // the Writer's calls, on this thread
};

// Payloads to a Parquet file: the merge of OrderedFunction, into Columns instead of DuckDB vectors.
Result Materialize(const OrderedBind &bind, const std::string &out, bool sample, bool block_indexes) {
  constexpr size_t kRowGroup = 131072;
  std::vector<Column> columns = EmptyColumns();
  for (size_t c = 0; c < columns.size(); c++) {
    const size_t f = static_cast<size_t>(kSource[c]);
    // block_id and process_properties as indexes into their payloads' values too: neither copied nor hashed per row.
    if (block_indexes && (f == kBlockId || f == kProcessProperties)) columns[c].kind = Kind::kEnum, columns[c].bloom = true;
    if (columns[c].kind != Kind::kEnum) continue;
    if (!bind.enum_index[f] && !columns[c].bloom)
      throw std::runtime_error(std::string(kBlockFields[f]) + " has too many values for an ENUM");
    for (size_t p = 0; p * kBlockFieldCount < bind.blocks.size(); p++) {
      const uint32_t v = bind.values[p * kBlockFieldCount + f];
      if (v == columns[c].values.size()) columns[c].values.push_back(bind.blocks[p * kBlockFieldCount + f]);
    }
  }
  const size_t payloads = bind.mins.size();
  std::vector<size_t> sequence(payloads);
  std::iota(sequence.begin(), sequence.end(), 0);
  std::stable_sort(sequence.begin(), sequence.end(), [&](size_t a, size_t b) { return bind.mins[a] < bind.mins[b]; });
  const int fd = open(bind.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + bind.file);
  FILE *file = std::fopen(out.c_str(), "wb");
  if (!file) throw std::runtime_error("cannot open " + out);
  Result result;
  {
    DecodeAhead ahead(bind, fd, sequence);
    std::vector<std::unique_ptr<Held>> heap;
    size_t decoded = 0, n = 0;
    Writer writer(columns, file, sample);
    auto write = [&] {
      const double t0 = ThreadCpu();
      writer.RowGroup(0, n);
      result.write_cpu += ThreadSeconds(t0);
      result.rows += n;
      n = 0;
      Clear(columns);
    };
    for (;;) {
      // HoldNext: every payload whose first time is not after the earliest held row is held before that row.
      while (decoded < payloads && (heap.empty() || bind.mins[sequence[decoded]] <= heap.front()->Time())) {
        decoded++;
        Decoded next = ahead.Next();
        if (!next.held) throw std::runtime_error(next.error);
        if (next.held->rows.time.empty()) continue;
        if (next.held->Time() < bind.mins[next.held->payload]) throw std::runtime_error("a time before the first time given");
        heap.push_back(std::move(next.held));
        std::push_heap(heap.begin(), heap.end(), Later);
      }
      if (heap.empty()) break;
      Held &held = *heap.front();
      const uint32_t r = held.order[held.next++];
      const Rows &rows = held.rows;
      const size_t at = held.payload * kBlockFieldCount;
      const std::vector<Span> *spans[7] = {nullptr, &rows.target, nullptr, &rows.msg, &rows.properties, &rows.trace_id,
                                           &rows.span_id};
      for (size_t c = 0; c < columns.size(); c++) {
        Column &column = columns[c];
        const int source = kSource[c];
        if (source == kRecord + 0) column.valid.push_back(1), column.ints.push_back(rows.time[r]);
        else if (source == kRecord + 2) column.valid.push_back(1), column.ints.push_back(rows.level[r]);
        else if (source >= kRecord) {
          const Span span = (*spans[source - kRecord])[r];
          AppendString(column, rows.arena.data() + span.offset, span.length, span.offset != kNull);
        } else if (source == static_cast<int>(kInsertTime)) {
          column.valid.push_back(1), column.ints.push_back(bind.insert_times[held.payload]);
        } else if (column.kind == Kind::kEnum) {
          column.valid.push_back(1), column.index.push_back(bind.values[at + source]);
        } else {
          const std::string &text = bind.blocks[at + source];
          AppendString(column, text.data(), text.size(), true);
        }
      }
      if (held.next == held.order.size()) {
        // Its last row is out, its text copied: freed at once.
        std::swap(heap.front(), heap.back());
        heap.pop_back();
      }
      SinkTop(heap);
      if (++n == kRowGroup) write();
    }
    if (n > 0) write();
    const double t0 = ThreadCpu();
    writer.Finish();
    result.write_cpu += ThreadSeconds(t0);
  }
  std::fclose(file);
  close(fd);
  return result;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "direct-writer <work dir> <statement.parquet> [--check] [--block-indexes]\n");
    return 2;
  }
  const std::string dir = argv[1], statement = argv[2], out = dir + "/direct.parquet";
  try {
    DuckDB duck;
    const OrderedBind bind = MakeBind(duck, dir);
    const bool sample = !std::getenv("DIRECT_SAMPLE") || std::strcmp(std::getenv("DIRECT_SAMPLE"), "0") != 0;
    const bool block_indexes = argc > 3 && std::strcmp(argv[argc - 1], "--block-indexes") == 0;
    const double load = Load1();
    std::fill(std::begin(phase_seconds), std::end(phase_seconds), 0.0);
    const double cpu0 = ProcessCpu(), thread0 = ThreadCpu();
    const auto t0 = std::chrono::steady_clock::now();
    const Result result = Materialize(bind, out, sample, block_indexes);
    const double cpu = ProcessCpu() - cpu0, thread = ThreadSeconds(thread0);
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
        "\"load_1m\": %.2f, \"sampled\": %s, \"split_cpu_s_per_1m_rows\": {\"main thread\": %.3f, \"other threads "
        "(decoding ahead)\": %.3f, \"writer\": %.3f, \"merge, appends and decodes on the main thread\": %.3f%s, "
        "\"writer's rest (PLAIN values, statistics, enums, file)\": %.3f}}\n",
        block_indexes ? "direct, block indexes" : "direct", result.rows, cpu * per, seconds, FileSize(out), load, sample ? "true" : "false", thread * per,
        (cpu - thread) * per, result.write_cpu * per, (thread - result.write_cpu) * per, phases.c_str(),
        (result.write_cpu - timed) * per);
    std::fflush(stdout);
    if (std::find_if(argv + 3, argv + argc, [](const char *a) { return std::strcmp(a, "--check") == 0; }) != argv + argc) {
      const std::string d = Digest(duck, out), s = Digest(duck, statement);
      // The bloom filters of the two columns written through indexes: no row group holding a probed value excluded.
      long probes = 0, wrong = 0;
      for (const char *column : {"block_id", "process_properties"})
        for (const std::string &v : duck.Strings(std::string("SELECT DISTINCT ") + column + " FROM read_parquet(" +
                                                 Quote(out) + ") ORDER BY hash(" + column + ") LIMIT 20"))
          ++probes, wrong += WronglyExcluded(duck, out, column, v, 131072);
      std::printf(
          "{\"check\": \"%s against the statement\", \"rows_equal\": %s, \"digest\": \"%s\", \"statement_digest\": "
          "\"%s\", \"rows_in_one_only\": %s, \"schema_equal\": %s, \"bloom_values_probed\": %ld, "
          "\"bloom_wrongly_excluded\": %ld, \"schema\": \"%s\"}\n",
          block_indexes ? "direct, block indexes" : "direct", d == s ? "true" : "false", d.c_str(), s.c_str(), RowsInOneOnly(duck, out, statement).c_str(),
          Schema(duck, out) == Schema(duck, statement) ? "true" : "false", probes, wrong, Schema(duck, out).c_str());
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "direct-writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
