// What the ack path does to an OTLP logs protobuf body before storing it (issue 16), in one trip to a libuv
// worker thread instead of on the event loop: the validating scan (logs-scan.cc), then, for a body of one
// ResourceLogs (stored whole, the common case), the sha256 of its content (the block id derives from it) and
// its zstd compression (payload-zstd.cc: after the 0xd7 mark and the body's length as a varint). On the event loop
// these three took ~45 % of its busy time at 16 senders (the compression 22 %, the scan 12 %, sha256 11 %), and
// the event loop is what limits records/s: here they run beside it, on the second core. The id stays what the
// JavaScript path gives (sha256 of the same bytes); the JavaScript path compresses with brotli instead (its
// 0xcf payloads), which nothing depends on: a payload is read by decompressing it as its mark says.
//
// sha256 is the copy Node itself links (its OpenSSL), found at load time with dlsym: where this Node does not
// export it, sealLogs is not defined and the JavaScript path runs as before.

#define NAPI_VERSION 8
#include <dlfcn.h>
#include <napi.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "logs-json.h"
#include "logs-scan.h"
#include "logs-seal.h"
#include "payload-zstd.h"

namespace {

// openssl/sha.h, as far as this file uses it (its header is not installed with Node).
using Sha256Fn = unsigned char *(*)(const unsigned char *data, size_t size, unsigned char *digest);
constexpr size_t kDigestBytes = 32;

struct Library {
  Sha256Fn sha256;
};

const Library *FindLibrary() {
  static const Library library = {reinterpret_cast<Sha256Fn>(dlsym(RTLD_DEFAULT, "SHA256"))};
  return library.sha256 ? &library : nullptr;
}

class SealWorker : public Napi::AsyncWorker {
 public:
  SealWorker(Napi::Env env, const Library &library, Napi::Uint8Array body, bool compress, bool json)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        library_(library),
        body_(Napi::Persistent(body)),  // keeps the bytes alive (and where they are) until OnOK
        data_(body.Data()),
        size_(body.ByteLength()),
        compress_(compress),
        json_(json) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    if (json_) {
      // An OTLP/JSON body is sealed as the protobuf it stands for (logs-json.cc), or not at all.
      proto_.reset(new std::vector<uint8_t>());
      if (!LogsJsonToProtobuf(data_, size_, *proto_)) {
        proto_.reset();
        return;
      }
      data_ = proto_->data();
      size_ = proto_->size();
    }
    accepted_ = ScanLogsBody(data_, size_, scan_);
    // Only a body of one ResourceLogs with records is stored whole; the blocks of others are its pieces.
    if (!accepted_ || scan_.size() != 11 || scan_[6] == 0) return;
    library_.sha256(data_, size_, digest_);
    hashed_ = true;
    if (!compress_) return;
    if (!ZstdPayload(data_, size_, payload_, payload_size_)) return;  // no payload: the JavaScript path compresses it
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object result = Napi::Object::New(env);
    if (accepted_) {
      Napi::Float64Array scan = Napi::Float64Array::New(env, scan_.size());
      if (!scan_.empty()) std::memcpy(scan.Data(), scan_.data(), scan_.size() * sizeof(double));
      result.Set("scan", scan);
    } else {
      result.Set("scan", env.Null());
    }
    if (json_ && !(accepted_ && proto_)) result.Set("body", env.Null());
    if (accepted_ && proto_) {
      // Handed over without a copy: the buffer owns the vector from here.
      std::vector<uint8_t> *proto = proto_.release();
      if (proto->empty()) {
        result.Set("body", Napi::Buffer<uint8_t>::New(env, 0));
        delete proto;
      } else {
        result.Set("body", Napi::Buffer<uint8_t>::New(env, proto->data(), proto->size(),
                                                      [](Napi::Env, uint8_t *, std::vector<uint8_t> *owned) { delete owned; },
                                                      proto));
      }
    }
    if (hashed_) result.Set("digest", Napi::Buffer<uint8_t>::Copy(env, digest_, kDigestBytes));
    if (payload_) result.Set("payload", Napi::Buffer<uint8_t>::Copy(env, payload_.get(), payload_size_));
    deferred_.Resolve(result);
  }

  void OnError(const Napi::Error &error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  const Library &library_;
  Napi::Reference<Napi::Uint8Array> body_;
  const uint8_t *data_;
  size_t size_;
  bool compress_;
  bool json_;
  std::unique_ptr<std::vector<uint8_t>> proto_;  // a JSON body's protobuf bytes, which data_ then points at
  bool accepted_ = false;
  std::vector<double> scan_;
  bool hashed_ = false;
  unsigned char digest_[kDigestBytes];
  std::unique_ptr<uint8_t[]> payload_;
  size_t payload_size_ = 0;
};

// sealLogs(body: Uint8Array, compress: boolean): Promise<{ scan: Float64Array | null, digest?: Buffer,
// payload?: Buffer }>: scan as scanLogs gives it; digest (sha256 of the body) and payload (the 0xd7 mark, the
// body's length and its zstd frame, when `compress`) only for a body of one ResourceLogs with records.
Napi::Value SealLogs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || !info[1].IsBoolean())
    throw Napi::TypeError::New(env, "sealLogs(body: Uint8Array, compress: boolean)");
  auto *worker = new SealWorker(env, *FindLibrary(), info[0].As<Napi::Uint8Array>(),
                                info[1].As<Napi::Boolean>().Value(), false);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// sealJsonLogs(body: Uint8Array): Promise<{ body: Buffer | null, scan, digest?, payload? }>: an OTLP/JSON logs body
// transcoded to protobuf (logs-json.cc), then sealed as sealLogs(body, true) seals that; body and scan are null
// when either the transcoder or the scan does not vouch for it (the JSON is then decoded the slow way).
Napi::Value SealJsonLogs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "sealJsonLogs(body: Uint8Array)");
  auto *worker = new SealWorker(env, *FindLibrary(), info[0].As<Napi::Uint8Array>(), true, true);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

void DefineLogsSeal(Napi::Env env, Napi::Object exports) {
  if (!FindLibrary()) return;
  exports.Set("sealLogs", Napi::Function::New(env, SealLogs));
  exports.Set("sealJsonLogs", Napi::Function::New(env, SealJsonLogs));
}
