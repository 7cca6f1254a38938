// writeSynced(fd, parts): a commit group's object (src/lakehouse/file-object-store.ts, putNew) written at the start of
// its open file, fsynced, its link count read and the file closed, all on one libuv worker thread. The same calls in
// the same order as the JavaScript path (writev, fsync, fstat, close); what changes is where the writev's copy of the
// group's payloads into the page cache runs (~6 % of the event loop's samples at 4 senders, bench/ingestion/PROFILE.md)
// and that the event loop makes one call and gets one answer instead of a writev, an fsync's trip, an fstat and a close.
#include "group-write.h"

#include <errno.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

#include <climits>
#include <string>
#include <vector>

namespace {

class WriteSyncedWorker : public Napi::AsyncWorker {
 public:
  WriteSyncedWorker(Napi::Env env, int fd, Napi::Array parts)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), fd_(fd), parts_(Napi::Persistent(parts)) {
    // The parts' bytes stay where they are while the array holding them is referenced: V8 does not move an
    // ArrayBuffer's backing store.
    for (uint32_t i = 0; i < parts.Length(); i++) {
      Napi::Uint8Array part = parts.Get(i).As<Napi::Uint8Array>();
      iov_.push_back({part.Data(), part.ByteLength()});
      size_ += part.ByteLength();
    }
  }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    // Every byte written, or the error: a short write resumes where it stopped, and a write of nothing fails the
    // object as a short write did before.
    size_t written = 0;
    size_t first = 0;
    while (written < size_ && errno_ == 0) {
      // At most IOV_MAX parts a call (a group of more payloads takes several).
      int count = static_cast<int>(iov_.size() - first < IOV_MAX ? iov_.size() - first : IOV_MAX);
      ssize_t n = pwritev(fd_, iov_.data() + first, count, static_cast<off_t>(written));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Fail("write", errno);
      } else if (n == 0) {
        short_ = true;
        break;
      } else {
        written += n;
        for (size_t left = n; left > 0 && first < iov_.size();) {
          size_t step = left < iov_[first].iov_len ? left : iov_[first].iov_len;
          iov_[first].iov_base = static_cast<uint8_t *>(iov_[first].iov_base) + step;
          iov_[first].iov_len -= step;
          left -= step;
          if (iov_[first].iov_len == 0) first++;
        }
      }
    }
    if (!short_ && errno_ == 0 && fsync(fd_) != 0) Fail("fsync", errno);
    struct stat status;
    if (!short_ && errno_ == 0) {
      if (fstat(fd_, &status) != 0)
        Fail("fstat", errno);
      else
        nlink_ = status.st_nlink;
    }
    // Closed once whatever happened (Linux frees the descriptor even when close fails); its error counts only when
    // nothing failed before it.
    if (close(fd_) != 0 && !short_ && errno_ == 0) Fail("close", errno);
    written_ = written;
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (short_) {
      deferred_.Reject(Napi::Error::New(env, "short write: " + std::to_string(written_) + " of " +
                                                 std::to_string(size_) + " bytes")
                           .Value());
      return;
    }
    if (errno_ != 0) {
      // As Node's fs errors: code, errno (negative) and syscall, which callers read.
      const char *name = strerrorname_np(errno_);
      std::string code = name ? name : "E" + std::to_string(errno_);
      Napi::Error error = Napi::Error::New(env, code + ": " + strerror(errno_) + ", " + syscall_);
      error.Set("code", Napi::String::New(env, code));
      error.Set("errno", Napi::Number::New(env, -errno_));
      error.Set("syscall", Napi::String::New(env, syscall_));
      deferred_.Reject(error.Value());
      return;
    }
    deferred_.Resolve(Napi::Number::New(env, static_cast<double>(nlink_)));
  }

  void OnError(const Napi::Error &error) override { deferred_.Reject(error.Value()); }

 private:
  void Fail(const char *syscall, int number) {
    errno_ = number;
    syscall_ = syscall;
  }

  Napi::Promise::Deferred deferred_;
  int fd_;
  Napi::Reference<Napi::Array> parts_;
  std::vector<struct iovec> iov_;
  size_t size_ = 0;
  size_t written_ = 0;
  bool short_ = false;
  int errno_ = 0;
  const char *syscall_ = "";
  unsigned long nlink_ = 0;
};

Napi::Value WriteSynced(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() != 2 || !info[0].IsNumber() || !info[1].IsArray())
    throw Napi::TypeError::New(env, "writeSynced(fd: number, parts: Uint8Array[])");
  Napi::Array parts = info[1].As<Napi::Array>();
  for (uint32_t i = 0; i < parts.Length(); i++) {
    Napi::Value part = parts.Get(i);
    if (!part.IsTypedArray() || part.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
      throw Napi::TypeError::New(env, "writeSynced: every part must be a Uint8Array");
  }
  auto *worker = new WriteSyncedWorker(env, info[0].As<Napi::Number>().Int32Value(), parts);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

void DefineGroupWrite(Napi::Env env, Napi::Object exports) {
  exports.Set("writeSynced", Napi::Function::New(env, WriteSynced));
}
