// The stored payload's codec, both ways (issue 16): brotli quality 0, window 2^18 (the 0xcf payloads ingestion
// writes and the ordered read's decode thread decompresses) against the zstd and lz4 that libduckdb.so bundles and
// exports (duckdb_zstd::, duckdb_lz4::; every Orrery server loads that library, so neither would be a new
// dependency). Prints each codec's payload bytes per record, encode and decode thread-CPU µs per record, and the
// decode's ratio to brotli's, over bodies of the bench's load generator (variants.mjs --prepare writes them).
//
//   node bench/materialization/variants.mjs --prepare /tmp/codecs --payloads 64
//   L=node_modules/@duckdb/node-bindings-linux-x64
//   g++ -O2 -std=c++17 bench/materialization/codecs.cc -o /tmp/codecs/codecs -lbrotlienc -lbrotlidec -L$L -l:libduckdb.so -Wl,-rpath,$PWD/$L
//   /tmp/codecs/codecs /tmp/codecs/contents.otlp /tmp/codecs/sizes.json
#include <brotli/decode.h>
#include <brotli/encode.h>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace duckdb_zstd {
struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;
enum ZSTD_cParameter : int {};
ZSTD_CCtx_s *ZSTD_createCCtx();
ZSTD_DCtx_s *ZSTD_createDCtx();
size_t ZSTD_CCtx_setParameter(ZSTD_CCtx_s *, ZSTD_cParameter, int);
size_t ZSTD_compress2(ZSTD_CCtx_s *, void *, size_t, const void *, size_t);
size_t ZSTD_decompressDCtx(ZSTD_DCtx_s *, void *, size_t, const void *, size_t);
size_t ZSTD_compress(void *dst, size_t capacity, const void *src, size_t size, int level);
size_t ZSTD_decompress(void *dst, size_t capacity, const void *src, size_t size);
}  // namespace duckdb_zstd
namespace duckdb_lz4 {
int LZ4_compress_default(const char *src, char *dst, int size, int capacity);
int LZ4_decompress_safe(const char *src, char *dst, int size, int capacity);
}  // namespace duckdb_lz4

namespace {

double ThreadCpu() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

struct Codec {
  std::string name;
  std::function<std::string(const std::string &)> encode;
  // Decodes into out (sized to the content), returning the length it found.
  std::function<size_t(const std::string &, std::string &)> decode;
};

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "codecs <contents.otlp> <sizes.json>\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::stringstream read;
  read << file.rdbuf();
  const std::string all = read.str();
  std::ifstream sizes_file(argv[2]);
  std::string text((std::istreambuf_iterator<char>(sizes_file)), std::istreambuf_iterator<char>());
  for (char &c : text)
    if (c == '[' || c == ']' || c == ',') c = ' ';
  std::istringstream numbers(text);
  std::vector<std::string> bodies;
  size_t at = 0;
  for (size_t n; numbers >> n; at += n) bodies.push_back(all.substr(at, n));
  const double records = 1000.0 * static_cast<double>(bodies.size());  // the load generator's 1,000 per request

  constexpr int kDecodeRounds = 10;
  std::vector<Codec> codecs;
  codecs.push_back({"brotli q0 w18",
                    [](const std::string &b) {
                      size_t n = BrotliEncoderMaxCompressedSize(b.size());
                      std::string out(n, '\0');
                      BrotliEncoderCompress(0, 18, BROTLI_MODE_GENERIC, b.size(),
                                            reinterpret_cast<const uint8_t *>(b.data()), &n,
                                            reinterpret_cast<uint8_t *>(out.data()));
                      out.resize(n);
                      return out;
                    },
                    [](const std::string &c, std::string &out) {
                      size_t n = out.size();
                      BrotliDecoderDecompress(c.size(), reinterpret_cast<const uint8_t *>(c.data()), &n,
                                              reinterpret_cast<uint8_t *>(out.data()));
                      return n;
                    }});
  for (const int level : {-1, 1, 3})
    codecs.push_back({"zstd " + std::to_string(level),
                      [level](const std::string &b) {
                        std::string out(b.size() + 1024, '\0');
                        out.resize(duckdb_zstd::ZSTD_compress(out.data(), out.size(), b.data(), b.size(), level));
                        return out;
                      },
                      [](const std::string &c, std::string &out) {
                        return duckdb_zstd::ZSTD_decompress(out.data(), out.size(), c.data(), c.size());
                      }});
  // What ingestion stores (src/engine/native/payload-zstd.cc): level 1, a 2^10 hash table, contexts kept; and the
  // same at zstd's negative ("fast") levels, which write the same frames (no new payload mark) for fewer CPU µs.
  static duckdb_zstd::ZSTD_DCtx_s *dctx = duckdb_zstd::ZSTD_createDCtx();
  for (const int level : {1, -1, -2, -3, -5}) {
    duckdb_zstd::ZSTD_CCtx_s *cctx = duckdb_zstd::ZSTD_createCCtx();  // one per codec, kept to the end
    duckdb_zstd::ZSTD_CCtx_setParameter(cctx, duckdb_zstd::ZSTD_cParameter{100}, level);  // ZSTD_c_compressionLevel
    duckdb_zstd::ZSTD_CCtx_setParameter(cctx, duckdb_zstd::ZSTD_cParameter{102}, 10);     // ZSTD_c_hashLog
    codecs.push_back({"zstd " + std::to_string(level) + " h10 kept",
                      [cctx](const std::string &b) {
                        std::string out(b.size() + 1024, '\0');
                        out.resize(duckdb_zstd::ZSTD_compress2(cctx, out.data(), out.size(), b.data(), b.size()));
                        return out;
                      },
                      [](const std::string &c, std::string &out) {
                        return duckdb_zstd::ZSTD_decompressDCtx(dctx, out.data(), out.size(), c.data(), c.size());
                      }});
  }
  codecs.push_back({"lz4",
                    [](const std::string &b) {
                      std::string out(b.size() + b.size() / 200 + 1024, '\0');
                      out.resize(static_cast<size_t>(duckdb_lz4::LZ4_compress_default(
                          b.data(), out.data(), static_cast<int>(b.size()), static_cast<int>(out.size()))));
                      return out;
                    },
                    [](const std::string &c, std::string &out) {
                      return static_cast<size_t>(duckdb_lz4::LZ4_decompress_safe(
                          c.data(), out.data(), static_cast<int>(c.size()), static_cast<int>(out.size())));
                    }});

  std::printf("%zu bodies, %.0f records, %.1f B/record as protobuf\n", bodies.size(), records,
              static_cast<double>(all.size()) / records);
  std::printf("%-18s %9s %14s %14s %16s\n", "codec", "B/record", "encode us/rec", "decode us/rec", "decode / brotli");
  double brotli_decode = 0;
  for (const Codec &codec : codecs) {
    std::vector<std::string> stored;
    size_t bytes = 0;
    for (const std::string &b : bodies) {
      stored.push_back(codec.encode(b));
      bytes += stored.back().size();
    }
    const double t0 = ThreadCpu();  // encode timed after a first pass, as decode is, over the same rounds
    for (int r = 0; r < kDecodeRounds; r++)
      for (const std::string &b : bodies) codec.encode(b);
    const double encode = (ThreadCpu() - t0) / kDecodeRounds;
    std::string out;
    const double t1 = ThreadCpu();
    for (int r = 0; r < kDecodeRounds; r++)
      for (size_t i = 0; i < stored.size(); i++) {
        out.resize(bodies[i].size());
        if (codec.decode(stored[i], out) != bodies[i].size() || out != bodies[i]) {
          std::fprintf(stderr, "%s: body %zu does not decode to itself\n", codec.name.c_str(), i);
          return 1;
        }
      }
    const double decode = (ThreadCpu() - t1) / kDecodeRounds;
    if (brotli_decode == 0) brotli_decode = decode;
    std::printf("%-18s %9.1f %14.3f %14.3f %15.2fx\n", codec.name.c_str(), static_cast<double>(bytes) / records,
                encode / records * 1e6, decode / records * 1e6, decode / brotli_decode);
  }
  return 0;
}
