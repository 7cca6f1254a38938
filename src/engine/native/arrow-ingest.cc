// Hands Arrow record batches that JavaScript decoded to DuckDB as an Arrow stream (bulk ingest).
//
// The JavaScript path turns every value into a DuckDB value object and appends it; this one gives
// DuckDB the batches' buffers through the Arrow C data interface, so `INSERT ... SELECT FROM` the
// stream runs DuckDB's own Arrow scan on its worker threads while the next batches arrive. The
// stream is registered with duckdb_arrow_scan (a view over DuckDB's `arrow_scan`). DuckDB pulls
// batches from a small queue; JavaScript pushes into it and waits when it is full, so the upload
// never sits whole in memory. Buffers are copied on push: a batch then belongs to this side alone
// and DuckDB may release it on any thread.

#include "arrow-ingest.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "duckdb-c-api.h"

namespace {

void ReleaseNothing(ArrowSchema *schema) { schema->release = nullptr; }
void ReleaseChild(ArrowArray *array) { array->release = nullptr; }

// One batch: the root struct array, its children, their buffer pointers and the copied bytes,
// in one object freed by the root's release.
struct OwnedBatch {
  ArrowArray root{};
  std::vector<ArrowArray> children;
  std::vector<ArrowArray *> childPointers;
  std::vector<std::vector<const void *>> buffers;
  uint8_t *bytes = nullptr;

  ~OwnedBatch() { std::free(bytes); }

  static void Release(ArrowArray *array) {
    auto *self = static_cast<OwnedBatch *>(array->private_data);
    for (ArrowArray &child : self->children)
      if (child.release) child.release(&child);
    array->release = nullptr;
    delete self;
  }
};

class ArrowIngest : public Napi::ObjectWrap<ArrowIngest> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "ArrowIngest",
                       {InstanceMethod("push", &ArrowIngest::Push), InstanceMethod("finish", &ArrowIngest::Finish),
                        InstanceMethod("fail", &ArrowIngest::Fail), InstanceMethod("close", &ArrowIngest::Close)});
  }

  // new ArrowIngest(connectionExternal, viewName, formats: string[], names: string[], capacity, onRoom)
  // registers the view on the connection (its default schema: the caller chooses it with USE).
  ArrowIngest(const Napi::CallbackInfo &info) : Napi::ObjectWrap<ArrowIngest>(info) {
    Napi::Env env = info.Env();
    if (info.Length() < 6 || !info[0].IsExternal() || !info[1].IsString() || !info[2].IsArray() ||
        !info[3].IsArray() || !info[4].IsNumber() || !info[5].IsFunction()) {
      throw Napi::TypeError::New(env, "ArrowIngest(connection, view, formats, names, capacity, onRoom)");
    }
    // @duckdb/node-bindings holds a connection as an External over { duckdb_connection }.
    auto *holder = static_cast<duckdb_connection *>(info[0].As<Napi::External<void>>().Data());
    Napi::Array formats = info[2].As<Napi::Array>();
    Napi::Array names = info[3].As<Napi::Array>();
    const uint32_t columns = formats.Length();
    formatStrings_.reserve(columns);
    nameStrings_.reserve(columns);
    for (uint32_t i = 0; i < columns; i++) {
      formatStrings_.push_back(formats.Get(i).As<Napi::String>().Utf8Value());
      nameStrings_.push_back(names.Get(i).As<Napi::String>().Utf8Value());
    }
    childSchemas_.resize(columns);
    for (uint32_t i = 0; i < columns; i++) {
      ArrowSchema &child = childSchemas_[i];
      child.format = formatStrings_[i].c_str();
      child.name = nameStrings_[i].c_str();
      child.flags = 2;  // ARROW_FLAG_NULLABLE
      child.release = ReleaseNothing;
      childSchemaPointers_.push_back(&child);
    }
    schema_.format = "+s";
    schema_.name = "";
    schema_.n_children = columns;
    schema_.children = childSchemaPointers_.data();
    schema_.release = ReleaseNothing;
    capacity_ = size_t(info[4].As<Napi::Number>().Int64Value());
    onRoom_ = Napi::ThreadSafeFunction::New(env, info[5].As<Napi::Function>(), "ArrowIngestRoom", 0, 1);

    stream_.get_schema = GetSchema;
    stream_.get_next = GetNext;
    stream_.get_last_error = GetLastError;
    stream_.release = [](ArrowArrayStream *stream) { stream->release = nullptr; };
    stream_.private_data = this;
    const std::string view = info[1].As<Napi::String>().Utf8Value();
    if (duckdb_arrow_scan(*holder, view.c_str(), &stream_) != DuckDBSuccess) {
      onRoom_.Release();
      throw Napi::Error::New(env, "DuckDB refused the Arrow stream of the ingest");
    }
  }

  ~ArrowIngest() {
    Drop();
    if (!closed_) onRoom_.Release();
  }

  // push(rows, columns: [nullCount, offset, length, ...buffers (Uint8Array | null)][]): copies the
  // batch into the queue; answers whether there is room for another (if not, onRoom is called once
  // there is). A batch pushed after the stream ended or failed is dropped.
  Napi::Value Push(const Napi::CallbackInfo &info) {
    Napi::Env env = info.Env();
    Napi::Array columns = info[1].As<Napi::Array>();
    auto *batch = new OwnedBatch();
    const uint32_t count = columns.Length();
    batch->children.resize(count);
    batch->buffers.resize(count);
    // First pass: total bytes (each buffer padded to 64 for DuckDB's aligned reads).
    size_t total = 0;
    for (uint32_t c = 0; c < count; c++) {
      Napi::Array column = columns.Get(c).As<Napi::Array>();
      for (uint32_t b = 3; b < column.Length(); b++) {
        Napi::Value buffer = column.Get(b);
        if (buffer.IsTypedArray()) total += (buffer.As<Napi::TypedArray>().ByteLength() + 63) & ~size_t(63);
      }
    }
    batch->bytes = static_cast<uint8_t *>(std::aligned_alloc(64, total > 0 ? total : 64));
    if (!batch->bytes) {
      delete batch;
      throw Napi::Error::New(env, "out of memory staging an ingest batch");
    }
    size_t at = 0;
    for (uint32_t c = 0; c < count; c++) {
      Napi::Array column = columns.Get(c).As<Napi::Array>();
      ArrowArray &child = batch->children[c];
      child.null_count = column.Get(0u).As<Napi::Number>().Int64Value();
      child.offset = column.Get(1u).As<Napi::Number>().Int64Value();
      child.length = column.Get(2u).As<Napi::Number>().Int64Value();
      std::vector<const void *> &pointers = batch->buffers[c];
      for (uint32_t b = 3; b < column.Length(); b++) {
        Napi::Value buffer = column.Get(b);
        if (!buffer.IsTypedArray()) {
          pointers.push_back(nullptr);
          continue;
        }
        Napi::TypedArray typed = buffer.As<Napi::TypedArray>();
        const uint8_t *source = static_cast<const uint8_t *>(typed.ArrayBuffer().Data()) + typed.ByteOffset();
        std::memcpy(batch->bytes + at, source, typed.ByteLength());
        pointers.push_back(batch->bytes + at);
        at += (typed.ByteLength() + 63) & ~size_t(63);
      }
      child.n_buffers = int64_t(pointers.size());
      child.buffers = pointers.data();
      child.release = ReleaseChild;
      child.private_data = nullptr;
      batch->childPointers.push_back(&child);
    }
    ArrowArray &root = batch->root;
    root.length = info[0].As<Napi::Number>().Int64Value();
    root.null_count = 0;
    root.n_buffers = 1;
    static const void *noValidity[1] = {nullptr};
    root.buffers = noValidity;
    root.n_children = count;
    root.children = batch->childPointers.data();
    root.release = OwnedBatch::Release;
    root.private_data = batch;

    std::lock_guard<std::mutex> lock(mutex_);
    if (ended_) {
      OwnedBatch::Release(&batch->root);
      return Napi::Boolean::New(env, true);
    }
    queue_.push_back(batch);
    available_.notify_one();
    const bool room = queue_.size() < capacity_;
    if (!room) waiting_ = true;
    return Napi::Boolean::New(env, room);
  }

  // The stream ends after the batches queued.
  Napi::Value Finish(const Napi::CallbackInfo &info) {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
    available_.notify_all();
    return info.Env().Undefined();
  }

  // fail(message): DuckDB's next pull fails with this message (the statement reading the stream fails).
  Napi::Value Fail(const Napi::CallbackInfo &info) {
    std::lock_guard<std::mutex> lock(mutex_);
    ended_ = true;
    error_ = info[0].As<Napi::String>().Utf8Value();
    available_.notify_all();
    return info.Env().Undefined();
  }

  // Frees what is queued and stops calling onRoom; only once no statement reads the stream. Idempotent.
  Napi::Value Close(const Napi::CallbackInfo &info) {
    bool wasOpen;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ended_ = true;
      if (error_.empty()) error_ = "the ingest is closed";
      available_.notify_all();
      wasOpen = !closed_;
      closed_ = true;
    }
    Drop();
    if (wasOpen) onRoom_.Release();
    return info.Env().Undefined();
  }

 private:
  static ArrowIngest *Of(ArrowArrayStream *stream) { return static_cast<ArrowIngest *>(stream->private_data); }

  static int GetSchema(ArrowArrayStream *stream, ArrowSchema *out) {
    *out = Of(stream)->schema_;
    return 0;
  }

  // Called by DuckDB's scan threads (one at a time): waits for a batch, the end, or a failure.
  static int GetNext(ArrowArrayStream *stream, ArrowArray *out) {
    ArrowIngest *self = Of(stream);
    std::unique_lock<std::mutex> lock(self->mutex_);
    self->available_.wait(lock, [self] { return !self->queue_.empty() || self->ended_; });
    if (!self->error_.empty()) return 5;  // EIO: DuckDB fails the scan with get_last_error's message
    if (self->queue_.empty()) {
      out->release = nullptr;  // the end of the stream
      return 0;
    }
    OwnedBatch *batch = self->queue_.front();
    self->queue_.pop_front();
    *out = batch->root;
    if (self->waiting_ && self->queue_.size() < self->capacity_) {
      self->waiting_ = false;
      if (!self->closed_) self->onRoom_.NonBlockingCall();
    }
    return 0;
  }

  static const char *GetLastError(ArrowArrayStream *stream) { return Of(stream)->error_.c_str(); }

  void Drop() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (OwnedBatch *batch : queue_) OwnedBatch::Release(&batch->root);
    queue_.clear();
  }

  ArrowArrayStream stream_{};
  ArrowSchema schema_{};
  std::vector<ArrowSchema> childSchemas_;
  std::vector<ArrowSchema *> childSchemaPointers_;
  std::vector<std::string> formatStrings_;
  std::vector<std::string> nameStrings_;
  size_t capacity_ = 4;
  Napi::ThreadSafeFunction onRoom_;

  std::mutex mutex_;  // guards what follows
  bool closed_ = false;
  std::condition_variable available_;
  std::deque<OwnedBatch *> queue_;
  bool ended_ = false;
  bool waiting_ = false;
  std::string error_;
};

}  // namespace

void DefineArrowIngest(Napi::Env env, Napi::Object exports) { exports.Set("ArrowIngest", ArrowIngest::Define(env)); }
