// A Parquet writer of log_entries' partition files (issue 16), fed with decoded columns: what DuckDB 1.5.5's COPY
// (FORMAT parquet, COMPRESSION zstd) writes for the materializer's statement, the same rows, types, row groups,
// statistics (min/max in both forms), bloom filters of dictionary chunks and zstd level. Per row group and column: a
// dictionary (an open-addressing hash table that grows with the values), kept when smaller than PLAIN and given up on
// past a third of the rows or when the first 16,384 values are nearly all distinct; RLE/bit-packed definition levels
// and indexes; one data page per chunk (up to 64 MiB) compressed with libduckdb's own zstd; the Thrift-compact footer.
// Written for bench/materialization/own-writer.cc (its measurements and checks against DuckDB's file are there) and
// used by writeOrderedLogsPartition (otlp-logs-table.cc). Header only: included by one translation unit each.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace duckdb_zstd {  // zstd.h, as far as this file uses it (libduckdb.so exports its bundled copy)
struct ZSTD_CCtx_s;
size_t ZSTD_compressBound(size_t size);
ZSTD_CCtx_s *ZSTD_createCCtx();
size_t ZSTD_freeCCtx(ZSTD_CCtx_s *context);
size_t ZSTD_compressCCtx(ZSTD_CCtx_s *context, void *out, size_t room, const void *in, size_t size, int level);
unsigned ZSTD_isError(size_t code);
}  // namespace duckdb_zstd

namespace {

// ---------------------------------------------------------------------------------------------------------------
// The columns as a decoder would hand them over.

enum class Kind { kString, kEnum, kInt64, kInt32 };

struct Column {
  std::string name;
  Kind kind;
  // Parquet: physical type, converted type (-1: none), logical type (a LogicalType union field; 0: none).
  int physical;
  int converted;
  int logical;
  std::vector<uint8_t> valid;  // one byte per row: a decoder's validity, unpacked
  std::vector<int64_t> ints;   // kInt64, kInt32 (widened)
  std::vector<uint32_t> offsets;  // kString: row i is bytes[offsets[i], offsets[i + 1])
  std::string bytes;
  // kString read in place (direct-writer.cc --in-place): row i is views[i], into text the caller keeps alive until
  // the row group is written, instead of copied into bytes.
  bool in_place = false;
  std::vector<std::string_view> views;
  std::vector<uint32_t> index;       // kEnum: the value's place in values
  std::vector<std::string> values;   // kEnum
  bool bloom = false;                // kEnum: a bloom filter of each chunk's dictionary (a VARCHAR's in DuckDB's file)
  std::string_view String(size_t i) const {
    if (in_place) return views[i];
    return std::string_view(bytes.data() + offsets[i], offsets[i + 1] - offsets[i]);
  }
};

// Physical types, converted types and LogicalType's fields, as parquet.thrift numbers them.
constexpr int kInt32 = 1, kInt64 = 2, kByteArray = 6;
constexpr int kUtf8 = 0, kJsonConverted = 19, kInt32Converted = 17;
constexpr int kLogicalTimestamp = 8, kLogicalJson = 12;

// log_entries' columns as the materializer writes them: name, input kind, and the Parquet type DuckDB gives it.
struct Spec {
  const char *name;
  Kind kind;
};
const Spec kColumns[] = {
    {"process_id", Kind::kEnum},
    {"stream_id", Kind::kEnum},
    {"block_id", Kind::kString},
    {"insert_time", Kind::kInt64},
    {"exe", Kind::kEnum},
    {"username", Kind::kEnum},
    {"computer", Kind::kEnum},
    {"time", Kind::kInt64},
    {"target", Kind::kString},
    {"level", Kind::kInt32},
    {"msg", Kind::kString},
    {"properties", Kind::kString},
    {"trace_id", Kind::kString},
    {"span_id", Kind::kString},
    {"process_properties", Kind::kString},
    {"audience", Kind::kEnum},
};
bool IsJson(std::string_view name) { return name == "properties" || name == "process_properties"; }

// ---------------------------------------------------------------------------------------------------------------
// Bytes out.

struct Buffer {
  std::vector<uint8_t> data;
  size_t size() const { return data.size(); }
  void Byte(uint8_t b) { data.push_back(b); }
  void Bytes(const void *p, size_t n) {
    const auto *b = static_cast<const uint8_t *>(p);
    data.insert(data.end(), b, b + n);
  }
  void U32(uint32_t v) { Bytes(&v, 4); }
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      Byte(static_cast<uint8_t>(v) | 0x80);
      v >>= 7;
    }
    Byte(static_cast<uint8_t>(v));
  }
  void Clear() { data.clear(); }
};

// Thrift's compact protocol, as far as Parquet's metadata needs it.
class Thrift {
 public:
  explicit Thrift(Buffer &out) : out_(out) {}
  enum Type : uint8_t { kTrue = 1, kFalse = 2, kI8 = 3, kI16 = 4, kI32 = 5, kI64 = 6, kBinary = 8, kList = 9, kStruct = 12 };
  void Field(int16_t id, uint8_t type) {
    const int16_t delta = id - last_.back();
    if (delta > 0 && delta <= 15) {
      out_.Byte(static_cast<uint8_t>(delta << 4) | type);
    } else {
      out_.Byte(type);
      out_.Varint(Zigzag(id));
    }
    last_.back() = id;
  }
  void I32(int16_t id, int64_t v) { Field(id, kI32), out_.Varint(Zigzag(v)); }
  void I64(int16_t id, int64_t v) { Field(id, kI64), out_.Varint(Zigzag(v)); }
  void I8(int16_t id, int8_t v) { Field(id, kI8), out_.Byte(static_cast<uint8_t>(v)); }
  void Bool(int16_t id, bool v) { Field(id, v ? kTrue : kFalse); }
  void Binary(int16_t id, std::string_view v) { Field(id, kBinary), RawBinary(v); }
  void RawBinary(std::string_view v) { out_.Varint(v.size()), out_.Bytes(v.data(), v.size()); }
  void RawI32(int64_t v) { out_.Varint(Zigzag(v)); }
  void List(int16_t id, uint8_t element, size_t n) {
    Field(id, kList);
    if (n < 15) {
      out_.Byte(static_cast<uint8_t>(n << 4) | element);
    } else {
      out_.Byte(0xf0 | element);
      out_.Varint(n);
    }
  }
  void Begin(int16_t id) { Field(id, kStruct), BeginElement(); }
  void BeginElement() { last_.push_back(0); }  // a struct as a list element
  void End() { out_.Byte(0), last_.pop_back(); }

 private:
  static uint64_t Zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
  Buffer &out_;
  std::vector<int16_t> last_{0};
};

// The RLE/bit-packing hybrid (Parquet's RLE encoding) of values of `width` bits: runs of 8 or more equal values
// as one RLE run, the rest bit-packed in groups of 8 (the last padded).
class Hybrid {
 public:
  void Reset(int width) {
    width_ = width;
    out_.Clear();
    pending_.clear();
    run_value_ = 0;
    run_ = 0;
  }
  void Add(uint32_t v) {
    group_[in_group_++] = v;
    if (in_group_ == 8) Group();
  }
  // The encoded bytes; the encoder is then spent.
  const Buffer &Finish() {
    if (in_group_ > 0) {
      bool same = run_ > 0;
      for (int i = 0; i < in_group_ && same; ++i) same = group_[i] == run_value_;
      if (same) {
        run_ += in_group_;
      } else {
        for (int i = in_group_; i < 8; ++i) group_[i] = 0;
        FlushRun();
        Pack();
      }
      in_group_ = 0;
    }
    FlushRun();
    FlushPacked();
    return out_;
  }

 private:
  void Group() {
    in_group_ = 0;
    bool same = true;
    for (int i = 1; i < 8 && same; ++i) same = group_[i] == group_[0];
    if (same && run_ > 0 && group_[0] == run_value_) {
      run_ += 8;
    } else if (same) {
      FlushRun();
      FlushPacked();
      run_value_ = group_[0];
      run_ = 8;
    } else {
      FlushRun();
      Pack();
    }
  }
  void Pack() {
    // 8 values of width_ bits, least significant bit first: width_ bytes.
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0; i < 8; ++i) {
      acc |= static_cast<uint64_t>(group_[i]) << bits;
      bits += width_;
      while (bits >= 8) {
        pending_.push_back(static_cast<uint8_t>(acc));
        acc >>= 8;
        bits -= 8;
      }
    }
    if (bits > 0) pending_.push_back(static_cast<uint8_t>(acc));
    if (pending_.size() / width_ == 63) FlushPacked();  // 63 groups: the most one header byte counts
  }
  void FlushPacked() {
    if (pending_.empty()) return;
    out_.Varint(((pending_.size() / width_) << 1) | 1);
    out_.Bytes(pending_.data(), pending_.size());
    pending_.clear();
  }
  void FlushRun() {
    if (run_ == 0) return;
    FlushPacked();
    out_.Varint(static_cast<uint64_t>(run_) << 1);
    for (int b = 0; b < (width_ + 7) / 8; ++b) out_.Byte(static_cast<uint8_t>(run_value_ >> (8 * b)));
    run_ = 0;
  }
  int width_ = 1;
  Buffer out_;
  std::vector<uint8_t> pending_;
  uint32_t group_[8];
  int in_group_ = 0;
  uint32_t run_value_ = 0;
  uint32_t run_ = 0;
};

int BitWidth(uint32_t max) {
  int w = 0;
  while (max > 0) ++w, max >>= 1;
  return w;
}

// With sampling (the writer "own sampled"), a dictionary is given up on when the first kSample values are nearly all
// distinct (7/8), before they are all hashed: ids of real traffic. The bench's ids repeat (32 templates) and keep
// theirs, but its msg is distinct over the first 16,384 rows of each row group (32,100 distinct in 131,072), so
// sampled it goes PLAIN as in DuckDB's file, and unsampled it takes a dictionary (3.0 against 4.9 MB).
constexpr size_t kSample = 16384;

uint64_t Hash(std::string_view s) {
  // 8 bytes at a time, multiply and fold (as wyhash's mix); ample for a dictionary's table.
  constexpr uint64_t k = 0x9E3779B97F4A7C15ull;
  uint64_t h = s.size() * k;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    __uint128_t m = static_cast<__uint128_t>(h ^ w) * k;
    h = static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
  }
  uint64_t w = 0;
  std::memcpy(&w, s.data() + i, s.size() - i);
  __uint128_t m = static_cast<__uint128_t>(h ^ w ^ 0x5bd1e995) * k;
  return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
}
size_t PlainSize(std::string_view v) { return 4 + v.size(); }
size_t PlainSize(int64_t) { return 8; }

uint64_t Hash(int64_t v) {
  __uint128_t m = static_cast<__uint128_t>(static_cast<uint64_t>(v) ^ 0x5bd1e995) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint64_t>(m) ^ static_cast<uint64_t>(m >> 64);
}

// One row group's dictionary of a column: the distinct values in first-seen order, each row's index.
template <typename T>
class Dictionary {
 public:
  // Builds it over rows [begin, end) (nulls skipped); false when the column is better PLAIN (too many values).
  template <typename Get>
  bool Build(const std::vector<uint8_t> &valid, size_t begin, size_t end, bool sample, Get get) {
    const size_t limit = (end - begin) / 3;
    // The table grows with the values (twice their number, at least 256 slots): a column of few values keeps its
    // table in L1 (one sized for the limit, 2 MB, cost 0.31 against ~0.2 CPU-s per 1 M rows for the hashing).
    slots_.assign(256, Slot{});
    values_.clear();
    hashes_.clear();
    indexes_.clear();
    size_t plain = 0, dictionary = 0;  // bytes PLAIN: of the rows, of the dictionary's values
    bool any = false;
    T previous{};
    uint32_t previous_index = 0;
    for (size_t r = begin; r < end; ++r) {
      if (!valid[r]) continue;
      const T v = get(r);
      plain += PlainSize(v);
      // The row before's value again (a payload's block fields, a run of one level): no hash.
      if (any && v == previous) {
        indexes_.push_back(previous_index);
        continue;
      }
      const uint64_t h = Hash(v);
      const size_t mask = slots_.size() - 1;
      size_t at = h & mask;
      for (;;) {
        Slot &s = slots_[at];
        if (s.index == 0) {
          s = Slot{static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(values_.size() + 1)};
          previous_index = static_cast<uint32_t>(values_.size());
          values_.push_back(v);
          hashes_.push_back(h);
          dictionary += PlainSize(v);
          if (values_.size() * 2 > slots_.size()) Grow();
          break;
        }
        if (s.tag == static_cast<uint32_t>(h >> 32) && values_[s.index - 1] == v) {
          previous_index = s.index - 1;
          break;
        }
        at = (at + 1) & mask;
      }
      indexes_.push_back(previous_index);
      previous = v;
      any = true;
      if (values_.size() > limit) return false;
      if (sample && indexes_.size() == kSample && values_.size() > kSample * 7 / 8) return false;
    }
    // Kept when the dictionary and the indexes take fewer bytes than the values PLAIN (before zstd).
    return dictionary + indexes_.size() * static_cast<size_t>(BitWidth(static_cast<uint32_t>(values_.size()))) / 8 < plain;
  }
  const std::vector<T> &values() const { return values_; }
  const std::vector<uint32_t> &indexes() const { return indexes_; }

 private:
  struct Slot {
    uint32_t tag = 0;    // the hash's high half
    uint32_t index = 0;  // the value's place + 1; 0: empty
  };
  void Grow() {
    slots_.assign(slots_.size() * 2, Slot{});
    const size_t mask = slots_.size() - 1;
    for (size_t i = 0; i < values_.size(); ++i) {
      size_t at = hashes_[i] & mask;
      while (slots_[at].index != 0) at = (at + 1) & mask;
      slots_[at] = Slot{static_cast<uint32_t>(hashes_[i] >> 32), static_cast<uint32_t>(i + 1)};
    }
  }
  std::vector<Slot> slots_;
  std::vector<T> values_;
  std::vector<uint64_t> hashes_;
  std::vector<uint32_t> indexes_;
};

// XXH64 with seed 0, the hash of Parquet's bloom filters.
uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t Xxh64(const void *data, size_t size) {
  constexpr uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full, p3 = 0x165667B19E3779F9ull,
                     p4 = 0x85EBCA77C2B2AE63ull, p5 = 0x27D4EB2F165667C5ull;
  const auto *p = static_cast<const uint8_t *>(data);
  const uint8_t *end = p + size;
  auto read64 = [](const uint8_t *q) {
    uint64_t v;
    std::memcpy(&v, q, 8);
    return v;
  };
  auto round = [](uint64_t acc, uint64_t in) { return Rotl(acc + in * p2, 31) * p1; };
  uint64_t h;
  if (size >= 32) {
    uint64_t v1 = p1 + p2, v2 = p2, v3 = 0, v4 = 0 - p1;
    for (; p + 32 <= end; p += 32) {
      v1 = round(v1, read64(p)), v2 = round(v2, read64(p + 8)), v3 = round(v3, read64(p + 16)),
      v4 = round(v4, read64(p + 24));
    }
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
    for (uint64_t v : {v1, v2, v3, v4}) h = (h ^ round(0, v)) * p1 + p4;
  } else {
    h = p5;
  }
  h += size;
  for (; p + 8 <= end; p += 8) h = Rotl(h ^ round(0, read64(p)), 27) * p1 + p4;
  if (p + 4 <= end) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    h = Rotl(h ^ (static_cast<uint64_t>(v) * p1), 23) * p2 + p3;
    p += 4;
  }
  for (; p < end; ++p) h = Rotl(h ^ (*p * p5), 11) * p1;
  h ^= h >> 33, h *= p2, h ^= h >> 29, h *= p3, h ^= h >> 32;
  return h;
}

// A split-block bloom filter (Parquet's) of a chunk's dictionary, as DuckDB writes one for each dictionary-encoded
// column that is not an ENUM: 2 bytes per value (a power of two, at least 32), about DuckDB's sizes.
std::string Bloom(size_t values, const std::function<uint64_t(size_t)> &hash) {
  size_t bytes = 32;
  while (bytes < values * 2) bytes <<= 1;
  std::vector<uint32_t> words(bytes / 4, 0);
  constexpr uint32_t salt[8] = {0x47b6137bu, 0x44974d91u, 0x8824ad5bu, 0xa2b7289du,
                                0x705495c7u, 0x2df1424bu, 0x9efc4947u, 0x5c6bfb31u};
  const uint64_t blocks = bytes / 32;
  for (size_t i = 0; i < values; ++i) {
    const uint64_t h = hash(i);
    uint32_t *block = &words[((h >> 32) * blocks >> 32) * 8];
    const uint32_t key = static_cast<uint32_t>(h);
    for (int w = 0; w < 8; ++w) block[w] |= 1u << ((key * salt[w]) >> 27);
  }
  return std::string(reinterpret_cast<const char *>(words.data()), bytes);
}

// ---------------------------------------------------------------------------------------------------------------
// The writer.

// Where the writer's CPU goes (thread CPU seconds per phase, printed with OWN_PHASES=1): a few hundred timings per
// file, each a clock read.
enum Phase { kHash, kCompress, kLevels, kIndexes, kBloom, kPhases };
const char *const kPhaseNames[kPhases] = {"dictionary hash", "zstd", "definition levels", "indexes RLE/bit-packed", "bloom"};
thread_local double phase_seconds[kPhases] = {};
double ThreadCpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}
struct Timed {
  explicit Timed(Phase p) : phase(p), start(ThreadCpu()) {}
  ~Timed() { phase_seconds[phase] += ThreadCpu() - start; }
  Phase phase;
  double start;
};

// A data page's values, uncompressed, at most about this: in practice one page per chunk, as DuckDB writes them (zstd
// then finds the repeats of a whole chunk: PLAIN msg 4.85 MB as DuckDB's, against 7.26 MB in pages of 1 MiB).
constexpr size_t kPageBytes = 64 << 20;  // a data page's values, uncompressed, at most about this (8 MiB: 1.4% smaller)
int zstd_level = 3;  // DuckDB's default for COMPRESSION zstd (ZSTD_CLEVEL_DEFAULT); direct-writer.cc --zstd-level
constexpr int kPlain = 0, kRle = 3, kRleDictionary = 8;
constexpr int kDataPage = 0, kDictionaryPage = 2, kZstd = 6;

struct ChunkMeta {
  int64_t values = 0, uncompressed = 0, compressed = 0, data_offset = 0, dictionary_offset = -1, nulls = 0;
  bool dictionary = false;
  std::string min, max;  // PLAIN-encoded statistics; empty when the chunk has no value
  std::string bloom;     // the bitset of the chunk's bloom filter, if it has one
  int64_t bloom_offset = -1, bloom_length = 0;
};

class Writer {
 public:
  // created_by: the footer's, naming the writer (readers key known writers' bugs on it).
  Writer(const std::vector<Column> &columns, FILE *file, bool sample, std::string created_by)
      : columns_(columns), file_(file), sample_(sample), created_by_(std::move(created_by)),
        zstd_(duckdb_zstd::ZSTD_createCCtx()) {
    if (!zstd_) throw std::runtime_error("zstd: no context");
    Put("PAR1", 4);
  }
  ~Writer() { duckdb_zstd::ZSTD_freeCCtx(zstd_); }
  Writer(const Writer &) = delete;
  Writer &operator=(const Writer &) = delete;

  void RowGroup(size_t begin, size_t end) {
    std::vector<ChunkMeta> chunks(columns_.size());
    const int64_t start = offset_;
    for (size_t c = 0; c < columns_.size(); ++c) Chunk(columns_[c], begin, end, chunks[c]);
    // The row group's bloom filters after its chunks (DuckDB's after all row groups).
    for (ChunkMeta &m : chunks) {
      if (m.bloom.empty()) continue;
      header_.Clear();
      Thrift t(header_);
      t.I32(1, static_cast<int64_t>(m.bloom.size()));
      for (int16_t field = 2; field <= 4; ++field) {  // algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED
        t.Begin(field);
        t.Begin(1);
        t.End(), t.End();
      }
      header_.Byte(0);
      m.bloom_offset = offset_;
      m.bloom_length = static_cast<int64_t>(header_.size() + m.bloom.size());
      Put(header_.data.data(), header_.size());
      Put(m.bloom.data(), m.bloom.size());
      m.bloom.clear();
    }
    groups_.push_back({std::move(chunks), static_cast<int64_t>(end - begin), start});
  }

  void Finish() {
    Buffer footer;
    Thrift t(footer);
    t.I32(1, 1);  // version
    t.List(2, Thrift::kStruct, columns_.size() + 1);
    t.BeginElement();
    t.I32(3, 0);  // REQUIRED, as DuckDB writes the root
    t.Binary(4, "duckdb_schema");
    t.I32(5, static_cast<int64_t>(columns_.size()));
    t.End();
    for (const Column &c : columns_) {
      t.BeginElement();
      t.I32(1, c.physical);
      t.I32(3, 1);  // OPTIONAL
      t.Binary(4, c.name);
      if (c.converted >= 0) t.I32(6, c.converted);
      if (c.logical == kLogicalTimestamp) {
        t.Begin(10);
        t.Begin(kLogicalTimestamp);
        t.Bool(1, false);  // isAdjustedToUTC: TIMESTAMP_NS has no time zone
        t.Begin(2);
        t.Begin(3);  // NANOS
        t.End(), t.End(), t.End(), t.End();
      } else if (c.logical == kLogicalJson) {
        // A VARCHAR's and an INTEGER's converted type alone (UTF8, INT_32), as DuckDB writes them: no logical type.
        t.Begin(10);
        t.Begin(static_cast<int16_t>(c.logical));
        t.End(), t.End();
      }
      t.End();
    }
    int64_t rows = 0;
    for (const Group &g : groups_) rows += g.rows;
    t.I64(3, rows);
    t.List(4, Thrift::kStruct, groups_.size());
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      const Group &g = groups_[gi];
      t.BeginElement();
      t.List(1, Thrift::kStruct, g.chunks.size());
      int64_t total = 0, compressed = 0;
      for (size_t c = 0; c < g.chunks.size(); ++c) {
        const ChunkMeta &m = g.chunks[c];
        total += m.uncompressed;
        compressed += m.compressed;
        t.BeginElement();
        t.I64(2, m.dictionary ? m.dictionary_offset : m.data_offset);
        t.Begin(3);
        t.I32(1, columns_[c].physical);
        if (m.dictionary) {
          t.List(2, Thrift::kI32, 2);
          t.RawI32(kRle), t.RawI32(kRleDictionary);
        } else {
          t.List(2, Thrift::kI32, 2);
          t.RawI32(kRle), t.RawI32(kPlain);
        }
        t.List(3, Thrift::kBinary, 1);
        t.RawBinary(columns_[c].name);
        t.I32(4, kZstd);
        t.I64(5, m.values);
        t.I64(6, m.uncompressed);
        t.I64(7, m.compressed);
        t.I64(9, m.data_offset);
        if (m.dictionary) t.I64(11, m.dictionary_offset);
        t.Begin(12);
        // The deprecated max and min too, as DuckDB writes them: parquet_metadata's stats_min and stats_max, which
        // the materializer reads a partition's event-time bounds from.
        // DuckDB leaves an empty one out (an empty string's), and so does this.
        if (m.values > m.nulls && !m.max.empty()) t.Binary(1, m.max);
        if (m.values > m.nulls && !m.min.empty()) t.Binary(2, m.min);
        t.I64(3, m.nulls);
        if (m.values > m.nulls) {
          t.Binary(5, m.max);
          t.Binary(6, m.min);
        }
        t.End();
        if (m.bloom_offset >= 0) {
          t.I64(14, m.bloom_offset);
          t.I32(15, m.bloom_length);
        }
        t.End();
        t.End();
      }
      t.I64(2, total);
      t.I64(3, g.rows);
      t.I64(5, g.start);
      t.I64(6, compressed);
      t.Field(7, Thrift::kI16);
      footer.Varint(static_cast<uint64_t>(gi) << 1);
      t.End();
    }
    t.Binary(6, created_by_);
    footer.Byte(0);
    Put(footer.data.data(), footer.size());
    const uint32_t length = static_cast<uint32_t>(footer.size());
    Put(&length, 4);
    Put("PAR1", 4);
  }

 private:
  struct Group {
    std::vector<ChunkMeta> chunks;
    int64_t rows;
    int64_t start;
  };

  void Put(const void *p, size_t n) {
    if (std::fwrite(p, 1, n, file_) != n) throw std::runtime_error("write failed");
    offset_ += static_cast<int64_t>(n);
  }

  // One page: its header and its zstd-compressed body (definition levels, then values, for a data page).
  void Page(int type, const Buffer &body, int64_t values, int encoding, ChunkMeta &m) {
    compressed_.resize(duckdb_zstd::ZSTD_compressBound(body.size()));
    Timed timed(kCompress);
    const size_t n = duckdb_zstd::ZSTD_compressCCtx(zstd_, compressed_.data(), compressed_.size(), body.data.data(),
                                                    body.size(), zstd_level);
    if (duckdb_zstd::ZSTD_isError(n)) throw std::runtime_error("zstd failed");
    header_.Clear();
    Thrift t(header_);
    t.I32(1, type);
    t.I32(2, static_cast<int64_t>(body.size()));
    t.I32(3, static_cast<int64_t>(n));
    if (type == kDictionaryPage) {
      t.Begin(7);
      t.I32(1, values);
      t.I32(2, kPlain);
      t.End();
    } else {
      t.Begin(5);
      t.I32(1, values);
      t.I32(2, encoding);
      t.I32(3, kRle);
      t.I32(4, kRle);
      t.End();
    }
    header_.Byte(0);
    if (type == kDictionaryPage) m.dictionary_offset = offset_;
    else if (m.data_offset == 0) m.data_offset = offset_;
    m.uncompressed += static_cast<int64_t>(header_.size() + body.size());
    m.compressed += static_cast<int64_t>(header_.size() + n);
    Put(header_.data.data(), header_.size());
    Put(compressed_.data(), n);
  }

  // Definition levels of rows [begin, end) (1: a value, 0: null), length-prefixed as a V1 data page has them.
  void Levels(const Column &c, size_t begin, size_t end, Buffer &body) {
    Timed timed(kLevels);
    if (std::memchr(c.valid.data() + begin, 0, end - begin) == nullptr) {  // no null: one RLE run of 1s
      Buffer run;
      run.Varint(static_cast<uint64_t>(end - begin) << 1);
      run.Byte(1);
      body.U32(static_cast<uint32_t>(run.size()));
      body.Bytes(run.data.data(), run.size());
      return;
    }
    levels_.Reset(1);
    for (size_t r = begin; r < end; ++r) levels_.Add(c.valid[r]);
    const Buffer &encoded = levels_.Finish();
    body.U32(static_cast<uint32_t>(encoded.size()));
    body.Bytes(encoded.data.data(), encoded.size());
  }

  template <typename T, typename Plain>
  void Statistics(const std::vector<T> &values, ChunkMeta &m, Plain plain) {
    if (values.empty()) return;
    auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    m.min = plain(*lo);
    m.max = plain(*hi);
  }

  // A dictionary page of `dict`'s values, then data pages of the rows' indexes.
  template <typename T, typename Append>
  void DictionaryChunk(const Column &c, size_t begin, size_t end, const std::vector<T> &dict,
                       const uint32_t *indexes, ChunkMeta &m, Append append) {
    m.dictionary = true;
    body_.Clear();
    for (const T &v : dict) append(body_, v);
    Page(kDictionaryPage, body_, static_cast<int64_t>(dict.size()), kPlain, m);
    // At least one bit: a one-value dictionary's indexes as 1-bit runs (a width of 0 is not read by every reader).
    const int width = std::max(1, BitWidth(dict.empty() ? 0 : static_cast<uint32_t>(dict.size() - 1)));
    // Pages of about kPageBytes of indexes.
    const size_t per_page = std::max<size_t>(8192, kPageBytes * 8 / width);
    size_t at = 0;  // into indexes (non-null rows only)
    for (size_t r = begin; r < end; r += per_page) {
      const size_t stop = std::min(end, r + per_page);
      body_.Clear();
      Levels(c, r, stop, body_);
      body_.Byte(static_cast<uint8_t>(width));
      Timed timed(kIndexes);
      indices_.Reset(width);
      for (size_t i = r; i < stop; ++i)
        if (c.valid[i]) indices_.Add(indexes[at++]);
      const Buffer &encoded = indices_.Finish();
      body_.Bytes(encoded.data.data(), encoded.size());
      Page(kDataPage, body_, static_cast<int64_t>(stop - r), kRleDictionary, m);
    }
  }

  void Chunk(const Column &c, size_t begin, size_t end, ChunkMeta &m) {
    m.values = static_cast<int64_t>(end - begin);
    for (size_t r = begin; r < end; ++r) m.nulls += !c.valid[r];
    auto plain_string = [](Buffer &b, std::string_view v) {
      b.U32(static_cast<uint32_t>(v.size()));
      b.Bytes(v.data(), v.size());
    };
    auto plain_int = [&c](Buffer &b, int64_t v) {
      if (c.kind == Kind::kInt32) {
        const int32_t w = static_cast<int32_t>(v);
        b.Bytes(&w, 4);
      } else {
        b.Bytes(&v, 8);
      }
    };
    auto int_stat = [&c](int64_t v) {
      return c.kind == Kind::kInt32 ? std::string(reinterpret_cast<const char *>(&v), 4)
                                    : std::string(reinterpret_cast<const char *>(&v), 8);
    };
    auto string_stat = [](std::string_view v) { return std::string(v); };
    switch (c.kind) {
      case Kind::kEnum: {
        // The decoder's ENUM: the values are the dictionary (those present, in their order), no hashing.
        std::vector<uint32_t> remap(c.values.size(), UINT32_MAX);
        std::vector<std::string_view> dict;
        enum_indexes_.clear();
        for (size_t r = begin; r < end; ++r) {
          if (!c.valid[r]) continue;
          uint32_t &to = remap[c.index[r]];
          if (to == UINT32_MAX) to = static_cast<uint32_t>(dict.size()), dict.push_back(c.values[c.index[r]]);
          enum_indexes_.push_back(to);
        }
        Statistics(dict, m, string_stat);
        DictionaryChunk(c, begin, end, dict, enum_indexes_.data(), m, plain_string);
        if (c.bloom) {
          Timed timed(kBloom);
          m.bloom = Bloom(dict.size(), [&dict](size_t i) { return Xxh64(dict[i].data(), dict[i].size()); });
        }
        return;
      }
      case Kind::kString: {
        auto get = [&c](size_t r) { return c.String(r); };
        const bool keep = [&] {
          Timed timed(kHash);
          return strings_.Build(c.valid, begin, end, sample_, get);
        }();
        if (keep) {
          Statistics(strings_.values(), m, string_stat);
          DictionaryChunk(c, begin, end, strings_.values(), strings_.indexes().data(), m, plain_string);
          const auto &dict = strings_.values();
          Timed timed(kBloom);
          m.bloom = Bloom(dict.size(), [&dict](size_t i) { return Xxh64(dict[i].data(), dict[i].size()); });
          return;
        }
        std::string_view lo, hi;
        bool any = false;
        size_t r = begin;
        while (r < end) {
          body_.Clear();
          const size_t page = r;
          size_t bytes = 0;
          size_t stop = r;
          while (stop < end && bytes < kPageBytes) bytes += c.String(stop).size() + 4, ++stop;
          Levels(c, page, stop, body_);
          for (; r < stop; ++r) {
            if (!c.valid[r]) continue;
            const std::string_view v = c.String(r);
            plain_string(body_, v);
            if (!any) lo = hi = v, any = true;
            else if (v < lo) lo = v;
            else if (v > hi) hi = v;
          }
          Page(kDataPage, body_, static_cast<int64_t>(stop - page), kPlain, m);
        }
        if (any) m.min = std::string(lo), m.max = std::string(hi);
        return;
      }
      case Kind::kInt64:
      case Kind::kInt32: {
        auto get = [&c](size_t r) { return c.ints[r]; };
        const bool keep = [&] {
          Timed timed(kHash);
          return ints_.Build(c.valid, begin, end, sample_, get);
        }();
        if (keep) {
          Statistics(ints_.values(), m, int_stat);
          DictionaryChunk(c, begin, end, ints_.values(), ints_.indexes().data(), m, plain_int);
          const auto &dict = ints_.values();
          const size_t width = c.kind == Kind::kInt32 ? 4 : 8;
          Timed timed(kBloom);
          m.bloom = Bloom(dict.size(), [&dict, width](size_t i) { return Xxh64(&dict[i], width); });
          return;
        }
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        const size_t width = c.kind == Kind::kInt32 ? 4 : 8;
        for (size_t r = begin; r < end;) {
          const size_t stop = std::min(end, r + kPageBytes / width);
          body_.Clear();
          Levels(c, r, stop, body_);
          const size_t page = r;
          for (; r < stop; ++r) {
            if (!c.valid[r]) continue;
            plain_int(body_, c.ints[r]);
            lo = std::min(lo, c.ints[r]);
            hi = std::max(hi, c.ints[r]);
          }
          Page(kDataPage, body_, static_cast<int64_t>(stop - page), kPlain, m);
        }
        if (m.values > m.nulls) m.min = int_stat(lo), m.max = int_stat(hi);
        return;
      }
    }
  }

  const std::vector<Column> &columns_;
  FILE *file_;
  bool sample_;
  std::string created_by_;
  duckdb_zstd::ZSTD_CCtx_s *zstd_;
  int64_t offset_ = 0;
  std::vector<Group> groups_;
  Buffer body_, header_;
  std::vector<uint8_t> compressed_;
  Hybrid levels_, indices_;
  Dictionary<std::string_view> strings_;
  Dictionary<int64_t> ints_;
  std::vector<uint32_t> enum_indexes_;
};

// ---------------------------------------------------------------------------------------------------------------
// DuckDB: loading the rows, its own write, and the checks.


// log_entries' columns (kColumns), empty.
std::vector<Column> EmptyColumns() {
  std::vector<Column> columns;
  for (const Spec &s : kColumns) {
    Column c;
    c.name = s.name;
    c.kind = s.kind;
    c.physical = s.kind == Kind::kInt64 ? kInt64 : s.kind == Kind::kInt32 ? kInt32 : kByteArray;
    c.converted = s.kind == Kind::kInt32 ? kInt32Converted : s.kind == Kind::kInt64 ? -1 : IsJson(s.name) ? kJsonConverted : kUtf8;
    c.logical = s.kind == Kind::kInt64 ? kLogicalTimestamp : s.kind == Kind::kInt32 ? 0 : IsJson(s.name) ? kLogicalJson : 0;
    if (s.kind == Kind::kString) c.offsets.push_back(0);
    columns.push_back(std::move(c));
  }
  return columns;
}

}  // namespace
