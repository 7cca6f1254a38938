// Streams a DuckDB query result out as Arrow record batch bodies, off the JavaScript thread.
//
// The JavaScript converter pays one thread hop per 2048-row chunk and builds every buffer on
// the event loop. Here a thread of the exporter's own fetches chunks from DuckDB and appends them
// to per-column Arrow buffers up to a batch's byte target (cut before the row that would pass it),
// then hands the batch's buffers over as they are (each padded to 8 bytes, in Arrow IPC order),
// with their layout, to the JavaScript thread (the statement's run and its first chunks go through a
// libuv worker; the batches after, straight from the fetching thread). JavaScript wraps them in
// Arrow data without copying, and the sender writes them to the socket as they lie. Column layouts
// are chosen by the caller (the Arrow types are decided in TypeScript); this file only knows how
// to fill them.

#define NAPI_VERSION 8
#include <napi.h>

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arrow-ingest.h"
#include "group-write.h"
#include "logs-scan.h"
#include "logs-seal.h"
#include "otlp-logs-table.h"
#include "payload-zstd.h"
#include "sketch-aggregates.h"
#include "tail-rows.h"
#include "thread-priority.h"
#include "duckdb-c-api.h"

namespace {

// Column layouts, as numbered in native-export.ts.
enum Kind : int32_t {
  kFixed = 1,      // param: value width in bytes; copied as is
  kScaled = 2,     // int64 multiplied by param (timestamps to nanoseconds)
  kBool = 3,       // one byte per value to one bit
  kDecimal128 = 4, // param: source width (2, 4, 8 or 16), sign-extended to 16 bytes
  kBinary = 5,     // string_t slots to int32 offsets and bytes (VARCHAR, BLOB)
};

inline bool rowValid(const uint64_t *mask, idx_t row) {
  return !mask || (mask[row >> 6] >> (row & 63)) & 1;
}

// Batch memory that V8 has released (its ArrayBuffers collected), kept for the next batches. A batch
// is built on its result's fetching thread, a new thread per result, and malloc served it from that
// thread's arena, whose pages the previous results' batches had given back: each result faulted in
// (and had the kernel zero) the ~40 MB its batches in flight take again, ~11 k page faults per 10 M-row
// result (PROFILE.md, twentieth pass). Kept by capacity, a multiple of kGranule, and taken by
// whichever thread; at most kKeptBytes kept, the oldest freed first (blocks of sizes no longer
// asked for leave room for the current ones). A buffer under kGranule (a small result's, most
// dashboard statements') is malloc'd and freed as it is, not rounded up.
class BlockPool {
 public:
  static constexpr size_t kGranule = 64 << 10;
  static constexpr size_t kKeptBytes = 32 << 20;

  // A block of at least `bytes` bytes, or null when malloc fails; `capacity` is set to its size. A
  // kept block up to twice the size wanted will do: a batch's buffers (one per column and kind) vary
  // in size from batch to batch, and a pool kept by exact size missed, faulting in fresh blocks.
  uint8_t *Take(size_t bytes, size_t &capacity) {
    capacity = bytes < kGranule ? bytes : (bytes + kGranule - 1) / kGranule * kGranule;
    if (bytes < kGranule) return static_cast<uint8_t *>(std::malloc(bytes));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      size_t best = kept_.size();
      for (size_t i = 0; i < kept_.size(); i++) {
        const size_t kept = kept_[i].capacity;
        if (kept >= capacity && kept <= 2 * capacity && (best == kept_.size() || kept < kept_[best].capacity)) best = i;
      }
      if (best < kept_.size()) {
        uint8_t *block = kept_[best].bytes;
        capacity = kept_[best].capacity;
        kept_.erase(kept_.begin() + best);
        keptBytes_ -= capacity;
        return block;
      }
    }
    return static_cast<uint8_t *>(std::malloc(capacity));
  }

  // Takes back a block that Take gave, with the capacity Take set.
  void Give(uint8_t *block, size_t capacity) {
    if (capacity < kGranule || capacity > kKeptBytes) return std::free(block);
    std::lock_guard<std::mutex> lock(mutex_);
    while (keptBytes_ + capacity > kKeptBytes) {
      std::free(kept_.front().bytes);
      keptBytes_ -= kept_.front().capacity;
      kept_.pop_front();
    }
    kept_.push_back({block, capacity});
    keptBytes_ += capacity;
  }

 private:
  struct Block {
    uint8_t *bytes;
    size_t capacity;
  };
  std::mutex mutex_;
  std::deque<Block> kept_;  // oldest first
  size_t keptBytes_ = 0;
};

BlockPool &blocks = *new BlockPool();

constexpr size_t pad8(size_t n) { return (n + 7) & ~size_t(7); }

// Memory of a batch's buffers (see Buffer), from whichever pool block or malloc Take gives, padded to 8
// bytes with zeros; `length` is the buffer's own, before the padding.
struct Part {
  uint8_t *bytes = nullptr;
  size_t length = 0;
  size_t capacity = 0;
};

// A byte buffer of a column, in pool memory, that grows without zero-filling. Its memory leaves with
// the batch it was filled for (Release), to be sent as it lies: the next batch's starts afresh, as
// large as this one's with some room to spare, so that a column seldom grows (and copies) midway.
struct Buffer {
  uint8_t *bytes = nullptr;
  size_t size = 0;
  size_t capacity = 0;
  size_t reserve = 4096;  // the capacity of the next allocation

  Buffer() = default;
  Buffer(Buffer &&other) noexcept : bytes(other.bytes), size(other.size), capacity(other.capacity), reserve(other.reserve) {
    other.bytes = nullptr;
    other.size = other.capacity = 0;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() {
    if (bytes) blocks.Give(bytes, capacity);
  }

  uint8_t *extend(size_t extra) {
    if (size + extra > capacity) {
      size_t grown = capacity ? capacity * 2 : reserve;
      while (grown < size + extra) grown *= 2;
      size_t taken = 0;
      uint8_t *moved = blocks.Take(grown, taken);
      if (!moved) throw std::bad_alloc();
      if (size > 0) std::memcpy(moved, bytes, size);
      // Freed, not kept: the sizes a buffer grows through are seldom asked for again.
      std::free(bytes);
      bytes = moved;
      capacity = taken;
    }
    uint8_t *at = bytes + size;
    size += extra;
    return at;
  }

  // Hands the memory over, padded to 8 bytes with zeros (an empty buffer's given back: no part), and
  // starts the next batch's buffer empty.
  Part Release() {
    Part part;
    if (size > 0) {
      const size_t length = size;
      std::memset(extend(pad8(length) - length), 0, pad8(length) - length);
      part = {bytes, length, capacity};
      // Kept unless outgrown or twice too large, so that the column's blocks keep their size.
      const size_t wanted = std::max<size_t>(4096, pad8(length) + length / 16);
      if (wanted > reserve || 2 * wanted < reserve) reserve = wanted;
    } else if (bytes) {
      blocks.Give(bytes, capacity);
    }
    bytes = nullptr;
    size = capacity = 0;
    return part;
  }
};

// Sets `count` bits from `at` to the bits of `mask` from `start` (or to 1 without a mask).
void copyBits(uint8_t *out, size_t at, const uint64_t *mask, idx_t start, idx_t count) {
  if (!mask) {
    size_t i = 0;
    for (; i < count && ((at + i) & 7); i++) out[(at + i) >> 3] |= uint8_t(1u << ((at + i) & 7));
    const size_t whole = (count - i) >> 3;
    std::memset(out + ((at + i) >> 3), 0xff, whole);
    i += whole * 8;
    for (; i < count; i++) out[(at + i) >> 3] |= uint8_t(1u << ((at + i) & 7));
    return;
  }
  if ((at & 7) == 0 && (start & 7) == 0) {
    std::memcpy(out + (at >> 3), reinterpret_cast<const uint8_t *>(mask) + (start >> 3), (count + 7) >> 3);
    return;
  }
  for (idx_t i = 0; i < count; i++) {
    if (rowValid(mask, start + i)) out[(at + i) >> 3] |= uint8_t(1u << ((at + i) & 7));
    else out[(at + i) >> 3] &= uint8_t(~(1u << ((at + i) & 7)));
  }
}

size_t countNulls(const uint64_t *mask, idx_t start, idx_t count) {
  size_t nulls = 0;
  for (idx_t i = 0; i < count; i++) nulls += !rowValid(mask, start + i);
  return nulls;
}

struct Column {
  Column(Kind kind, int32_t param) : kind(kind), param(param) {}

  Kind kind;
  int32_t param;
  // Built only once a null shows up: a batch without nulls sends no validity buffer.
  Buffer validity;
  size_t nullCount = 0;
  Buffer values;   // fixed-width values, bool bits, or binary offsets
  Buffer data;     // binary: the bytes

  // Bits a row takes in this column's fixed-width buffers: its validity bit (counted whether or not
  // the batch gets a validity buffer), then its value, or its offset for binary columns.
  size_t rowBits() const {
    switch (kind) {
      case kFixed: return 1 + 8 * size_t(param);
      case kScaled: return 1 + 64;
      case kBool: return 1 + 1;
      case kDecimal128: return 1 + 128;
      case kBinary: return 1 + 32;
    }
    return 0;
  }

  void start() {
    if (kind == kBinary) *reinterpret_cast<int32_t *>(values.extend(4)) = 0;
  }

  // Appends rows [start, start + count) of a flat vector; `at` is the batch row they land on.
  void append(duckdb_vector vector, idx_t start, idx_t count, size_t at) {
    const uint64_t *mask = duckdb_vector_get_validity(vector);
    const size_t nulls = mask ? countNulls(mask, start, count) : 0;
    if (nulls == 0) mask = nullptr;
    if (nulls > 0 && nullCount == 0) {
      // First null of the batch: every earlier row was valid.
      std::memset(validity.extend(((at + count + 7) >> 3)), 0, (at + count + 7) >> 3);
      copyBits(validity.bytes, 0, nullptr, 0, at);
    } else if (nullCount > 0) {
      const size_t bytes = (at + count + 7) >> 3;
      if (bytes > validity.size) std::memset(validity.extend(bytes - validity.size), 0, bytes - validity.size);
    }
    if (nullCount > 0 || nulls > 0) copyBits(validity.bytes, at, mask, start, count);
    nullCount += nulls;

    const uint8_t *source = static_cast<const uint8_t *>(duckdb_vector_get_data(vector));
    switch (kind) {
      case kFixed: {
        const size_t width = size_t(param);
        std::memcpy(values.extend(count * width), source + start * width, count * width);
        break;
      }
      case kScaled: {
        int64_t *out = reinterpret_cast<int64_t *>(values.extend(count * 8));
        const int64_t *in = reinterpret_cast<const int64_t *>(source) + start;
        // Unsigned, so the garbage under a null cannot overflow into undefined behaviour.
        for (idx_t i = 0; i < count; i++) out[i] = int64_t(uint64_t(in[i]) * uint64_t(param));
        break;
      }
      case kBool: {
        const size_t bytes = (at + count + 7) >> 3;
        if (bytes > values.size) std::memset(values.extend(bytes - values.size), 0, bytes - values.size);
        for (idx_t i = 0; i < count; i++) {
          if (source[start + i]) values.bytes[(at + i) >> 3] |= uint8_t(1u << ((at + i) & 7));
        }
        break;
      }
      case kDecimal128: {
        int64_t *out = reinterpret_cast<int64_t *>(values.extend(count * 16));
        for (idx_t i = 0; i < count; i++) {
          const uint8_t *v = source + (start + i) * size_t(param);
          int64_t low;
          switch (param) {
            case 2: low = *reinterpret_cast<const int16_t *>(v); break;
            case 4: low = *reinterpret_cast<const int32_t *>(v); break;
            case 8: low = *reinterpret_cast<const int64_t *>(v); break;
            default:
              std::memcpy(out + i * 2, v, 16);
              continue;
          }
          out[i * 2] = low;
          out[i * 2 + 1] = low < 0 ? -1 : 0;
        }
        break;
      }
      case kBinary: {
        const duckdb_string_t *slots = reinterpret_cast<const duckdb_string_t *>(source) + start;
        size_t total = 0;
        for (idx_t i = 0; i < count; i++) {
          if (rowValid(mask, start + i)) total += slots[i].value.inlined.length;
        }
        int32_t *offsets = reinterpret_cast<int32_t *>(values.extend(count * 4));
        uint8_t *out = data.extend(total);
        int32_t offset = int32_t(data.size - total);
        for (idx_t i = 0; i < count; i++) {
          if (rowValid(mask, start + i)) {
            const duckdb_string_t &s = slots[i];
            const uint32_t length = s.value.inlined.length;
            std::memcpy(out, length <= 12 ? s.value.inlined.inlined : s.value.pointer.ptr, length);
            out += length;
            offset += int32_t(length);
          }
          offsets[i] = offset;
        }
        break;
      }
    }
  }
};

// One finished batch: its buffers' memory in Arrow IPC order (per column: validity, empty without
// nulls; then values, or offsets and bytes), each part padded to 8 bytes with zeros; and per column
// its null count and the length of each buffer. The sender writes the parts to the socket as they
// lie, one after another (flight/framed-writes), so they are never copied into one body.
struct Batch {
  size_t rows = 0;
  std::vector<Part> parts;
  std::vector<double> layout;

  Batch() = default;
  Batch(Batch &&other) noexcept : rows(other.rows), parts(std::move(other.parts)), layout(std::move(other.layout)) {
    other.parts.clear();
  }
  Batch &operator=(Batch &&other) noexcept {
    if (this != &other) {
      GiveBack();
      rows = other.rows;
      parts = std::move(other.parts);
      layout = std::move(other.layout);
      other.parts.clear();
    }
    return *this;
  }
  Batch(const Batch &) = delete;
  Batch &operator=(const Batch &) = delete;
  ~Batch() { GiveBack(); }

 private:
  void GiveBack() {
    for (Part &p : parts) {
      if (p.bytes) blocks.Give(p.bytes, p.capacity);
    }
    parts.clear();
  }
};

// { rows, buffers: Array<ArrayBuffer | null>, layout: Float64Array } of a batch, or null for an empty one
// (the end). V8 gives each part's memory back to the pool when its ArrayBuffer is collected (and counts
// it as external memory meanwhile); the hint carries its capacity. An empty part is null.
Napi::Value BatchValue(Napi::Env env, Batch &batch) {
  if (batch.rows == 0) return env.Null();
  Napi::Object result = Napi::Object::New(env);
  result.Set("rows", Napi::Number::New(env, double(batch.rows)));
  Napi::Array buffers = Napi::Array::New(env, batch.parts.size());
  for (size_t i = 0; i < batch.parts.size(); i++) {
    Part &part = batch.parts[i];
    if (!part.bytes) {
      buffers.Set(i, env.Null());
      continue;
    }
    buffers.Set(i, Napi::ArrayBuffer::New(
                       env, part.bytes, pad8(part.length),
                       [](Napi::Env, void *bytes, size_t *capacity) { blocks.Give(static_cast<uint8_t *>(bytes), reinterpret_cast<size_t>(capacity)); },
                       reinterpret_cast<size_t *>(part.capacity)));
    part.bytes = nullptr;
  }
  result.Set("buffers", buffers);
  Napi::Float64Array layout = Napi::Float64Array::New(env, batch.layout.size());
  std::copy(batch.layout.begin(), batch.layout.end(), layout.Data());
  result.Set("layout", layout);
  return result;
}

// A fill's error carrying DuckDB's error type as `errorType`, so callers classify by type.
Napi::Value Failure(const Napi::Error &error, int type) {
  Napi::Object value = error.Value();
  value.Set("errorType", Napi::Number::New(error.Env(), type));
  return value;
}

class Exporter : public Napi::ObjectWrap<Exporter> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "Exporter", {InstanceMethod("next", &Exporter::Next), InstanceMethod("stop", &Exporter::Stop),
                                         InstanceMethod("close", &Exporter::Close)});
  }

  // new Exporter(resultExternal, kinds: Int32Array [kind, param, ...], batchBytes, maxBinaryBytes)
  // new Exporter(preparedExternal, kinds, batchBytes, maxBinaryBytes, typeIds: Int32Array[, nice[, connection, fill]])
  // The second form runs the prepared statement itself, in its first Fill, and checks that the
  // result's column types are `typeIds` (duckdb_type numbers): the statement's run and its first
  // batch then take one trip to a worker thread, not two. The prepared statement must stay alive
  // (not destroyed) until the exporter is closed; the result is the exporter's own.
  // With `nice` (> 0, the heavy lane's statements) the statement runs, and every chunk is fetched,
  // on the exporter's own thread, lowered to that nice value first (thread-priority.cc): DuckDB
  // does a statement's work on the thread that runs and fetches it, and that thread then works for
  // this statement alone, so the scheduler lets every other thread of the server go first.
  // With `connection` (the statement's) and `fill` (SQL), the exporter runs `fill` on that connection
  // just before the statement, in the same trip (RunOptions.fill: which rows of a rollup's kept tails the
  // statement reads); the statement does not run when it fails.
  Exporter(const Napi::CallbackInfo &info) : Napi::ObjectWrap<Exporter>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 4 || !info[0].IsExternal() || !info[1].IsTypedArray() || !info[2].IsNumber() || !info[3].IsNumber() ||
        (info.Length() > 4 && !info[4].IsTypedArray()) || (info.Length() > 5 && !info[5].IsNumber()) ||
        (info.Length() > 6 && (info.Length() < 8 || !info[6].IsExternal() || !info[7].IsString()))) {
      throw Napi::TypeError::New(env, "Exporter(result, kinds, batchBytes, maxBinaryBytes[, typeIds[, nice[, connection, fill]]])");
    }
    if (info.Length() > 5) nice_ = info[5].As<Napi::Number>().Int32Value();
    if (info.Length() > 7) {
      // @duckdb/node-bindings holds a connection as an External over { duckdb_connection } (see arrow-ingest.cc).
      connection_ = *static_cast<duckdb_connection *>(info[6].As<Napi::External<void>>().Data());
      if (!connection_) throw Napi::TypeError::New(env, "Exporter: the connection has been closed");
      connectionRef_ = Napi::Persistent(info[6]);
      fill_ = info[7].As<Napi::String>().Utf8Value();
    }
    resultRef_ = Napi::Persistent(info[0]);
    idx_t resultColumns;
    if (info.Length() > 4) {
      // @duckdb/node-bindings wraps the statement in a holder whose first member is the handle
      // (null once the statement is destroyed), as it does connections (see arrow-ingest.cc).
      prepared_ = *static_cast<duckdb_prepared_statement *>(info[0].As<Napi::External<void>>().Data());
      if (!prepared_) throw Napi::TypeError::New(env, "Exporter: the prepared statement has been destroyed");
      Napi::Int32Array typeIds = info[4].As<Napi::Int32Array>();
      expectedTypes_.assign(typeIds.Data(), typeIds.Data() + typeIds.ElementLength());
      resultColumns = expectedTypes_.size();
    } else {
      result_ = info[0].As<Napi::External<duckdb_result>>().Data();
      resultColumns = duckdb_column_count(result_);
    }
    Napi::Int32Array kinds = info[1].As<Napi::Int32Array>();
    // Each column is read at its index in every chunk, so the layouts must be exactly one per column.
    if (kinds.ElementLength() != 2 * resultColumns) {
      throw Napi::TypeError::New(env, "Exporter: " + std::to_string(kinds.ElementLength() / 2) + " column layout(s) for a result of " +
                                          std::to_string(resultColumns) + " column(s)");
    }
    for (size_t i = 0; i + 1 < kinds.ElementLength(); i += 2) {
      if (kinds[i] < kFixed || kinds[i] > kBinary) throw Napi::TypeError::New(env, "Exporter: unknown column layout " + std::to_string(kinds[i]));
      columns_.emplace_back(Kind(kinds[i]), kinds[i + 1]);
    }
    const size_t batchBytes = size_t(std::max<int64_t>(0, info[2].As<Napi::Number>().Int64Value()));
    // Each of a column's buffers (validity, values or offsets, bytes) is padded to 8 bytes in the batch.
    const size_t padding = 3 * 7 * columns_.size();
    budgetBits_ = 8 * (batchBytes > padding ? batchBytes - padding : 0);
    for (size_t c = 0; c < columns_.size(); c++) {
      rowBits_ += columns_[c].rowBits();
      if (columns_[c].kind == kBinary) binary_.push_back(c);
    }
    const int64_t maxBinary = info[3].As<Napi::Number>().Int64Value();
    if (maxBinary <= 0 || maxBinary > INT32_MAX) throw Napi::TypeError::New(env, "Exporter: maxBinaryBytes must be in [1, 2^31 - 1]");
    maxBinaryBytes_ = size_t(maxBinary);
  }

  ~Exporter() {
    StopFetcher();
    DropChunk();
    DestroyOwnResult();
    ReleaseWake();
  }

  // Fills the next batch on a worker thread (once the fetching thread runs: takes the one it built);
  // resolves to null at the end of the result.
  Napi::Value Next(const Napi::CallbackInfo &info);
  // Settles a Next, on the JavaScript thread, with the batch the fetching thread built, or with its end.
  void Settle(Napi::Env env, Napi::Promise::Deferred &deferred);
  // wake_'s call on the JavaScript thread: settles the Next that waits.
  static void Woken(napi_env env, napi_value, void *context, void *);

  // Has the batch being filled end at DuckDB's next chunk, without interrupting DuckDB: the fill
  // settles with the end (or with a batch already built ahead) instead of going on until its batch
  // is full, up to batchBytes of rows. For a consumer that stopped reading in a client's
  // transaction, which an interrupt would fail. May be called while a fill runs; Close still follows.
  Napi::Value Stop(const Napi::CallbackInfo &info) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    fetchable_.notify_one();
    return info.Env().Undefined();
  }

  // Stops fetching and releases the chunks held (the result itself belongs to its JS owner).
  // Interrupt the connection first when the result is not exhausted: a fetch in progress ends
  // only when DuckDB returns.
  Napi::Value Close(const Napi::CallbackInfo &info) {
    if (busy_) throw Napi::Error::New(info.Env(), "the exporter is busy");
    StopFetcher();
    DropChunk();
    DestroyOwnResult();
    ReleaseWake();
    finished_ = true;
    return info.Env().Undefined();
  }

  // Runs on the worker thread. Returns false with `error` set when DuckDB reports one; an empty
  // batch (no rows) is the end of the result.
  bool Fill(Batch &batch, std::string &error) {
    if (prepared_ && !nice_ && !result_ && !finished_ && !Run(error)) {
      finished_ = true;
      return false;
    }
    if (!fetcher_.joinable()) {
      if (!nice_) {
        switch (Build(batch, error, errorType_, true)) {
          case Built::kBatch:
            // The result's end came with this batch (Build fetched past its last chunk): the Next after
            // settles with the end at once, on the JavaScript thread. It was a second trip through libuv's
            // pool for nothing but the end, which held a small statement's DoGet (its end, and the trailers
            // then in a socket write of their own) ~0.3 ms (bench/latency/PROFILE.md, twenty-seventh pass).
            if (exhausted_) finished_ = true;
            return true;
          case Built::kEnd:
            finished_ = true;
            return true;
          case Built::kError:
            finished_ = true;
            return false;
          case Built::kMore:
            break;
        }
      }
      fetcher_ = std::thread([this] { FetchLoop(); });
      fetching_ = true;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    available_.wait(lock, [this] { return !ready_.empty() || fetched_; });
    if (!ready_.empty()) {
      batch = std::move(ready_.front());
      ready_.pop_front();
      fetchable_.notify_one();
      return true;
    }
    finished_ = true;
    if (fetchError_.empty()) return true;
    error = fetchError_;
    errorType_ = fetchErrorType_;
    return false;
  }

  // How many of the current chunk's next `count` rows the batch (holding `rows` rows) takes. It stops
  // before the row that would take the batch's buffers, padding included, past the byte target (a
  // batch's first row goes in however wide it is), so that a batch stays within the target whatever
  // its rows' width: cut after the fact, a chunk of wide rows (2,048 rows of a few KiB) overshot it
  // several times over, past the 4 MiB that gRPC clients accept by default (#10). It also stops before
  // a row whose strings would take a binary column past maxBinaryBytes: Arrow's utf8 and binary
  // offsets are int32, so a batch holds at most 2 GiB - 1 of them. 0: the next row starts the next
  // batch (or, for a batch's first row, cannot fit in one at all).
  idx_t RowsWithin(idx_t count, size_t rows) const {
    // In bits, as validity and bool buffers take one a row; every column counts its validity bits.
    size_t used = 0;
    for (const Column &c : columns_) used += 8 * (c.values.size + c.data.size) + rows;
    if (binary_.empty()) {
      if (used + rowBits_ > budgetBits_) return rows == 0 ? 1 : 0;
      return std::min<idx_t>(count, (budgetBits_ - used) / rowBits_);
    }
    struct Strings {
      const uint64_t *mask;
      const duckdb_string_t *slots;
      size_t bytes;
    };
    std::vector<Strings> strings;
    for (size_t c : binary_) {
      duckdb_vector vector = duckdb_data_chunk_get_vector(chunk_, c);
      strings.push_back({duckdb_vector_get_validity(vector),
                         static_cast<const duckdb_string_t *>(duckdb_vector_get_data(vector)) + chunkOffset_, columns_[c].data.size});
    }
    for (idx_t i = 0; i < count; i++) {
      size_t bits = rowBits_;
      for (Strings &s : strings) {
        if (!rowValid(s.mask, chunkOffset_ + i)) continue;
        const size_t length = s.slots[i].value.inlined.length;
        s.bytes += length;
        if (s.bytes > maxBinaryBytes_) return i;
        bits += 8 * length;
      }
      used += bits;
      if (used > budgetBits_ && rows + i > 0) return i;
    }
    return count;
  }

  void Done() { busy_ = false; }

  // DuckDB's error type (duckdb_error_type) of the failure Fill reported.
  int ErrorType() const { return errorType_; }

 private:
  enum class Built { kBatch, kEnd, kError, kMore };

  // Appends the result's rows to the batch being built until it is full (kBatch: `batch` holds it),
  // the result ends (kBatch with the last rows, then kEnd) or fails (kError, `error` and `type` set).
  // `inlineOnly` (the worker thread, before the fetching thread exists): fetches at most
  // kChunksInline chunks in all, then answers kMore with the batch unfinished, for the fetching
  // thread to go on with. Only one thread builds at a time: the worker until it starts the
  // fetching thread, that thread after.
  Built Build(Batch &batch, std::string &error, int &type, bool inlineOnly) {
    if (!building_) {
      for (Column &c : columns_) c.start();
      building_ = true;
    }
    while (!exhausted_) {
      if (!chunk_) {
        if (stopping_.load(std::memory_order_relaxed)) return Built::kEnd;
        if (inlineOnly && chunksInline_ == kChunksInline) return Built::kMore;
        chunksInline_ += inlineOnly;
        chunk_ = FetchChunk(error, type);
        chunkOffset_ = 0;
        chunkSize_ = chunk_ ? duckdb_data_chunk_get_size(chunk_) : 0;
        if (!chunk_) {
          exhausted_ = true;
          if (!error.empty()) return Built::kError;
          break;
        }
      }
      const idx_t count = RowsWithin(chunkSize_ - chunkOffset_, rows_);
      if (count == 0) {
        // The next row would take the batch past its byte target, or push an offset past int32: it
        // starts the next batch.
        if (rows_ > 0) break;
        error = "Invalid Input Error: a value of more than " + std::to_string(maxBinaryBytes_) +
                " bytes does not fit in an Arrow batch (32-bit offsets)";
        type = 32;  // DUCKDB_ERROR_INVALID_INPUT: the query's data, not a failure of DuckDB
        exhausted_ = true;
        return Built::kError;
      }
      for (size_t c = 0; c < columns_.size(); c++) {
        columns_[c].append(duckdb_data_chunk_get_vector(chunk_, c), chunkOffset_, count, rows_);
      }
      rows_ += count;
      chunkOffset_ += count;
      if (chunkOffset_ == chunkSize_) DropChunk();
      else break;  // cut before the chunk's next row (RowsWithin)
    }
    if (rows_ == 0) return Built::kEnd;
    batch.rows = rows_;
    HandOver(batch);
    rows_ = 0;
    building_ = false;
    return Built::kBatch;
  }

  // The columns' buffers go to the batch as they are (no copy into one body: the sender writes them
  // one after another), and the next batch's columns start in fresh memory.
  void HandOver(Batch &batch) {
    for (Column &c : columns_) {
      batch.layout.push_back(double(c.nullCount));
      // A validity buffer is built only once a null shows up: without nulls, none is sent.
      batch.parts.push_back(c.validity.Release());
      batch.parts.push_back(c.values.Release());
      if (c.kind == kBinary) batch.parts.push_back(c.data.Release());
      for (size_t b = batch.parts.size() - (c.kind == kBinary ? 3 : 2); b < batch.parts.size(); b++) {
        batch.layout.push_back(double(batch.parts[b].length));
      }
      c.nullCount = 0;
    }
  }

  // How long the thread running a statement pauses when DuckDB has no task for it (the tasks left all
  // run on DuckDB's own threads, or wait for them). DuckDB's own run of a statement
  // (duckdb_execute_prepared_streaming: PendingQueryResult::ExecuteInternal) polls its task queue
  // meanwhile, taking and releasing the queue's mutex in a loop: a core kept busy for nothing, 11 % of
  // a rollup dashboard read's CPU in DuckDB alone (bench/latency/PROFILE.md, twenty-second pass).
  static constexpr std::chrono::microseconds kNoTaskPause{20};

  // Runs the prepared statement (on the worker thread), streaming, into the exporter's own result:
  // DuckDB's tasks run here until its result can stream, with a pause whenever none is free.
  bool Run(std::string &error) {
    if (!fill_.empty()) {
      duckdb_result filled;
      const bool ok = duckdb_query(connection_, fill_.c_str(), &filled) == DuckDBSuccess;
      if (!ok) {
        const char *message = duckdb_result_error(&filled);
        error = message && *message ? message : "the statement's fill failed";
        errorType_ = duckdb_result_error_type(&filled);
      }
      duckdb_destroy_result(&filled);
      fill_.clear();
      if (!ok) {
        ownResult_ = {};
        result_ = &ownResult_;
        return false;
      }
    }
    duckdb_pending_result pending = nullptr;
    bool ran = duckdb_pending_prepared_streaming(prepared_, &pending) == DuckDBSuccess;
    for (duckdb_pending_state state = DUCKDB_PENDING_RESULT_NOT_READY; ran && state != DUCKDB_PENDING_RESULT_READY;) {
      state = duckdb_pending_execute_task(pending);
      if (state == DUCKDB_PENDING_ERROR) ran = false;
      else if (state == DUCKDB_PENDING_NO_TASKS_AVAILABLE) std::this_thread::sleep_for(kNoTaskPause);
    }
    if (!ran) {
      const char *message = pending ? duckdb_pending_error(pending) : nullptr;
      error = message && *message ? message : "the statement failed";
      errorType_ = -1;  // the C API gives a pending result's message alone, which opens with the type's name
      duckdb_destroy_pending(&pending);
      ownResult_ = {};
      result_ = &ownResult_;
      return false;
    }
    ran = duckdb_execute_pending(pending, &ownResult_) == DuckDBSuccess;
    duckdb_destroy_pending(&pending);
    result_ = &ownResult_;  // destroyed by DestroyOwnResult, also after a failure (duckdb.h asks it)
    if (!ran) {
      const char *message = duckdb_result_error(result_);
      error = message && *message ? message : "the statement failed";
      errorType_ = duckdb_result_error_type(result_);
      return false;
    }
    // Planned again since it was prepared (DuckDB rebinds a statement whose catalog changed), a
    // statement may return other columns than the layouts were made for.
    bool same = duckdb_column_count(result_) == expectedTypes_.size();
    for (idx_t i = 0; same && i < expectedTypes_.size(); i++) same = duckdb_column_type(result_, i) == expectedTypes_[i];
    if (!same) {
      error = "Invalid Input Error: the statement's columns changed between its planning and its run; run it again";
      errorType_ = 32;  // DUCKDB_ERROR_INVALID_INPUT
      return false;
    }
    return true;
  }

  void DestroyOwnResult() {
    if (result_ != &ownResult_) return;
    duckdb_destroy_result(&ownResult_);
    result_ = nullptr;
    prepared_ = nullptr;  // run once
  }

  // DuckDB runs a streaming query's pipeline on the thread that fetches, so fetching runs on a
  // thread of its own: DuckDB computes while batches are sent. That thread also builds the batches
  // from the chunks as it fetches them and hands over whole batches, up to kBatchesAhead ahead of
  // the worker that takes them: one hand-over between threads per batch (~30 chunks of 2,048 rows
  // at 2 MiB), where handing each chunk to a worker that built the batch cost a wake-up of one
  // thread or the other per chunk (~5,000 per 10 M-row result), and each chunk is copied while
  // still in the cache it was computed in (bench/latency/PROFILE.md, twentieth pass).
  static constexpr size_t kBatchesAhead = 1;
  // A result's first chunks are fetched on the worker thread that fills the batch; the fetching
  // thread starts only for a result that goes on past them. Most dashboard statements end within
  // their first chunk, and a thread for each of them cost a clone, two hand-overs between threads
  // and a join per statement (bench/latency/PROFILE.md).
  static constexpr int kChunksInline = 2;

  // The result's next chunk, or null at its end (`error` and `type` set when DuckDB failed).
  duckdb_data_chunk FetchChunk(std::string &error, int &type) {
    duckdb_data_chunk chunk = duckdb_fetch_chunk(*result_);
    if (chunk && duckdb_data_chunk_get_size(chunk) > 0) return chunk;
    if (chunk) duckdb_destroy_data_chunk(&chunk);
    const char *message = duckdb_result_error(result_);
    if (message && *message) {
      error = message;
      type = duckdb_result_error_type(result_);
    }
    return nullptr;
  }

  void FetchLoop() {
    std::string error;
    int type = 0;
    if (nice_) {
      // A failure to lower leaves the thread as it is: the statement still runs (app.ts checked
      // once, and logged, whether this process may lower its threads).
      LowerThisThread(nice_);
      if (prepared_ && !Run(error)) type = errorType_;
    }
    while (error.empty()) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        fetchable_.wait(lock, [this] { return stopping_ || ready_.size() < kBatchesAhead; });
        if (stopping_) break;
      }
      Batch batch;
      try {
        if (Build(batch, error, type, false) != Built::kBatch) break;
      } catch (const std::exception &e) {
        // Out of memory (the batch or a column's buffer): on the worker, Napi's AsyncWorker turned
        // it into the call's error; on this thread it would end the process.
        error = e.what();
        break;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(batch));
      available_.notify_one();
      WakeWaiter();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    fetchError_ = error;
    fetchErrorType_ = type;
    fetched_ = true;
    available_.notify_one();
    WakeWaiter();
  }

  // With mutex_ held, on the fetching thread: a batch or the end is there for the Next waiting on the
  // JavaScript thread, if one is; wake_ calls Woken there, once per wait.
  void WakeWaiter() {
    if (!waiting_) return;
    waiting_ = false;
    napi_call_threadsafe_function(wake_, nullptr, napi_tsfn_nonblocking);
  }

  void StopFetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    fetchable_.notify_one();
    if (fetcher_.joinable()) fetcher_.join();
    ready_.clear();
  }

  // No Next waits (busy_ is false), so no call of wake_ is pending.
  void ReleaseWake() {
    if (wake_) napi_release_threadsafe_function(wake_, napi_tsfn_release);
    wake_ = nullptr;
  }

  void DropChunk() {
    if (chunk_) duckdb_destroy_data_chunk(&chunk_);
    chunk_ = nullptr;
  }

  Napi::Reference<Napi::Value> resultRef_;  // the result's or the prepared statement's handle
  duckdb_prepared_statement prepared_ = nullptr;
  Napi::Reference<Napi::Value> connectionRef_;  // the connection `fill_` runs on, kept alive meanwhile
  duckdb_connection connection_ = nullptr;
  std::string fill_;  // run on connection_ just before the statement (Run), once
  std::vector<int> expectedTypes_;
  duckdb_result ownResult_{};
  duckdb_result *result_ = nullptr;  // the caller's, or &ownResult_ once Run has run
  std::vector<Column> columns_;
  size_t budgetBits_ = 0;  // the batch's byte target less its buffers' padding, in bits (RowsWithin)
  size_t rowBits_ = 0;     // bits a row takes in the fixed-width buffers, over all columns
  std::vector<size_t> binary_;  // the binary columns' indices
  size_t maxBinaryBytes_ = INT32_MAX;
  duckdb_data_chunk chunk_ = nullptr;
  idx_t chunkOffset_ = 0;
  idx_t chunkSize_ = 0;
  bool finished_ = false;
  bool busy_ = false;
  int errorType_ = 0;
  int nice_ = 0;  // > 0: run and fetch on the exporter's own thread, at this nice value

  // The batch being built (Build): its rows so far, whether its columns are started, whether the
  // result has no more chunks; the worker's until the fetching thread starts, that thread's after.
  size_t rows_ = 0;
  bool building_ = false;
  bool exhausted_ = false;
  int chunksInline_ = 0;
  std::thread fetcher_;  // started by Fill once the first chunks are taken
  bool fetching_ = false;  // fetcher_ started: Next takes its batches on the JavaScript thread (set by Fill)
  // Calls Woken on the JavaScript thread for a Next that waits on the fetching thread: created by the first
  // such wait (a result that ends within its first batch never makes one), referenced only while one waits.
  napi_threadsafe_function wake_ = nullptr;
  bool waiting_ = false;  // with mutex_: a Next waits, wake_ not yet called for it
  std::optional<Napi::Promise::Deferred> waiter_;  // that Next's promise (the JavaScript thread's)
  Napi::ObjectReference waiterOwner_;  // keeps the exporter alive while a Next waits
  std::mutex mutex_;
  std::condition_variable fetchable_;  // room for a batch ahead, or stopping
  std::condition_variable available_;  // a batch ahead, or building is over
  std::deque<Batch> ready_;
  bool fetched_ = false;
  std::atomic<bool> stopping_{false};  // also read by Build between chunks, without the lock
  std::string fetchError_;  // why building ended, when DuckDB (or a value too large) failed
  int fetchErrorType_ = 0;
};

class FillWorker : public Napi::AsyncWorker {
 public:
  FillWorker(Napi::Env env, Exporter *exporter, Napi::Object owner)
      : Napi::AsyncWorker(env), exporter_(exporter), owner_(Napi::Persistent(owner)), deferred_(Napi::Promise::Deferred::New(env)) {}

  Napi::Promise Promise() { return deferred_.Promise(); }

  void Execute() override {
    std::string error;
    if (!exporter_->Fill(batch_, error)) SetError(error);
  }

  // Resolves to the batch (BatchValue), or null at the end.
  void OnOK() override {
    exporter_->Done();
    deferred_.Resolve(BatchValue(Env(), batch_));
  }

  // Rejects with an Error carrying DuckDB's error type as `errorType`, so callers classify by type.
  void OnError(const Napi::Error &error) override {
    exporter_->Done();
    deferred_.Reject(Failure(error, exporter_->ErrorType()));
  }


 private:
  Exporter *exporter_;
  Napi::ObjectReference owner_;  // keeps the exporter (and through it the result) alive meanwhile
  Napi::Promise::Deferred deferred_;
  Batch batch_;
};

Napi::Value Exporter::Next(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (busy_) throw Napi::Error::New(env, "a batch is already being filled");
  if (finished_) {
    auto deferred = Napi::Promise::Deferred::New(env);
    deferred.Resolve(env.Null());
    return deferred.Promise();
  }
  if (fetching_) {
    // The fetching thread builds the batches: one it built ahead is taken here, on the JavaScript thread,
    // and a wait for the next is a wake-up of this thread, not a trip through libuv's pool (a wake-up of a
    // pool thread, then of this one) queued behind whatever else the pool runs.
    auto deferred = Napi::Promise::Deferred::New(env);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ready_.empty() && !fetched_) {
        if (!wake_) {
          napi_value name = Napi::String::New(env, "orrery.exporter");
          NAPI_THROW_IF_FAILED(env, napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr, this, Woken, &wake_),
                               Napi::Value());
        }
        // Referenced while a Next waits, so that the process does not exit under it.
        napi_ref_threadsafe_function(env, wake_);
        waiting_ = true;
        waiter_ = deferred;
        waiterOwner_ = Napi::Persistent(info.This().As<Napi::Object>());
        busy_ = true;
        return deferred.Promise();
      }
    }
    Settle(env, deferred);
    return deferred.Promise();
  }
  busy_ = true;
  auto *worker = new FillWorker(env, this, info.This().As<Napi::Object>());
  worker->Queue();
  return worker->Promise();
}

void Exporter::Settle(Napi::Env env, Napi::Promise::Deferred &deferred) {
  Batch batch;
  std::string error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ready_.empty()) {
      batch = std::move(ready_.front());
      ready_.pop_front();
    } else {
      finished_ = true;
      error = fetchError_;
      errorType_ = fetchErrorType_;
    }
  }
  if (batch.rows > 0) fetchable_.notify_one();
  if (!error.empty()) return deferred.Reject(Failure(Napi::Error::New(env, error), errorType_));
  deferred.Resolve(BatchValue(env, batch));
}

void Exporter::Woken(napi_env env, napi_value, void *context, void *) {
  if (!env) return;  // the environment is being torn down
  auto *exporter = static_cast<Exporter *>(context);
  Napi::Env napiEnv(env);
  try {
    napi_unref_threadsafe_function(env, exporter->wake_);
    Napi::Promise::Deferred deferred = *exporter->waiter_;
    exporter->waiter_.reset();
    // Alive until settled, and free to take its next batch from then on.
    Napi::ObjectReference owner = std::move(exporter->waiterOwner_);
    exporter->busy_ = false;
    exporter->Settle(napiEnv, deferred);
  } catch (const Napi::Error &error) {
    error.ThrowAsJavaScriptException();
  }
}

// resultError(resultExternal): { type, message } of the error a result ended with (type as
// duckdb_error_type numbers it), or null. @duckdb/node-api ends a streaming result that fails
// midway as if it were complete, and does not expose error types, so its callers ask here.
Napi::Value ResultError(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(env, "resultError(result)");
  duckdb_result *result = info[0].As<Napi::External<duckdb_result>>().Data();
  const char *message = duckdb_result_error(result);
  if (!message || !*message) return env.Null();
  Napi::Object failure = Napi::Object::New(env);
  failure.Set("type", Napi::Number::New(env, duckdb_result_error_type(result)));
  failure.Set("message", Napi::String::New(env, message));
  return failure;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  // Process-wide, once, when the module loads (so it applies only where the native exporter runs):
  // allocations below 32 MiB come from malloc's arenas rather than from mmap. Each batch is a
  // fresh allocation of about the batch size (2 MiB by default; 1 MiB, plus as much again for
  // Node's gRPC frame, when this was measured); served by mmap, every one paid its pages' faults
  // and zeroing again. It also turns off glibc's sliding thresholds.
  // Measured on 2 cores, 3 M-row stored scan over Flight, server CPU per run (A/B builds alternated,
  // ROWS=3000000 CEILING=0 ORRERY_ROOT=<A> COMPARE_ROOT=<B> bash bench/flight-throughput/run.sh
  // --repeats 7 --cases stored; load average 35, so wall times were noise): mmap threshold alone
  // 0.26 s, neither 0.35 s.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // A batch is freed (when V8 collects its ArrayBuffer) at the top of its arena's heap, and with
  // the default 128 KiB trim threshold glibc hands it back to the system at once (madvise): the
  // next batch faults its 2 MiB of pages in and has them zeroed again. A 10 M-row result took
  // ~80 k page faults in the server, ~10 k with this (the kernel zeroing ~300 MB of pages it
  // need not; #10 item 3, PROFILE.md fifteenth pass). Each arena keeps at most this much
  // free at its top; DuckDB allocates through its own jemalloc, so this is Node's and the
  // exporter's memory only. (256 MiB, tried before, kept up to that much per arena.)
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  exports.Set("Exporter", Exporter::Define(env));
  exports.Set("resultError", Napi::Function::New(env, ResultError));
  DefineArrowIngest(env, exports);
  DefineSketchAggregates(env, exports);
  DefineLogsScan(env, exports);
  DefineLogsSeal(env, exports);
  DefineOtlpLogsTable(env, exports);
  DefinePayloadZstd(env, exports);
  DefineGroupWrite(env, exports);
  DefineThreadPriority(env, exports);
  DefineTailRows(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(arrow_export, Init)
