// The zstd codec of stored logs payloads (issue 16): a PROTOBUF_ZSTD_MARK payload is the mark, the content's
// length as a varint, then one zstd frame. zstd is the copy libduckdb.so bundles and exports (duckdb_zstd::),
// which every Orrery server loads and this addon links, so reading a lake never needs a library a server may lack.
// Against brotli quality 0 (the 0xcf payloads), over the bench's loadgen bodies (bench/materialization/codecs.cc):
// 32.7 against 40.1 bytes per record, the same encode CPU on the ack path (0.22-0.24 µs per record each, with
// the context kept per thread and a 2^10 hash table, where zstd's defaults for level 1 cost 0.30), and a third
// of brotli's decode CPU on the materializer's decode thread (0.11 against 0.34 µs per record).

#include "payload-zstd.h"

namespace duckdb_zstd {  // zstd.h, as far as this file uses it (the header is not installed with libduckdb)
struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;
enum ZSTD_cParameter : int {};
size_t ZSTD_compressBound(size_t size);
ZSTD_CCtx_s *ZSTD_createCCtx();
size_t ZSTD_freeCCtx(ZSTD_CCtx_s *context);
size_t ZSTD_CCtx_setParameter(ZSTD_CCtx_s *context, ZSTD_cParameter parameter, int value);
size_t ZSTD_compress2(ZSTD_CCtx_s *context, void *out, size_t room, const void *in, size_t size);
ZSTD_DCtx_s *ZSTD_createDCtx();
size_t ZSTD_freeDCtx(ZSTD_DCtx_s *context);
size_t ZSTD_decompressDCtx(ZSTD_DCtx_s *context, void *out, size_t room, const void *in, size_t size);
unsigned ZSTD_isError(size_t code);
unsigned long long ZSTD_getFrameContentSize(const void *in, size_t size);
}  // namespace duckdb_zstd

namespace {

namespace z = duckdb_zstd;
constexpr z::ZSTD_cParameter kCompressionLevel{100};  // ZSTD_c_compressionLevel
constexpr z::ZSTD_cParameter kHashLog{102};           // ZSTD_c_hashLog
// Level 1 with a hash table of 2^10 entries (4 KiB, in L1 cache) instead of level 1's 2^13-2^14: 0.22-0.24
// against 0.30 µs per record to compress, for 32.7 against 32.2 bytes per record.
constexpr int kLevel = 1;
constexpr int kHashLogValue = 10;

// One context per thread (libuv's workers, DuckDB's), made once: a new one per payload costs its allocation
// and initialisation each time (0.27 against 0.25 µs per record at level -1).
struct Contexts {
  std::unique_ptr<z::ZSTD_CCtx_s, size_t (*)(z::ZSTD_CCtx_s *)> compress{nullptr, z::ZSTD_freeCCtx};
  std::unique_ptr<z::ZSTD_DCtx_s, size_t (*)(z::ZSTD_DCtx_s *)> decompress{nullptr, z::ZSTD_freeDCtx};
};
thread_local Contexts contexts;

z::ZSTD_CCtx_s *CompressContext() {
  if (!contexts.compress) {
    contexts.compress.reset(z::ZSTD_createCCtx());
    if (!contexts.compress) return nullptr;
    // Parameters stay set across compressions of the same context (ZSTD_compress2 resets only the session).
    if (z::ZSTD_isError(z::ZSTD_CCtx_setParameter(contexts.compress.get(), kCompressionLevel, kLevel)) ||
        z::ZSTD_isError(z::ZSTD_CCtx_setParameter(contexts.compress.get(), kHashLog, kHashLogValue))) {
      contexts.compress.reset();
      return nullptr;
    }
  }
  return contexts.compress.get();
}

z::ZSTD_DCtx_s *DecompressContext() {
  if (!contexts.decompress) contexts.decompress.reset(z::ZSTD_createDCtx());
  return contexts.decompress.get();
}

// zstdPayload(content: Uint8Array): Buffer | null: a protobuf body as a PROTOBUF_ZSTD_MARK payload, compressed
// synchronously (the ack path's pieces of a body of several resources, which the seal leaves whole); null when zstd
// fails (brotli is used then).
Napi::Value ZstdPayloadOf(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "zstdPayload(content: Uint8Array)");
  Napi::Uint8Array content = info[0].As<Napi::Uint8Array>();
  std::unique_ptr<uint8_t[]> payload;
  size_t size = 0;
  if (!ZstdPayload(content.Data(), content.ByteLength(), payload, size)) return env.Null();
  return Napi::Buffer<uint8_t>::Copy(env, payload.get(), size);
}

// zstdContent(stream: Uint8Array, size: number): Buffer: the content of a PROTOBUF_ZSTD_MARK payload's frame, which
// must hold `size` bytes (payloadContent's synchronous read); throws when it is damaged.
Napi::Value ZstdContent(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array || !info[1].IsNumber())
    throw Napi::TypeError::New(env, "zstdContent(stream: Uint8Array, size: number)");
  Napi::Uint8Array stream = info[0].As<Napi::Uint8Array>();
  const double size = info[1].As<Napi::Number>().DoubleValue();
  if (!(size >= 0 && size <= static_cast<double>(SIZE_MAX / 2)) ||
      !ZstdStates(stream.Data(), stream.ByteLength(), static_cast<size_t>(size)))
    throw Napi::Error::New(env, "a compressed payload is damaged");
  Napi::Buffer<uint8_t> content = Napi::Buffer<uint8_t>::New(env, static_cast<size_t>(size));
  if (!ZstdDecompress(stream.Data(), stream.ByteLength(), content.Data(), content.Length()))
    throw Napi::Error::New(env, "a compressed payload is damaged");
  return content;
}

}  // namespace

bool ZstdPayload(const uint8_t *in, size_t n, std::unique_ptr<uint8_t[]> &out, size_t &size) {
  z::ZSTD_CCtx_s *context = CompressContext();
  if (!context) return false;
  const size_t bound = z::ZSTD_compressBound(n);
  // The mark, the body's length (a varint: at most 10 bytes), then the frame.
  out.reset(new uint8_t[11 + bound]);
  size_t head = 0;
  out[head++] = kProtobufZstdMark;
  for (uint64_t v = n;; v >>= 7) {
    out[head++] = static_cast<uint8_t>(v < 0x80 ? v : (v & 0x7f) | 0x80);
    if (v < 0x80) break;
  }
  const size_t written = z::ZSTD_compress2(context, out.get() + head, bound, in, n);
  if (z::ZSTD_isError(written)) {
    out.reset();
    return false;
  }
  size = head + written;
  return true;
}

bool ZstdStates(const uint8_t *in, size_t n, size_t size) {
  return z::ZSTD_getFrameContentSize(in, n) == static_cast<unsigned long long>(size);
}

bool ZstdDecompress(const uint8_t *in, size_t n, uint8_t *out, size_t size) {
  z::ZSTD_DCtx_s *context = DecompressContext();
  if (!context) return false;
  // A frame holding more than `size` fails as too large for its room, one holding less is told by `got`.
  const size_t got = z::ZSTD_decompressDCtx(context, out, size, in, n);
  return !z::ZSTD_isError(got) && got == size;
}

void DefinePayloadZstd(Napi::Env env, Napi::Object exports) {
  exports.Set("zstdPayload", Napi::Function::New(env, ZstdPayloadOf));
  exports.Set("zstdContent", Napi::Function::New(env, ZstdContent));
}
