// Materializing OTLP logs payloads stored as received (issue 16): a DuckDB table function,
// __orrery_otlp_logs(file VARCHAR, sizes UBIGINT[]), that reads the payloads laid one after the other in a
// file (each as stored: brotli after the marker byte 0xce or after 0xcf and the length, zstd after 0xd7 and the
// length, gzip as the client sent it, or plain protobuf; decompressed here, on the thread that decodes it),
// decodes each ExportLogsServiceRequest straight into DuckDB vectors on DuckDB's own threads (one payload
// per thread at a time), and yields the columns read_json gives from the NDJSON lines of the JavaScript
// path (payloadLines: decodeLogs + logLine in src/ingestion): time BIGINT, target, level INTEGER, msg,
// properties (JSON: the text json() makes of JSON.stringify's text of the attributes, as read_json's JSON
// column holds it), trace_id, span_id, and filename (`<file>#<index of the payload>`: what
// read_json's filename = true is to a file). Values follow JavaScript's semantics exactly where they
// show: an object's key order (integer-like keys first, ascending; the last of duplicate keys wins at the
// first one's place), Number's toString for doubles, int64 values past 2^53 as decimal strings, bytes as
// base64. A payload is decoded only when it passes the validating scan ingestion ran on it
// (logs-scan.cc); one that does not, or cannot be decompressed, fails the statement with its name, as a
// damaged NDJSON payload fails read_json, so the materializer quarantines its block.
// __orrery_otlp_logs_ordered (below) gives the same rows in time order without a sort.
// They read only files under the folder they were registered with (the materializer's scratch folder).

#define NAPI_VERSION 8
#include <dlfcn.h>
#include <fcntl.h>
#include <napi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "duckdb-c-api.h"
#include "logs-scan.h"
#include "otlp-logs-table.h"
#include "parquet-writer.h"
#include "payload-zstd.h"

namespace {

// brotli/decode.h and zlib.h, as far as this file uses them: the copies Node itself links (its zlib module's),
// found with dlsym, as logs-seal.cc finds the encoder (their headers are not installed with Node). Where this
// Node does not export them, compressed payloads are not read here (storedLogsPayloadIsProtobuf says false, and
// the JavaScript path decodes them).
struct ZStream {  // z_stream
  const uint8_t *next_in;
  unsigned avail_in;
  unsigned long total_in;
  uint8_t *next_out;
  unsigned avail_out;
  unsigned long total_out;
  const char *msg;
  void *state;
  void *zalloc;
  void *zfree;
  void *opaque;
  int data_type;
  unsigned long adler;
  unsigned long reserved;
};
struct Decompressors {
  void *(*brotli_create)(void *alloc_func, void *free_func, void *opaque);
  void (*brotli_destroy)(void *state);
  int (*brotli_stream)(void *state, size_t *available_in, const uint8_t **next_in, size_t *available_out,
                       uint8_t **next_out, size_t *total_out);
  int (*inflate_init)(ZStream *strm, int window_bits, const char *version, int stream_size);
  int (*inflate)(ZStream *strm, int flush);
  int (*inflate_end)(ZStream *strm);
  int (*inflate_reset)(ZStream *strm);
};

template <typename F>
void Find(F &f, const char *name) {
  f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

const Decompressors *FindDecompressors() {
  static const Decompressors *found = [] {
    static Decompressors d;
    Find(d.brotli_create, "BrotliDecoderCreateInstance");
    Find(d.brotli_destroy, "BrotliDecoderDestroyInstance");
    Find(d.brotli_stream, "BrotliDecoderDecompressStream");
    Find(d.inflate_init, "inflateInit2_");
    Find(d.inflate, "inflate");
    Find(d.inflate_end, "inflateEnd");
    Find(d.inflate_reset, "inflateReset");
    const bool all = d.brotli_create && d.brotli_destroy && d.brotli_stream && d.inflate_init && d.inflate &&
                     d.inflate_end && d.inflate_reset;
    return all ? &d : nullptr;
  }();
  return found;
}

constexpr int kBrotliError = 0, kBrotliSuccess = 1, kBrotliNeedsMoreInput = 2;
constexpr int kZOk = 0, kZStreamEnd = 1, kZBufError = -5, kZNoFlush = 0;
constexpr uint8_t kBrotliMark = 0xce;          // BROTLI_MARK (src/ingestion/ingestion-service.ts)
constexpr uint8_t kProtobufBrotliMark = 0xcf;  // PROTOBUF_BROTLI_MARK: the content's length follows, then brotli

struct Failure {
  std::string message;
};

bool IsGzip(const uint8_t *p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

// Decompresses a brotli stream into out, at most `limit` bytes (0: all); throws Failure when damaged.
void Brotli(const Decompressors &d, const uint8_t *in, size_t n, std::string &out, size_t limit) {
  std::unique_ptr<void, void (*)(void *)> state(d.brotli_create(nullptr, nullptr, nullptr), d.brotli_destroy);
  if (!state) throw Failure{"out of memory for the brotli decoder"};
  size_t available_in = n;
  const uint8_t *next_in = in;
  out.clear();
  for (;;) {
    const size_t at = out.size();
    out.resize(limit ? limit : std::max<size_t>(at * 2, 4 * n + 4096));
    size_t available_out = out.size() - at;
    uint8_t *next_out = reinterpret_cast<uint8_t *>(&out[at]);
    const int result = d.brotli_stream(state.get(), &available_in, &next_in, &available_out, &next_out, nullptr);
    out.resize(out.size() - available_out);
    if (result == kBrotliSuccess || (limit && out.size() >= limit)) return;
    if (result == kBrotliError) throw Failure{"the brotli stream is damaged"};
    if (result == kBrotliNeedsMoreInput) throw Failure{"the brotli stream is cut short"};
  }
}

// Decompresses gzip members as Node's gunzipSync does (a member that follows starts with 0x1f; other
// trailing bytes end the data), at most `limit` bytes (0: all); throws Failure when damaged.
void Gunzip(const Decompressors &d, const uint8_t *in, size_t n, std::string &out, size_t limit) {
  ZStream z;
  std::memset(&z, 0, sizeof z);
  // 15 + 16: a window of 2^15 and a gzip header; "1": the major version zlib checks.
  if (d.inflate_init(&z, 15 + 16, "1", static_cast<int>(sizeof z)) != kZOk)
    throw Failure{"zlib refused to start inflating"};
  std::unique_ptr<ZStream, int (*)(ZStream *)> end(&z, d.inflate_end);
  z.next_in = in;
  z.avail_in = static_cast<unsigned>(n);
  out.clear();
  for (;;) {
    const size_t at = out.size();
    out.resize(limit ? limit : std::max<size_t>(at * 2, 4 * n + 4096));
    z.next_out = reinterpret_cast<uint8_t *>(&out[at]);
    z.avail_out = static_cast<unsigned>(out.size() - at);
    const int result = d.inflate(&z, kZNoFlush);
    out.resize(out.size() - z.avail_out);
    if (limit && out.size() >= limit) return;
    if (result == kZStreamEnd) {
      if (z.avail_in == 0 || z.next_in[0] != 0x1f) return;
      d.inflate_reset(&z);
    } else if (result == kZBufError && z.avail_in == 0) {
      throw Failure{"the gzip stream is cut short"};
    } else if (result != kZOk && result != kZBufError) {
      throw Failure{std::string("the gzip stream is damaged") + (z.msg ? std::string(": ") + z.msg : "")};
    }
  }
}

// A PROTOBUF_BROTLI_MARK or PROTOBUF_ZSTD_MARK payload's content length (the varint after the mark) and where its
// stream starts.
std::pair<size_t, size_t> ProtobufContentHead(const uint8_t *p, size_t n) {
  uint64_t size = 0;
  for (size_t i = 1; i < n && i <= 7; i++) {
    size |= static_cast<uint64_t>(p[i] & 0x7f) << (7 * (i - 1));
    if (p[i] < 0x80) return {size, i + 1};
  }
  throw Failure{"the compressed payload's length is damaged"};
}

// What a gzip payload that does not hold the length its trailer states fails the ordered read with
// (orderedGzipLengthRefused in src/views/builtin-views.ts).
constexpr const char *kGzipLengthRefused = "a gzip body that does not hold the length its trailer states";

// A gzip body's trailer: its last member's ISIZE, the length of what that member holds modulo 2^32.
size_t GzipTrailerSize(const uint8_t *p, size_t n) {
  if (n < 18) throw Failure{kGzipLengthRefused};
  return static_cast<size_t>(p[n - 4]) | static_cast<size_t>(p[n - 3]) << 8 | static_cast<size_t>(p[n - 2]) << 16 |
         static_cast<size_t>(p[n - 1]) << 24;
}

// A stored payload's content (see payloadContent in src/ingestion): the payload itself, or `buffer` holding
// it decompressed (at most `limit` bytes, 0: all). With `stated`, a gzip body must hold the length its trailer
// states: the materializer sized the ordered read's hold by it (storedProtobufSize), and a client chose those
// bytes (bodies stored as received before ingestion checked them: bytes after the end, several members). At most
// that length and one byte more is inflated, so what the read holds stays within its estimate.
std::pair<const uint8_t *, size_t> Content(const uint8_t *p, size_t n, std::string &buffer, size_t limit,
                                           bool stated = false) {
  const bool gzip = IsGzip(p, n);
  if (!gzip && n > 0 && p[0] == kProtobufZstdMark) {
    const auto [size, start] = ProtobufContentHead(p, n);
    // Decompressed whole (a frame is not read in part here): `limit` only shortens what is returned. The memory is
    // taken once the frame's header states the same length, so a damaged length does not size it alone.
    if (!ZstdStates(p + start, n - start, size)) throw Failure{"the compressed payload's length is damaged"};
    buffer.resize(size);
    if (!ZstdDecompress(p + start, n - start, reinterpret_cast<uint8_t *>(buffer.data()), size))
      throw Failure{"the zstd frame is damaged or does not hold its stated length"};
    if (limit && limit < size) buffer.resize(limit);
    return {reinterpret_cast<const uint8_t *>(buffer.data()), buffer.size()};
  }
  if (!gzip && (n == 0 || (p[0] != kBrotliMark && p[0] != kProtobufBrotliMark))) return {p, n};
  const Decompressors *d = FindDecompressors();
  if (!d) throw Failure{"this Node does not export brotli's decoder and zlib's inflate"};
  if (gzip && stated) {
    const size_t size = GzipTrailerSize(p, n);
    // Deflate expands at most ~1,032-fold: a larger figure is not what the body holds, and is not allocated.
    if (size > 1032 * static_cast<uint64_t>(n) + 4096) throw Failure{kGzipLengthRefused};
    Gunzip(*d, p, n, buffer, size + 1);
    if (buffer.size() != size) throw Failure{kGzipLengthRefused};
  } else if (gzip) {
    Gunzip(*d, p, n, buffer, limit);
  } else if (p[0] == kBrotliMark) {
    Brotli(*d, p + 1, n - 1, buffer, limit);
  } else {
    const auto [size, start] = ProtobufContentHead(p, n);
    // Sized once from the stated length (one byte more tells a longer stream) rather than grown from a guess. A
    // damaged length could ask for more memory than there is (the statement would then fail without naming the
    // payload, and its range never be quarantined): past a 1,024-fold expansion the buffer grows as for 0xce.
    const bool plausible = size < 1024 * static_cast<uint64_t>(n) + 4096;
    Brotli(*d, p + start, n - start, buffer, limit ? std::min(limit, size) : plausible ? size + 1 : 0);
    if (!limit && buffer.size() != size) throw Failure{"the brotli stream does not hold its stated length"};
  }
  return {reinterpret_cast<const uint8_t *>(buffer.data()), buffer.size()};
}

// ---- JavaScript's text of values ----

constexpr char kHex[] = "0123456789abcdef";

// The letter of JSON.stringify's two-character escape of a byte, or 0 when it has none.
char ShortEscape(uint8_t c) {
  static constexpr char kFrom[] = "\"\\\b\f\n\r\t";
  static constexpr char kTo[] = "\"\\bfnrt";
  const char *at = c == 0 ? nullptr : std::strchr(kFrom, c);
  return at ? kTo[at - kFrom] : 0;
}

// How JSON text is written: as JSON.stringify writes it, or as DuckDB's json() writes the value it reads from
// that text (yyjson: an escape's hex digits in upper case, an exponent without '+'; the same text otherwise,
// checked over every byte below 0x80 and 200,000 doubles), so that properties need no json() per row.
enum class Json { kJavaScript, kDuckDb };

// A string as JSON.stringify writes it (valid UTF-8 in, so no lone surrogate to escape), or as json() does.
void JsonString(std::string &out, const uint8_t *s, size_t n, Json style = Json::kJavaScript) {
  const char *hex = style == Json::kDuckDb ? "0123456789ABCDEF" : kHex;
  out.push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    const uint8_t c = s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(reinterpret_cast<const char *>(s + run), i - run);
    run = i + 1;
    out.push_back('\\');
    if (const char letter = ShortEscape(c)) {
      out.push_back(letter);
    } else {
      out.append("u00");
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  out.append(reinterpret_cast<const char *>(s + run), n - run);
  out.push_back('"');
}

// Number.prototype.toString() of a double (ECMAScript's Number::toString: the shortest digits that read
// back to it, in plain notation for exponents -7 < e < 21, else d.ddde±x), or as json() writes it (d.ddde-x, d.dddex).
void JsNumber(std::string &out, double v, Json style = Json::kJavaScript) {
  if (std::isnan(v)) {
    out.append("NaN");
    return;
  }
  if (std::isinf(v)) {
    out.append(v < 0 ? "-Infinity" : "Infinity");
    return;
  }
  if (v == 0) {
    out.push_back('0');
    return;
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const char *p = buf;
  if (*p == '-') {
    out.push_back('-');
    p++;
  }
  char digits[32];
  int k = 0;
  for (; p < r.ptr && *p != 'e'; p++)
    if (*p != '.') digits[k++] = *p;
  int exponent = 0;
  std::from_chars(p + (p[1] == '+' ? 2 : 1), r.ptr, exponent);
  const int n = exponent + 1;  // the position of the decimal point after the first digit
  if (k <= n && n <= 21) {
    out.append(digits, k);
    out.append(n - k, '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, n);
    out.push_back('.');
    out.append(digits + n, k - n);
  } else if (-6 < n && n <= 0) {
    out.append("0.");
    out.append(-n, '0');
    out.append(digits, k);
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits + 1, k - 1);
    }
    out.push_back('e');
    if (n - 1 < 0)
      out.push_back('-');
    else if (style == Json::kJavaScript)
      out.push_back('+');
    out.append(std::to_string(std::abs(n - 1)));
  }
}

void Base64(std::string &out, const uint8_t *s, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    const uint32_t v = (s[i] << 16) | (s[i + 1] << 8) | s[i + 2];
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (i + 1 == n) {
    const uint32_t v = s[i] << 16;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.append("==");
  } else if (i + 2 == n) {
    const uint32_t v = (s[i] << 16) | (s[i + 1] << 8);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back('=');
  }
}

constexpr int64_t kMaxSafe = 9007199254740991;  // Number.MAX_SAFE_INTEGER

// A JavaScript array index (what an object lists first, in ascending order): "0" or digits without a
// leading zero, below 2^32 - 1. Its value, else -1.
int64_t ArrayIndex(const uint8_t *s, size_t n) {
  if (n == 0 || n > 10 || (n > 1 && s[0] == '0')) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v < 4294967295LL ? v : -1;
}

// One log record decoded to the columns' values; strings live in the row set's arena.
struct Span {
  uint32_t offset;
  uint32_t length;
};

constexpr uint32_t kNull = UINT32_MAX;

struct Rows {
  std::vector<int64_t> time;
  std::vector<int32_t> level;
  std::vector<Span> target, msg, properties, trace_id, span_id;
  std::string arena;
  void Clear() {
    time.clear();
    level.clear();
    target.clear();
    msg.clear();
    properties.clear();
    trace_id.clear();
    span_id.clear();
    arena.clear();
  }
  size_t Size() const { return time.size(); }
  // Room for `records` rows and `bytes` of their text.
  void Reserve(size_t records, size_t bytes) {
    time.reserve(records);
    level.reserve(records);
    for (auto *spans : {&target, &msg, &properties, &trace_id, &span_id}) spans->reserve(records);
    arena.reserve(bytes);
  }
};

// Decodes one ExportLogsServiceRequest that passed the scan, so its structure is known good (the reads
// still stay within the buffer).
class Decoder {
 public:
  Decoder(const uint8_t *buf, size_t size, Rows &rows) : buf_(buf), size_(size), rows_(rows) {}

  void Run() {
    while (pos_ < size_) {
      Varint();  // resource_logs = 1
      const size_t end = LengthEnd(size_);
      while (pos_ < end) {
        const uint64_t tag = Varint();
        const size_t e = LengthEnd(end);
        if (tag == ((2 << 3) | 2)) ScopeLogs(e);
        pos_ = e;
      }
    }
  }

 private:
  const uint8_t *buf_;
  size_t size_;
  size_t pos_ = 0;
  Rows &rows_;
  std::string &out_ = rows_.arena;
  Json json_ = Json::kJavaScript;  // kDuckDb while writing properties
  std::vector<std::pair<size_t, size_t>> attributes_;  // a record's, kept from record to record

  uint64_t Varint() {
    uint64_t result = 0;
    for (int i = 0; i < 10; i++) {
      if (pos_ >= size_) throw Failure{"a varint runs past the payload"};
      const uint8_t byte = buf_[pos_++];
      result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
      if (byte < 0x80) return result;
    }
    throw Failure{"a varint is longer than 10 bytes"};
  }

  size_t LengthEnd(size_t limit) {
    const uint64_t length = Varint();
    if (length > limit - pos_) throw Failure{"a field runs past its message"};
    return pos_ + static_cast<size_t>(length);
  }

  uint64_t Fixed64(size_t at) const {
    uint64_t v;
    std::memcpy(&v, buf_ + at, 8);
    return v;  // little-endian hosts only (x86-64, arm64)
  }

  // Skips a field of this wire type, from after its tag.
  void Skip(uint32_t wire, size_t limit) {
    switch (wire) {
      case 0:
        Varint();
        return;
      case 1:
        pos_ += 8;
        break;
      case 5:
        pos_ += 4;
        break;
      default:
        pos_ = LengthEnd(limit);
        return;
    }
    if (pos_ > limit) throw Failure{"a field runs past its message"};
  }

  // Calls f(tag, start, end) for each length-delimited field from pos_ to `end`, the others skipped; pos_
  // moves past each field after the call.
  template <typename F>
  void LengthFields(size_t end, F &&f) {
    while (pos_ < end) {
      const uint64_t tag = Varint();
      if ((tag & 7) != 2) {
        Skip(tag & 7, end);
        continue;
      }
      const size_t e = LengthEnd(end);
      f(tag, pos_, e);
      pos_ = e;
    }
  }

  double Double(size_t end) {
    if (pos_ + 8 > end) throw Failure{"a double runs past its value"};
    double v;
    const uint64_t bits = Fixed64(pos_);
    std::memcpy(&v, &bits, 8);
    return v;
  }

  Span Append(size_t start) const {
    return Span{static_cast<uint32_t>(start), static_cast<uint32_t>(out_.size() - start)};
  }

  void ScopeLogs(size_t end) {
    // The scope may come after the records: its name first.
    const size_t start = pos_;
    std::pair<size_t, size_t> scope_name{0, 0};
    LengthFields(end, [&](uint64_t tag, size_t, size_t e) {
      if (tag != ((1 << 3) | 2)) return;
      LengthFields(e, [&](uint64_t field, size_t from, size_t to) {
        if (field == ((1 << 3) | 2)) scope_name = {from, to};
      });
    });
    pos_ = start;
    LengthFields(end, [&](uint64_t tag, size_t, size_t e) {
      if (tag == ((2 << 3) | 2)) LogRecord(e, scope_name);
    });
  }

  struct Entry {
    size_t key, key_end;
    size_t value, value_end;  // an AnyValue's bytes; value == SIZE_MAX: none (null)
    int64_t index;            // ArrayIndex of the key
    bool text;                // value is a string's bytes (the severity text), not an AnyValue
  };
  // Object's lists, one per depth (AnyValueJson refuses past 64), kept from record to record: an Object calls
  // others only deeper down.
  std::vector<Entry> entries_[66];

  // KeyValue messages as a JavaScript object built from them in order, written as JSON.stringify writes
  // it; `extra`, when set, is the severity text under otel.severity_text, assigned last.
  void Object(const std::vector<std::pair<size_t, size_t>> &key_values, const std::pair<size_t, size_t> *extra,
              int depth) {
    std::vector<Entry> &entries = entries_[depth];
    entries.clear();
    auto add = [&](const Entry &entry) {
      const size_t length = entry.key_end - entry.key;
      for (Entry &seen : entries) {
        if (seen.key_end - seen.key == length && std::memcmp(buf_ + seen.key, buf_ + entry.key, length) == 0) {
          seen.value = entry.value;
          seen.value_end = entry.value_end;
          seen.text = entry.text;
          return;
        }
      }
      entries.push_back(entry);
    };
    static const uint8_t kSeverityKey[] = "otel.severity_text";
    for (const auto &[start, end] : key_values) {
      Entry entry{start, start, SIZE_MAX, SIZE_MAX, -1, false};
      pos_ = start;
      LengthFields(end, [&](uint64_t tag, size_t from, size_t to) {
        if (tag == ((1 << 3) | 2)) {
          entry.key = from;
          entry.key_end = to;
        } else if (tag == ((2 << 3) | 2)) {
          entry.value = from;
          entry.value_end = to;
        }
      });
      entry.index = ArrayIndex(buf_ + entry.key, entry.key_end - entry.key);
      add(entry);
    }
    if (extra) {
      // The key's bytes are not in the payload: compared by hand, then written from kSeverityKey.
      const size_t length = sizeof kSeverityKey - 1;
      bool replaced = false;
      for (Entry &seen : entries) {
        if (seen.key_end - seen.key == length && std::memcmp(buf_ + seen.key, kSeverityKey, length) == 0) {
          seen.value = extra->first;
          seen.value_end = extra->second;
          seen.text = true;
          replaced = true;
        }
      }
      if (!replaced) entries.push_back(Entry{SIZE_MAX, SIZE_MAX, extra->first, extra->second, -1, true});
    }
    // Array indexes first, ascending; the other keys in the order they came (sorted only when there is an index:
    // stable_sort takes a buffer from the heap at every call).
    if (std::any_of(entries.begin(), entries.end(), [](const Entry &e) { return e.index >= 0; }))
      std::stable_sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
        if (a.index < 0 || b.index < 0) return a.index >= 0 && b.index < 0;
        return a.index < b.index;
      });
    out_.push_back('{');
    bool first = true;
    for (const Entry &entry : entries) {
      if (!first) out_.push_back(',');
      first = false;
      if (entry.key == SIZE_MAX)
        JsonString(out_, kSeverityKey, sizeof kSeverityKey - 1, json_);
      else
        JsonString(out_, buf_ + entry.key, entry.key_end - entry.key, json_);
      out_.push_back(':');
      if (entry.text)
        JsonString(out_, buf_ + entry.value, entry.value_end - entry.value, json_);
      else if (entry.value == SIZE_MAX)
        out_.append("null");
      else
        AnyValueJson(entry.value, entry.value_end, depth + 1);
    }
    out_.push_back('}');
  }

  // The messages of field 1 between start and end (the KeyValues of a KeyValueList, the AnyValues of an ArrayValue).
  std::vector<std::pair<size_t, size_t>> KeyValues(size_t start, size_t end) {
    std::vector<std::pair<size_t, size_t>> out;
    pos_ = start;
    LengthFields(end, [&](uint64_t tag, size_t from, size_t to) {
      if (tag == ((1 << 3) | 2)) out.emplace_back(from, to);
    });
    return out;
  }

  // An AnyValue (bytes [start, end)) as JSON.stringify writes what anyValue() returns.
  void AnyValueJson(size_t start, size_t end, int depth) {
    if (depth > 64) throw Failure{"values nested too deep"};
    pos_ = start;
    if (pos_ >= end) {
      out_.append("null");
      return;
    }
    const uint64_t tag = Varint();
    switch (tag) {
      case (1 << 3) | 2: {
        const size_t e = LengthEnd(end);
        JsonString(out_, buf_ + pos_, e - pos_, json_);
        return;
      }
      case (2 << 3) | 0:
        out_.append(static_cast<uint32_t>(Varint()) != 0 ? "true" : "false");
        return;
      case (3 << 3) | 0: {
        const int64_t n = static_cast<int64_t>(Varint());
        if (n >= -kMaxSafe && n <= kMaxSafe) {
          out_.append(std::to_string(n));
        } else {
          out_.push_back('"');
          out_.append(std::to_string(n));
          out_.push_back('"');
        }
        return;
      }
      case (4 << 3) | 1: {
        const double v = Double(end);
        if (std::isfinite(v))
          JsNumber(out_, v, json_);
        else
          out_.append("null");
        return;
      }
      case (5 << 3) | 2: {
        const size_t e = LengthEnd(end);
        const auto items = KeyValues(pos_, e);  // values = 1: the same walk
        out_.push_back('[');
        for (size_t i = 0; i < items.size(); i++) {
          if (i > 0) out_.push_back(',');
          AnyValueJson(items[i].first, items[i].second, depth + 1);
        }
        out_.push_back(']');
        return;
      }
      case (6 << 3) | 2: {
        const size_t e = LengthEnd(end);
        Object(KeyValues(pos_, e), nullptr, depth);
        return;
      }
      case (7 << 3) | 2: {
        const size_t e = LengthEnd(end);
        out_.push_back('"');
        Base64(out_, buf_ + pos_, e - pos_);
        out_.push_back('"');
        return;
      }
      default:
        throw Failure{"an AnyValue of an unknown kind"};
    }
  }

  // The body as anyValueText gives it: a string as it is, numbers and booleans as their literal, '' when
  // empty, anything else (bytes as base64, arrays, lists) as JSON. Booleans and ints read the same as in
  // JSON (an int past 2^53 is the JSON of its decimal string there too); a double's literal may be NaN or
  // Infinity, which JSON writes null.
  void BodyText(size_t start, size_t end) {
    if (start >= end) return;
    pos_ = start;
    const uint64_t tag = Varint();
    if (tag == ((1 << 3) | 2)) {
      const size_t e = LengthEnd(end);
      out_.append(reinterpret_cast<const char *>(buf_ + pos_), e - pos_);
    } else if (tag == ((4 << 3) | 1)) {
      JsNumber(out_, Double(end));
    } else {
      AnyValueJson(start, end, 0);
    }
  }

  Span Id(std::pair<size_t, size_t> range) {
    const auto [start, end] = range;
    bool zero = true;
    for (size_t i = start; i < end; i++) zero = zero && buf_[i] == 0;
    if (start == end || zero) return Span{kNull, 0};
    const size_t at = out_.size();
    for (size_t i = start; i < end; i++) {
      out_.push_back(kHex[buf_[i] >> 4]);
      out_.push_back(kHex[buf_[i] & 15]);
    }
    return Append(at);
  }

  // micromegas levels from OTLP severity numbers, as levelOf in src/ingestion/otlp/logs-lines.ts.
  static int32_t LevelOf(int32_t severity) {
    if (severity <= 0) return 4;
    if (severity <= 4) return 6;
    if (severity <= 8) return 5;
    if (severity <= 12) return 4;
    if (severity <= 16) return 3;
    if (severity <= 20) return 2;
    return 1;
  }

  void LogRecord(size_t end, std::pair<size_t, size_t> scope_name) {
    uint64_t time = 0, observed = 0;
    int32_t severity = 0;
    std::pair<size_t, size_t> severity_text{0, 0}, body{0, 0}, trace_id{0, 0}, span_id{0, 0};
    std::vector<std::pair<size_t, size_t>> &attributes = attributes_;
    attributes.clear();
    while (pos_ < end) {
      const uint64_t tag = Varint();
      const uint32_t wire = tag & 7;
      const uint64_t number = tag >> 3;
      if (wire == 1 && (number == 1 || number == 11)) {
        if (pos_ + 8 > end) throw Failure{"a time runs past its record"};
        (number == 1 ? time : observed) = Fixed64(pos_);
        pos_ += 8;
      } else if (wire == 0 && number == 2) {
        severity = static_cast<int32_t>(static_cast<uint32_t>(Varint()));
      } else if (wire == 2) {
        const size_t e = LengthEnd(end);
        const std::pair<size_t, size_t> range{pos_, e};
        if (number == 3)
          severity_text = range;
        else if (number == 5)
          body = range;
        else if (number == 6)
          attributes.push_back(range);
        else if (number == 9)
          trace_id = range;
        else if (number == 10)
          span_id = range;
        pos_ = e;
      } else {
        Skip(wire, end);
      }
    }
    const size_t after = pos_;
    const uint64_t t = time != 0 ? time : observed;
    if (t > static_cast<uint64_t>(INT64_MAX)) throw Failure{"a record's time is past BIGINT"};
    rows_.time.push_back(static_cast<int64_t>(t));
    rows_.level.push_back(LevelOf(severity));
    size_t at = out_.size();
    out_.append(reinterpret_cast<const char *>(buf_ + scope_name.first), scope_name.second - scope_name.first);
    rows_.target.push_back(Append(at));
    at = out_.size();
    BodyText(body.first, body.second);
    rows_.msg.push_back(Append(at));
    at = out_.size();
    const bool has_severity = severity_text.second > severity_text.first;
    json_ = Json::kDuckDb;  // the text json() would make of JSON.stringify's: the column is JSON as it comes
    Object(attributes, has_severity ? &severity_text : nullptr, 0);
    json_ = Json::kJavaScript;
    rows_.properties.push_back(Append(at));
    rows_.trace_id.push_back(Id(trace_id));
    rows_.span_id.push_back(Id(span_id));
    pos_ = after;
  }
};

// ---- The table function ----

struct Registration {
  std::string root;  // the folder payload paths must lie in, with a trailing '/'
};

struct Bind {
  std::string file;
  std::vector<uint64_t> offsets;  // payload i is [offsets[i], offsets[i + 1]) of the file
};

struct Global {
  std::atomic<size_t> next{0};
  int fd = -1;
  ~Global() {
    if (fd >= 0) close(fd);
  }
};

// Buffers for reading and decoding one payload at a time.
struct Workspace {
  std::string payload, content;
  std::vector<double> scanned;  // what the scan found: its verdict, and the count of records
};

struct Local : Workspace {
  std::string name;
  Rows rows;
  size_t row = 0;
};

template <typename T>
void Delete(void *p) {
  delete static_cast<T *>(p);
}

// Bytes [offset, end) of a file.
void ReadSlice(int fd, uint64_t offset, uint64_t end, std::string &out) {
  out.resize(end - offset);
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = pread(fd, &out[done], out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Failure{n == 0 ? "is cut short" : "cannot be read"};
    done += static_cast<size_t>(n);
  }
}

// Reads payload `payload` of the file and decodes it into `rows` (cleared first) when it passes the validating
// scan (`stated`: see Content). Throws Failure.
void DecodePayload(int fd, const Bind &bind, size_t payload, Workspace &work, Rows &rows, bool stated = false) {
  rows.Clear();
  ReadSlice(fd, bind.offsets[payload], bind.offsets[payload + 1], work.payload);
  const auto [content, size] =
      Content(reinterpret_cast<const uint8_t *>(work.payload.data()), work.payload.size(), work.content, 0, stated);
  work.scanned.clear();
  if (!ScanLogsBody(content, size, work.scanned)) throw Failure{"is not a valid OTLP logs protobuf payload"};
  // Sized once rather than grown: the scan counted the records (the 7th of its numbers per ResourceLogs), and their
  // text is about as long as the protobuf (ids in hex, JSON quotes, against tags and lengths).
  size_t records = 0;
  for (size_t i = 6; i < work.scanned.size(); i += 11) records += static_cast<size_t>(work.scanned[i]);
  rows.Reserve(records, size + size / 4);
  Decoder(content, size, rows).Run();
}

std::string PayloadName(const Bind &bind, size_t payload) { return bind.file + "#" + std::to_string(payload); }

// The file (under the registration's root) and the payloads' offsets, the first two parameters of each
// function here; false (the bind's error set) when the file lies elsewhere.
bool BindPayloads(duckdb_bind_info info, Bind &bind, const char *function) {
  const auto *registration = static_cast<const Registration *>(duckdb_bind_get_extra_info(info));
  duckdb_value file = duckdb_bind_get_parameter(info, 0);
  char *text = duckdb_get_varchar(file);
  bind.file = text ? text : "";
  duckdb_free(text);
  duckdb_destroy_value(&file);
  if (bind.file.compare(0, registration->root.size(), registration->root) != 0 ||
      bind.file.find("/../") != std::string::npos) {
    duckdb_bind_set_error(
        info, (std::string(function) + " reads only the materializer's scratch files, not " + bind.file).c_str());
    return false;
  }
  duckdb_value sizes = duckdb_bind_get_parameter(info, 1);
  const idx_t count = duckdb_get_list_size(sizes);
  bind.offsets.assign(1, 0);
  for (idx_t i = 0; i < count; i++) {
    duckdb_value child = duckdb_get_list_child(sizes, i);
    bind.offsets.push_back(bind.offsets.back() + duckdb_get_uint64(child));
    duckdb_destroy_value(&child);
  }
  duckdb_destroy_value(&sizes);
  return true;
}

// A result column; `alias` "JSON" makes a VARCHAR DuckDB's JSON type.
void AddColumn(duckdb_bind_info info, const char *name, int type_id, const char *alias = nullptr) {
  duckdb_logical_type type = duckdb_create_logical_type(type_id);
  if (alias) duckdb_logical_type_set_alias(type, alias);
  duckdb_bind_add_result_column(info, name, type);
  duckdb_destroy_logical_type(&type);
}

// __orrery_otlp_logs(file, sizes): the payloads are consecutive in the file, of these sizes; each row's
// filename is `<file>#<index of its payload>`.
// The records' columns of the decoding functions, with an estimate of their rows (a record is rarely under 64
// bytes of protobuf): without one DuckDB takes the function for a single row and builds the materializer's join
// with __blocks on the payloads' rows, holding (and spilling) every decoded row of the partition, instead of on
// the blocks' few (issue 16).
void AddRecordColumns(duckdb_bind_info info, const Bind &bind) {
  duckdb_bind_set_cardinality(info, std::max<idx_t>(bind.offsets.size() - 1, bind.offsets.back() / 64), false);
  AddColumn(info, "time", DUCKDB_TYPE_BIGINT);
  AddColumn(info, "target", DUCKDB_TYPE_VARCHAR);
  AddColumn(info, "level", DUCKDB_TYPE_INTEGER);
  AddColumn(info, "msg", DUCKDB_TYPE_VARCHAR);
  AddColumn(info, "properties", DUCKDB_TYPE_VARCHAR, "JSON");
  AddColumn(info, "trace_id", DUCKDB_TYPE_VARCHAR);
  AddColumn(info, "span_id", DUCKDB_TYPE_VARCHAR);
}

void LogsBind(duckdb_bind_info info) {
  auto bind = std::make_unique<Bind>();
  if (!BindPayloads(info, *bind, "__orrery_otlp_logs")) return;
  AddRecordColumns(info, *bind);
  AddColumn(info, "filename", DUCKDB_TYPE_VARCHAR);
  duckdb_bind_set_bind_data(info, bind.release(), Delete<Bind>);
}

int OpenPayloads(duckdb_init_info info, const Bind &bind) {
  const int fd = open(bind.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) duckdb_init_set_error(info, ("OTLP logs payloads " + bind.file + ": cannot be opened").c_str());
  return fd;
}

void LogsInit(duckdb_init_info info) {
  const auto *bind = static_cast<const Bind *>(duckdb_init_get_bind_data(info));
  auto global = std::make_unique<Global>();
  global->fd = OpenPayloads(info, *bind);
  if (global->fd < 0) return;
  duckdb_init_set_init_data(info, global.release(), Delete<Global>);
  duckdb_init_set_max_threads(info, std::max<idx_t>(1, bind->offsets.size() - 1));
}

void LogsLocalInit(duckdb_init_info info) { duckdb_init_set_init_data(info, new Local(), Delete<Local>); }

// Sets a VARCHAR vector's row to the `n` bytes at `p` without copying them: DuckDB's string_t holds strings of
// up to 12 bytes inline (zero-padded), longer ones as their length, first 4 bytes and a pointer. The bytes must
// stay valid until the function's next call: each operator of the pipeline is done with a chunk before the source
// is asked for the next, and the materializer's statements over this function (projections and the Parquet
// writer, which copies what it keeps) hold no chunk past that; an operator that caches chunks (a
// join's probe side) would, since these strings belong to no buffer of the vector's. They are valid
// UTF-8: the records' strings passed the payload's validating scan, the rest is ASCII written here or __blocks'
// VARCHARs. This skips the copy into the vector's heap and the UTF-8 check of duckdb_vector_assign_string_element_len,
// per row and column (issue 16).
void PointString(duckdb_string_t *data, idx_t row, const char *p, size_t n) {
  duckdb_string_t &s = data[row];
  if (n <= sizeof s.value.inlined.inlined) {
    s.value.inlined.length = static_cast<uint32_t>(n);
    std::memset(s.value.inlined.inlined, 0, sizeof s.value.inlined.inlined);
    std::memcpy(s.value.inlined.inlined, p, n);
  } else {
    s.value.pointer.length = static_cast<uint32_t>(n);
    std::memcpy(s.value.pointer.prefix, p, sizeof s.value.pointer.prefix);
    s.value.pointer.ptr = const_cast<char *>(p);
  }
}

void SetNull(duckdb_vector vector, uint64_t *&validity, idx_t row) {
  if (!validity) {
    duckdb_vector_ensure_validity_writable(vector);
    validity = duckdb_vector_get_validity(vector);
  }
  duckdb_validity_set_row_invalid(validity, row);
}

void AssignString(duckdb_vector vector, uint64_t *&validity, idx_t row, const std::string &arena, Span span) {
  if (span.offset == kNull) {
    SetNull(vector, validity, row);
    return;
  }
  duckdb_vector_assign_string_element_len(vector, row, arena.data() + span.offset, span.length);
}

void LogsFunction(duckdb_function_info info, duckdb_data_chunk output) {
  const auto *bind = static_cast<const Bind *>(duckdb_function_get_bind_data(info));
  auto *global = static_cast<Global *>(duckdb_function_get_init_data(info));
  auto *local = static_cast<Local *>(duckdb_function_get_local_init_data(info));
  while (local->row >= local->rows.Size()) {
    const size_t payload = global->next.fetch_add(1);
    if (payload + 1 >= bind->offsets.size()) {
      duckdb_data_chunk_set_size(output, 0);
      return;
    }
    local->name = PayloadName(*bind, payload);
    local->row = 0;
    try {
      DecodePayload(global->fd, *bind, payload, *local, local->rows);
    } catch (const Failure &failure) {
      duckdb_function_set_error(info, ("OTLP logs payload " + local->name + ": " + failure.message).c_str());
      return;
    }
  }
  const Rows &rows = local->rows;
  const idx_t count = std::min<idx_t>(duckdb_vector_size(), rows.Size() - local->row);
  auto *time = static_cast<int64_t *>(duckdb_vector_get_data(duckdb_data_chunk_get_vector(output, 0)));
  auto *level = static_cast<int32_t *>(duckdb_vector_get_data(duckdb_data_chunk_get_vector(output, 2)));
  duckdb_vector strings[6] = {duckdb_data_chunk_get_vector(output, 1), duckdb_data_chunk_get_vector(output, 3),
                              duckdb_data_chunk_get_vector(output, 4), duckdb_data_chunk_get_vector(output, 5),
                              duckdb_data_chunk_get_vector(output, 6), duckdb_data_chunk_get_vector(output, 7)};
  const std::vector<Span> *columns[5] = {&rows.target, &rows.msg, &rows.properties, &rows.trace_id, &rows.span_id};
  uint64_t *validity[6] = {};
  for (idx_t i = 0; i < count; i++) {
    const size_t r = local->row + i;
    time[i] = rows.time[r];
    level[i] = rows.level[r];
    for (int c = 0; c < 5; c++) AssignString(strings[c], validity[c], i, rows.arena, (*columns[c])[r]);
  }
  // A chunk holds the rows of one payload: its name is a constant vector.
  duckdb_value name = duckdb_create_varchar_length(local->name.data(), local->name.size());
  duckdb_vector_reference_value(strings[5], name);
  duckdb_destroy_value(&name);
  local->row += count;
  duckdb_data_chunk_set_size(output, count);
}

// ---- Rows in time order without a sort ----
//
// The payloads of a partition mostly cover short, nearly consecutive spans of time (a sender's batch), so their
// rows come out in time order from a merge of the payloads taken by their first time: a payload is decoded
// once the merge reaches its first time and freed when its last row is out, so only payloads whose spans
// overlap are held at once. The materializer takes each payload's first and last time from its block (what
// ingestion's scan found), works out how many payload bytes the merge would hold at most, and reads
// __orrery_otlp_logs_ordered when that fits (DuckDB's sort otherwise). The ordered function yields each row's block columns too, so no
// join (which keeps no order) follows it.

// The block columns __orrery_otlp_logs_ordered yields, given as text, `kBlockFields` per payload in its
// `blocks` parameter (insert_time as the decimal nanoseconds since the epoch, yielded as BIGINT).
constexpr const char *kBlockFields[] = {"process_id", "stream_id", "block_id",           "insert_time", "exe",
                                        "username",   "computer",  "process_properties", "audience"};
constexpr size_t kBlockFieldCount = sizeof kBlockFields / sizeof kBlockFields[0];
constexpr size_t kInsertTime = 3, kProcessProperties = 7;

struct OrderedBind : Bind {
  std::vector<int64_t> mins;          // each payload's first time: at most its records' earliest
  std::vector<std::string> blocks;    // kBlockFieldCount per payload
  std::vector<bool> nulls;            // as blocks
  std::vector<uint32_t> values;       // as blocks: the same number for the same text of a field (kNull for null)
  std::vector<int64_t> insert_times;  // per payload
  // Per field: 0 when it is yielded as VARCHAR, else the index type (DUCKDB_TYPE_UTINYINT, ...) of the ENUM it is
  // yielded as (its `values` numbers are the ENUM's indexes).
  int enum_index[kBlockFieldCount] = {};
  // The `row_group_size` parameter (the COPY's ROW_GROUP_SIZE; 0: not given): with it, two DuckDB threads take the
  // merge's rows in turns of this many (see Ordered).
  uint64_t run_rows = 0;
};

// The most values a block field yielded as an ENUM may have. The Parquet writer puts every value of an ENUM in each
// row group's dictionary page (and takes its statistics from them): few values cost little there (256 of 36 bytes,
// ~0.07 bytes per row of a 131,072-row group), a range's thousands of block ids would.
constexpr size_t kEnumMembers = 256;

// The fields named in the `enums` parameter (VARCHAR[]), marked in bind.enum_index; false (the bind's error set)
// when one is not a VARCHAR field of kBlockFields. A field with no value but nulls, or more than kEnumMembers
// values, stays VARCHAR.
bool EnumFields(duckdb_bind_info info, OrderedBind &bind,
                const std::vector<std::unordered_map<std::string, uint32_t>> &numbers) {
  duckdb_value enums = duckdb_bind_get_named_parameter(info, "enums");
  if (!enums) return true;
  bool known = true;
  for (idx_t i = 0; known && !duckdb_is_null_value(enums) && i < duckdb_get_list_size(enums); i++) {
    duckdb_value child = duckdb_get_list_child(enums, i);
    char *text = duckdb_is_null_value(child) ? nullptr : duckdb_get_varchar(child);
    const std::string name = text ? text : "";
    duckdb_free(text);
    duckdb_destroy_value(&child);
    const auto *at = std::find(std::begin(kBlockFields), std::end(kBlockFields), name);
    const size_t f = static_cast<size_t>(at - std::begin(kBlockFields));
    known = f < kBlockFieldCount && f != kInsertTime && f != kProcessProperties;
    if (known && !numbers[f].empty() && numbers[f].size() <= kEnumMembers) bind.enum_index[f] = 1;
  }
  duckdb_destroy_value(&enums);
  if (!known)
    duckdb_bind_set_error(info, "__orrery_otlp_logs_ordered: enums names block fields of type VARCHAR only");
  return known;
}

constexpr const char *kInsertTimeRefused = "an insert_time is not a decimal integer";

// Numbers each block field's values (bind.values: per field, the same number for the same text, so that the merge
// tells by one comparison whether a chunk's rows share a field's value; kNull for null), `numbers` the text of each,
// and reads the insert times; false when one is not a decimal integer.
bool NumberBlocks(OrderedBind &bind, std::vector<std::unordered_map<std::string, uint32_t>> &numbers) {
  numbers.assign(kBlockFieldCount, {});
  for (size_t at = 0; at < bind.blocks.size(); at++) {
    auto &seen = numbers[at % kBlockFieldCount];
    bind.values.push_back(bind.nulls[at] ? kNull
                                         : seen.emplace(bind.blocks[at], static_cast<uint32_t>(seen.size())).first->second);
  }
  for (size_t p = 0; p * kBlockFieldCount < bind.blocks.size(); p++) {
    const std::string &text = bind.blocks[p * kBlockFieldCount + kInsertTime];
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (bind.nulls[p * kBlockFieldCount + kInsertTime] || error != std::errc() || end != text.data() + text.size())
      return false;
    bind.insert_times.push_back(value);
  }
  return true;
}

// __orrery_otlp_logs_ordered(file, sizes, mins BIGINT[], blocks VARCHAR[]): the rows of every payload
// in time order (equal times in the order of the payloads' first times, then of their records), each with
// its payload's block columns: the columns of kBlockFields (insert_time BIGINT), then time, target, level,
// msg, properties, trace_id, span_id as __orrery_otlp_logs gives them. A block field named in `enums` (a named
// parameter, VARCHAR[]) comes as an ENUM of its values when it has at most kEnumMembers: each row is then its
// value's index, and the Parquet writer neither copies nor hashes the string per row.
void OrderedBindFunction(duckdb_bind_info info) {
  auto bind = std::make_unique<OrderedBind>();
  if (!BindPayloads(info, *bind, "__orrery_otlp_logs_ordered")) return;
  const size_t payloads = bind->offsets.size() - 1;
  duckdb_value mins = duckdb_bind_get_parameter(info, 2);
  duckdb_value blocks = duckdb_bind_get_parameter(info, 3);
  const bool fits =
      duckdb_get_list_size(mins) == payloads && duckdb_get_list_size(blocks) == payloads * kBlockFieldCount;
  for (idx_t i = 0; fits && i < payloads; i++) {
    duckdb_value child = duckdb_get_list_child(mins, i);
    bind->mins.push_back(duckdb_get_int64(child));
    duckdb_destroy_value(&child);
  }
  for (idx_t i = 0; fits && i < payloads * kBlockFieldCount; i++) {
    duckdb_value child = duckdb_get_list_child(blocks, i);
    const bool null = duckdb_is_null_value(child);
    char *text = null ? nullptr : duckdb_get_varchar(child);
    bind->blocks.emplace_back(text ? text : "");
    bind->nulls.push_back(null);
    duckdb_free(text);
    duckdb_destroy_value(&child);
  }
  duckdb_destroy_value(&mins);
  duckdb_destroy_value(&blocks);
  if (!fits) {
    duckdb_bind_set_error(info, "__orrery_otlp_logs_ordered takes a first time and 9 block fields per payload");
    return;
  }
  std::vector<std::unordered_map<std::string, uint32_t>> numbers;
  if (!NumberBlocks(*bind, numbers)) {
    duckdb_bind_set_error(info, (std::string("__orrery_otlp_logs_ordered: ") + kInsertTimeRefused).c_str());
    return;
  }
  if (!EnumFields(info, *bind, numbers)) return;
  if (duckdb_value rows = duckdb_bind_get_named_parameter(info, "row_group_size")) {
    bind->run_rows = duckdb_is_null_value(rows) ? 0 : duckdb_get_uint64(rows);
    duckdb_destroy_value(&rows);
    if (bind->run_rows % duckdb_vector_size() != 0) {
      duckdb_bind_set_error(info, "__orrery_otlp_logs_ordered: row_group_size is a multiple of 2048");
      return;
    }
  }
  // process_properties is __blocks' JSON text as DuckDB wrote it: typed JSON again, not parsed per row by a cast.
  for (size_t f = 0; f < kBlockFieldCount; f++) {
    if (bind->enum_index[f]) {
      std::vector<const char *> members(numbers[f].size());
      for (const auto &[text, number] : numbers[f]) members[number] = text.c_str();
      duckdb_logical_type type = duckdb_create_enum_type(members.data(), members.size());
      bind->enum_index[f] = duckdb_enum_internal_type(type);
      duckdb_bind_add_result_column(info, kBlockFields[f], type);
      duckdb_destroy_logical_type(&type);
      continue;
    }
    AddColumn(info, kBlockFields[f], f == kInsertTime ? DUCKDB_TYPE_BIGINT : DUCKDB_TYPE_VARCHAR,
              f == kProcessProperties ? "JSON" : nullptr);
  }
  AddRecordColumns(info, *bind);
  duckdb_bind_set_bind_data(info, bind.release(), Delete<OrderedBind>);
}

// A decoded payload in the merge: its rows, their indexes in time order, the next of them to yield.
struct Held {
  size_t payload;
  size_t place;  // its position among the payloads by first time (orders equal times across payloads)
  Rows rows;
  std::vector<uint32_t> order;
  size_t next = 0;
  int64_t Time() const { return rows.time[order[next]]; }
};

// A payload decoded for the merge, or why it could not be.
struct Decoded {
  std::unique_ptr<Held> held;
  std::string error;
};

// Decodes the payloads in the merge's order on a thread of its own, a few ahead of the merge, so that the
// decoding runs beside the merge, DuckDB's casts and the Parquet writer, which take the statement's one
// thread (the rows leave in order from one thread); its thread inherits that thread's priority. The two threads
// cost about the same per row, but the writer works in bursts (a row group's encoding and compression at once,
// while the merge takes nothing) and the decoding thread then stops at its few payloads ahead: when the merge
// next wants a payload that is not decoded yet, the statement's thread decodes the next one not yet taken by
// either thread itself instead of waiting for it (bench/materialization/README.md).
class DecodeAhead {
 public:
  DecodeAhead(const OrderedBind &bind, int fd, const std::vector<size_t> &sequence)
      : bind_(bind), fd_(fd), sequence_(sequence), thread_([this] { Run(); }) {}

  ~DecodeAhead() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  // The next payload in the merge's order; while it is being decoded on the other thread, this thread decodes
  // the next ones not yet claimed (at most kAhead ahead of the merge), and waits only when there are none.
  Decoded Next() {
    std::unique_lock<std::mutex> lock(mutex_);
    const size_t place = taken_++;
    changed_.notify_all();  // one more may be decoded ahead
    for (;;) {
      const auto found = ready_.find(place);
      if (found != ready_.end()) {
        Decoded next = std::move(found->second);
        ready_.erase(found);
        ahead_bytes_ -= Bytes(next);
        changed_.notify_all();  // the bytes it held may let one more be decoded ahead
        return next;
      }
      if (CanClaim()) {
        const size_t mine = claimed_++;
        lock.unlock();
        Decoded decoded = Decode(mine, own_);
        lock.lock();
        Ready(mine, std::move(decoded));
        continue;
      }
      changed_.wait(lock);
    }
  }

 private:
  // Payloads claimed and not yet taken by the merge, at most, and the bytes of those decoded (a decode under way may
  // pass that, by one payload per thread). 4 left the merge blocked 0.26-0.55 s of a 1 M-row statement, 16 0.09 s
  // (bench/materialization/README.md). Bounded by decoded bytes, not stored ones: a client's gzip body expands up to
  // ~1,000-fold, so 16 small stored payloads could hold gigabytes beyond the merge's own hold (orderedHoldBytes).
  static constexpr size_t kAhead = 16;
  static constexpr size_t kAheadBytes = 64 << 20;
  const OrderedBind &bind_;
  const int fd_;
  const std::vector<size_t> &sequence_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<size_t, Decoded> ready_;  // decoded, by place, until the merge takes them
  size_t claimed_ = 0;  // the places below it are decoded or being decoded
  size_t taken_ = 0;    // the places below it the merge has taken (or is waiting for)
  size_t ahead_bytes_ = 0;  // the bytes of the decoded payloads in ready_
  bool stop_ = false;
  Workspace work_;  // the decoding thread's
  Workspace own_;   // the statement's thread's
  std::thread thread_;  // last: starts once the rest is set up

  void Run() {
    for (;;) {
      size_t place;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return stop_ || claimed_ >= sequence_.size() || CanClaim(); });
        if (stop_ || claimed_ >= sequence_.size()) return;
        place = claimed_++;
      }
      Decoded decoded = Decode(place, work_);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        Ready(place, std::move(decoded));
      }
      changed_.notify_all();
    }
  }

  // The memory a decoded payload holds: its rows' text and columns, and their order.
  static size_t Bytes(const Decoded &decoded) {
    if (!decoded.held) return 0;
    const Rows &rows = decoded.held->rows;
    return rows.arena.capacity() + rows.time.capacity() * sizeof(int64_t) + rows.level.capacity() * sizeof(int32_t) +
           (rows.target.capacity() + rows.msg.capacity() + rows.properties.capacity() + rows.trace_id.capacity() +
            rows.span_id.capacity()) *
               sizeof(Span) +
           decoded.held->order.capacity() * sizeof(uint32_t);
  }

  // Keeps a decoded payload until the merge takes it (with mutex_ held).
  void Ready(size_t place, Decoded decoded) {
    ahead_bytes_ += Bytes(decoded);
    ready_.emplace(place, std::move(decoded));
  }

  // Whether a thread may decode the next place now (with mutex_ held). When the merge waits for a place not yet
  // claimed, every place before it was taken, so ready_ is empty and the bytes do not stop it.
  bool CanClaim() const {
    return claimed_ < sequence_.size() && claimed_ < taken_ + kAhead && ahead_bytes_ < kAheadBytes;
  }

  Decoded Decode(size_t place, Workspace &work) {
    const size_t payload = sequence_[place];
    auto held = std::make_unique<Held>();
    held->payload = payload;
    held->place = place;
    // What this thread throws would end the process (no DuckDB frame above it to make it the statement's error,
    // as for __orrery_otlp_logs): memory refused (std::bad_alloc, std::length_error) fails the statement too.
    try {
      DecodePayload(fd_, bind_, payload, work, held->rows, true);
      const auto &time = held->rows.time;
      held->order.resize(time.size());
      for (uint32_t i = 0; i < held->order.size(); i++) held->order[i] = i;
      if (!std::is_sorted(time.begin(), time.end()))
        std::stable_sort(held->order.begin(), held->order.end(),
                         [&](uint32_t a, uint32_t b) { return time[a] < time[b]; });
    } catch (const Failure &failure) {
      return {nullptr, "OTLP logs payload " + PayloadName(bind_, payload) + ": " + failure.message};
    } catch (const std::exception &error) {
      return {nullptr, "OTLP logs payload " + PayloadName(bind_, payload) + ": " + error.what()};
    }
    return {std::move(held), ""};
  }
};

// The merge, shared by the threads that call the function. Without row_group_size one thread calls it. With it, the
// COPY runs with preserve_insertion_order off, so that DuckDB's Parquet writer buffers, encodes and compresses a row
// group on each thread that sinks rows (PhysicalCopyToFile in parallel; each thread's row group is written when it
// holds row_group_size rows). The merge stays one, in order: a thread takes the rows of a whole row group from it in
// turn (a run), so each row group holds consecutive rows in time order, and while one thread's row group is encoded,
// the other takes the next run. Row groups may then be written out of order in the file (each is in order).
struct Ordered {
  int fd = -1;
  std::vector<size_t> sequence;  // payload indexes by (first time, index)
  size_t decoded = 0;            // how many of sequence the merge has taken
  std::vector<std::unique_ptr<Held>> heap;  // the held payloads, the one with the earliest next row on top
  std::unique_ptr<DecodeAhead> ahead;       // started at the first rows asked for
  // The fields below are the turns' (with mutex held, as is the merge while a thread takes rows).
  std::mutex mutex;
  std::condition_variable turn;  // a run ended, or the rows did
  uint64_t position = 0;         // the rows yielded so far
  // Payloads whose last row is out, with that row's position: freed once no chunk a thread yielded and has not yet
  // come back from (its pipeline still reads it) starts at or before that position.
  std::vector<std::pair<uint64_t, std::unique_ptr<Held>>> done;
  std::vector<uint64_t> in_flight;  // per thread (OrderedLocal::slot): its last chunk's first position, or none
  size_t owner = SIZE_MAX;          // the thread taking the current run, SIZE_MAX: none (the next thread takes one)
  uint64_t run_left = 0;            // rows of the current run still to yield
  bool finished = false;            // no rows left, or failed: every thread ends
  ~Ordered() {
    ahead.reset();  // its thread reads fd
    if (fd >= 0) close(fd);
  }
};

struct OrderedLocal {
  size_t slot = SIZE_MAX;     // this thread's in Ordered::in_flight, taken at its first call
  uint64_t yielded = 0;       // rows this thread yielded: its writer holds the last yielded % row_group_size of them
  std::vector<size_t> from;   // the payload of each row of the chunk being filled
};

// The heap's order: later rows sink (std heap functions keep the greatest on top).
bool Later(const std::unique_ptr<Held> &a, const std::unique_ptr<Held> &b) {
  const int64_t ta = a->Time(), tb = b->Time();
  return ta != tb ? ta > tb : a->place > b->place;
}

// Moves the top of a heap whose other elements are in heap order down to its place (std's heap functions' sift-down,
// which they do not expose): after a row of the top payload, it stays on top unless another payload's next row is
// earlier, so most rows take one or two comparisons rather than a pop and a push. Later orders every row of every
// payload (equal times by place), so the rows leave as a pop per row would give them.
void SinkTop(std::vector<std::unique_ptr<Held>> &heap) {
  const size_t n = heap.size();
  for (size_t at = 0;;) {
    size_t child = 2 * at + 1;
    if (child >= n) return;
    if (child + 1 < n && Later(heap[child], heap[child + 1])) child++;
    if (!Later(heap[at], heap[child])) return;
    std::swap(heap[at], heap[child]);
    at = child;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The ordered read written straight to a log_entries partition file (writeOrderedLogsPartition): the merge of
// OrderedFunction, each merged row appended to parquet-writer.h's columns instead of DuckDB's vectors, every
// kRowGroupRows rows written as a row group. What the materializer's statement writes over the same bind (its COPY
// of log_entries' columns, the six process fields as ENUMs), without DuckDB's vectors, casts and Parquet writer
// between the decoder and the file: 0.76-0.86x the statement's CPU (bench/materialization/README.md, s24-s26).

constexpr size_t kBlockId = 2;  // in kBlockFields
constexpr size_t kRowGroupRows = 131072;  // the materializer's ROW_GROUP_SIZE

// Where each of log_entries' columns (kColumns, in order) comes from: a block field (its index in kBlockFields), or
// the record's column (kRecord + its place: time, target, level, msg, properties, trace_id, span_id).
constexpr int kRecord = 100;
constexpr int kSource[] = {0, 1, 2, 3, 4, 5, 6, kRecord + 0, kRecord + 1, kRecord + 2, kRecord + 3, kRecord + 4,
                           kRecord + 5, kRecord + 6, 7, 8};

void AppendString(Column &c, const char *p, size_t n, bool valid) {
  c.valid.push_back(valid);
  if (c.in_place) {
    c.views.emplace_back(p, valid ? n : 0);
    return;
  }
  if (valid) c.bytes.append(p, n);
  c.offsets.push_back(static_cast<uint32_t>(c.bytes.size()));
}

void Clear(std::vector<Column> &columns) {
  for (Column &c : columns) {
    c.valid.clear();
    c.ints.clear();
    c.index.clear();
    c.bytes.clear();
    c.views.clear();
    if (c.kind == Kind::kString) c.offsets.assign(1, 0);
  }
}

// How the partition is written (the product's: the defaults; bench/materialization/direct-writer.cc varies them).
struct DirectOptions {
  bool sample = true;         // sampled dictionaries (parquet-writer.h's kSample)
  bool block_indexes = true;  // block_id and process_properties as indexes into their payloads' values
  bool in_place = false;      // the records' strings read from the held payloads (each held to its row group's write)
  // A row group is written early once its copied strings reach this many bytes: a column's offsets are 32-bit (4 GiB
  // of one column's text in a row group would wrap them: 131072 records of a tenant's ~33 KiB messages), and the
  // row group is held in memory outside DuckDB's limit until written.
  size_t row_group_bytes = size_t{256} << 20;
};

// The bytes of text a row group's copied string columns hold.
size_t StringBytes(const std::vector<Column> &columns) {
  size_t bytes = 0;
  for (const Column &c : columns) bytes += c.bytes.size();
  return bytes;
}

struct Direct {
  size_t rows = 0;
  double write_cpu = 0;  // the Writer's calls, on the calling thread
};

// Whether a block field has a value (not null) in some payload.
bool AnyValue(const OrderedBind &bind, size_t f) {
  for (size_t at = f; at < bind.values.size(); at += kBlockFieldCount)
    if (bind.values[at] != kNull) return true;
  return false;
}

// Whether the writer writes what the statement writes for this bind: each of the six process fields an ENUM of at
// most kEnumMembers values as the statement reads them, or null in every block (a VARCHAR of nulls there too); a
// field past kEnumMembers comes as a VARCHAR of its values there, whose chunks DuckDB writes with a bloom filter the
// writer's ENUM path does not.
bool DirectWritable(const OrderedBind &bind) {
  for (size_t c = 0; c < std::size(kColumns); c++) {
    const size_t f = static_cast<size_t>(kSource[c]);
    if (kColumns[c].kind == Kind::kEnum && !bind.enum_index[f] && AnyValue(bind, f)) return false;
  }
  return true;
}

// The bind's payloads, merged in time order, written to `out` as a Parquet file (fsynced). Throws on a payload that
// cannot be read or decoded, a time before its payload's first time, or a failed write.
Direct WriteOrdered(const OrderedBind &bind, const std::string &out, const std::string &created_by,
                    const DirectOptions &options) {
  std::vector<Column> columns = EmptyColumns();
  for (size_t c = 0; c < columns.size(); c++) {
    const size_t f = static_cast<size_t>(kSource[c]);
    // block_id and process_properties as indexes into their payloads' values too: neither copied nor hashed per row.
    if (options.block_indexes && (f == kBlockId || f == kProcessProperties))
      columns[c].kind = Kind::kEnum, columns[c].bloom = true;
    // A process field null in every block: a VARCHAR of nulls, as the statement reads it.
    if (columns[c].kind == Kind::kEnum && !columns[c].bloom && !bind.enum_index[f] && !AnyValue(bind, f))
      columns[c].kind = Kind::kString, columns[c].offsets.assign(1, 0);
    columns[c].in_place = options.in_place && columns[c].kind == Kind::kString;
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
  for (size_t p = 0; p < payloads; p++) sequence[p] = p;
  std::stable_sort(sequence.begin(), sequence.end(), [&](size_t a, size_t b) { return bind.mins[a] < bind.mins[b]; });
  const int fd = open(bind.file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + bind.file);
  const std::unique_ptr<int, void (*)(int *)> closing(new int(fd), [](int *f) {
    close(*f);
    delete f;
  });
  std::unique_ptr<FILE, int (*)(FILE *)> file(std::fopen(out.c_str(), "wb"), std::fclose);
  if (!file) throw std::runtime_error("cannot open " + out + ": " + std::strerror(errno));
  Direct result;
  {
    DecodeAhead ahead(bind, fd, sequence);
    std::vector<std::unique_ptr<Held>> heap;
    // In place: the payloads whose last row is out, held until their row group is written (its columns point into
    // their text).
    std::vector<std::unique_ptr<Held>> spent;
    size_t decoded = 0, n = 0;
    Writer writer(columns, file.get(), options.sample, created_by);
    auto write = [&] {
      const double t0 = ThreadCpu();
      writer.RowGroup(0, n);
      result.write_cpu += ThreadCpu() - t0;
      result.rows += n;
      n = 0;
      Clear(columns);
      spent.clear();
    };
    for (;;) {
      // HoldNext: every payload whose first time is not after the earliest held row is held before that row.
      while (decoded < payloads && (heap.empty() || bind.mins[sequence[decoded]] <= heap.front()->Time())) {
        decoded++;
        Decoded next = ahead.Next();
        if (!next.held) throw std::runtime_error(next.error);
        if (next.held->rows.time.empty()) continue;
        if (next.held->Time() < bind.mins[next.held->payload])
          throw std::runtime_error("OTLP logs payload " + PayloadName(bind, next.held->payload) +
                                 ": a time before the first time given");
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
          const uint32_t v = bind.values[at + source];
          column.valid.push_back(v != kNull), column.index.push_back(v == kNull ? 0 : v);
        } else {
          const std::string &text = bind.blocks[at + source];
          AppendString(column, text.data(), text.size(), !bind.nulls[at + source]);
        }
      }
      if (held.next == held.order.size()) {
        // Its last row is out: freed at once, its text copied; or, in place, once its row group is written.
        std::swap(heap.front(), heap.back());
        if (options.in_place) spent.push_back(std::move(heap.back()));
        heap.pop_back();
      }
      SinkTop(heap);
      if (++n == kRowGroupRows || StringBytes(columns) >= options.row_group_bytes) write();
    }
    if (n > 0) write();
    const double t0 = ThreadCpu();
    writer.Finish();
    result.write_cpu += ThreadCpu() - t0;
  }
  if (std::fflush(file.get()) != 0 || fsync(fileno(file.get())) != 0 || std::fclose(file.release()) != 0)
    throw std::runtime_error("cannot write " + out + ": " + std::strerror(errno));
  return result;
}

void OrderedInit(duckdb_init_info info) {
  const auto *bind = static_cast<const OrderedBind *>(duckdb_init_get_bind_data(info));
  auto ordered = std::make_unique<Ordered>();
  ordered->fd = OpenPayloads(info, *bind);
  if (ordered->fd < 0) return;
  ordered->sequence.resize(bind->mins.size());
  for (size_t i = 0; i < ordered->sequence.size(); i++) ordered->sequence[i] = i;
  std::stable_sort(ordered->sequence.begin(), ordered->sequence.end(),
                   [&](size_t a, size_t b) { return bind->mins[a] < bind->mins[b]; });
  duckdb_init_set_init_data(info, ordered.release(), Delete<Ordered>);
  duckdb_init_set_max_threads(info, bind->run_rows > 0 ? 2 : 1);
}

void OrderedLocalInit(duckdb_init_info info) {
  auto local = std::make_unique<OrderedLocal>();
  local->from.resize(duckdb_vector_size());
  duckdb_init_set_init_data(info, local.release(), Delete<OrderedLocal>);
}

// How long a thread waits for another's run before it takes the rest of that run itself: a thread that stopped
// between two chunks of its run (DuckDB set its task aside, or its pipeline failed and will not call again) must not
// hold the other one forever. A run taken over leaves its first rows in one row group and its last in another.
constexpr auto kTurnWait = std::chrono::milliseconds(200);

// Takes the next payload by first time into the heap; false (the function's error set) when it failed or
// holds a time before the first time it was given (the rows would leave time order).
bool HoldNext(duckdb_function_info info, const OrderedBind &bind, Ordered &ordered) {
  if (!ordered.ahead) ordered.ahead = std::make_unique<DecodeAhead>(bind, ordered.fd, ordered.sequence);
  ordered.decoded++;
  Decoded next = ordered.ahead->Next();
  if (!next.held) {
    duckdb_function_set_error(info, next.error.c_str());
    return false;
  }
  if (next.held->rows.time.empty()) return true;
  if (next.held->Time() < bind.mins[next.held->payload]) {
    duckdb_function_set_error(info, ("OTLP logs payload " + PayloadName(bind, next.held->payload) +
                                     ": a time before the first time given")
                                        .c_str());
    return false;
  }
  ordered.heap.push_back(std::move(next.held));
  std::push_heap(ordered.heap.begin(), ordered.heap.end(), Later);
  return true;
}

template <typename Index>
void EnumIndexesOf(const OrderedBind &bind, size_t f, const std::vector<size_t> &from, idx_t count,
                   duckdb_vector vector, uint64_t *&validity) {
  auto *data = static_cast<Index *>(duckdb_vector_get_data(vector));
  for (idx_t i = 0; i < count; i++) {
    const uint32_t value = bind.values[from[i] * kBlockFieldCount + f];
    if (value == kNull)
      SetNull(vector, validity, i);
    else
      data[i] = static_cast<Index>(value);
  }
}

// Each row's ENUM index of block field f: its number (see OrderedBind::values).
void EnumIndexes(const OrderedBind &bind, size_t f, const std::vector<size_t> &from, idx_t count,
                 duckdb_vector vector, uint64_t *&validity) {
  switch (bind.enum_index[f]) {
    case DUCKDB_TYPE_UTINYINT:
      return EnumIndexesOf<uint8_t>(bind, f, from, count, vector, validity);
    case DUCKDB_TYPE_USMALLINT:
      return EnumIndexesOf<uint16_t>(bind, f, from, count, vector, validity);
    default:
      return EnumIndexesOf<uint32_t>(bind, f, from, count, vector, validity);
  }
}

// Frees the payloads no chunk still in a thread's pipeline points into (with ordered.mutex held).
void FreeDone(Ordered &ordered) {
  const uint64_t through = *std::min_element(ordered.in_flight.begin(), ordered.in_flight.end());
  auto &done = ordered.done;
  size_t kept = 0;
  while (kept < done.size() && done[kept].first < through) kept++;
  done.erase(done.begin(), done.begin() + static_cast<std::ptrdiff_t>(kept));
}

// Whether this thread may take rows now, and how many at most (with ordered.mutex held; waits for another thread's
// run to end): 0 when the rows are all out.
uint64_t TakeTurn(const OrderedBind &bind, Ordered &ordered, std::unique_lock<std::mutex> &lock,
                  const OrderedLocal &local) {
  if (bind.run_rows == 0) return ordered.finished ? 0 : duckdb_vector_size();
  const size_t slot = local.slot;
  while (!ordered.finished && ordered.owner != slot && ordered.owner != SIZE_MAX) {
    const uint64_t position = ordered.position;
    if (!ordered.turn.wait_for(lock, kTurnWait, [&] { return ordered.finished || ordered.owner == SIZE_MAX; }) &&
        ordered.position == position)
      ordered.owner = slot;  // the other thread stopped within its run: this one yields the rest of it
  }
  if (ordered.finished) return 0;
  if (ordered.owner == SIZE_MAX) {
    // A run fills this thread's row group: shorter after a run taken over left part of one in it.
    ordered.owner = slot;
    ordered.run_left = bind.run_rows - local.yielded % bind.run_rows;
  }
  return std::min<uint64_t>(duckdb_vector_size(), ordered.run_left);
}

void OrderedFunction(duckdb_function_info info, duckdb_data_chunk output) {
  const auto *bind = static_cast<const OrderedBind *>(duckdb_function_get_bind_data(info));
  auto *ordered = static_cast<Ordered *>(duckdb_function_get_init_data(info));
  auto *local = static_cast<OrderedLocal *>(duckdb_function_get_local_init_data(info));
  std::unique_lock<std::mutex> lock(ordered->mutex);
  if (local->slot == SIZE_MAX) {
    local->slot = ordered->in_flight.size();
    ordered->in_flight.push_back(UINT64_MAX);
  }
  ordered->in_flight[local->slot] = UINT64_MAX;  // the chunk it yielded last is through its pipeline
  FreeDone(*ordered);
  const uint64_t most = TakeTurn(*bind, *ordered, lock, *local);
  if (most == 0) {
    duckdb_data_chunk_set_size(output, 0);
    return;
  }
  duckdb_vector vectors[kBlockFieldCount + 7];
  for (size_t c = 0; c < kBlockFieldCount + 7; c++) vectors[c] = duckdb_data_chunk_get_vector(output, c);
  auto *insert_time = static_cast<int64_t *>(duckdb_vector_get_data(vectors[kInsertTime]));
  auto *time = static_cast<int64_t *>(duckdb_vector_get_data(vectors[kBlockFieldCount]));
  auto *level = static_cast<int32_t *>(duckdb_vector_get_data(vectors[kBlockFieldCount + 2]));
  const size_t strings[5] = {kBlockFieldCount + 1, kBlockFieldCount + 3, kBlockFieldCount + 4, kBlockFieldCount + 5,
                             kBlockFieldCount + 6};
  duckdb_string_t *text[kBlockFieldCount + 7] = {};
  for (size_t f = 0; f < kBlockFieldCount; f++)
    if (f != kInsertTime) text[f] = static_cast<duckdb_string_t *>(duckdb_vector_get_data(vectors[f]));
  for (const size_t c : strings) text[c] = static_cast<duckdb_string_t *>(duckdb_vector_get_data(vectors[c]));
  uint64_t *validity[kBlockFieldCount + 7] = {};
  auto &heap = ordered->heap;
  const size_t payloads = ordered->sequence.size();
  auto &from = local->from;
  idx_t count = 0;
  const uint64_t first = ordered->position;
  while (count < most) {
    // Every payload whose first time is not after the earliest held row is held before that row is yielded:
    // the payloads not yet decoded then hold only later rows.
    while (ordered->decoded < payloads &&
           (heap.empty() || bind->mins[ordered->sequence[ordered->decoded]] <= heap.front()->Time()))
      if (!HoldNext(info, *bind, *ordered)) {
        ordered->finished = true;
        ordered->turn.notify_all();
        return;
      }
    if (heap.empty()) break;
    // The earliest row is the top payload's (SinkTop keeps it so after each row).
    Held &held = *heap.front();
    const uint32_t r = held.order[held.next++];
    const Rows &rows = held.rows;
    from[count] = held.payload;
    insert_time[count] = bind->insert_times[held.payload];
    time[count] = rows.time[r];
    level[count] = rows.level[r];
    const std::vector<Span> *columns[5] = {&rows.target, &rows.msg, &rows.properties, &rows.trace_id, &rows.span_id};
    for (int c = 0; c < 5; c++) {
      const Span span = (*columns[c])[r];
      if (span.offset == kNull)
        SetNull(vectors[strings[c]], validity[strings[c]], count);
      else
        PointString(text[strings[c]], count, rows.arena.data() + span.offset, span.length);
    }
    count++;
    if (held.next == held.order.size()) {
      // Its last row is out: freed once the chunks pointing into it are through their pipelines.
      std::swap(heap.front(), heap.back());
      ordered->done.emplace_back(first + count - 1, std::move(heap.back()));
      heap.pop_back();
    }
    SinkTop(heap);
  }
  ordered->position += count;
  local->yielded += count;
  ordered->in_flight[local->slot] = first;
  if (count < most) {
    ordered->finished = true;
    ordered->turn.notify_all();
  } else if (bind->run_rows > 0 && (ordered->run_left -= count) == 0) {
    ordered->owner = SIZE_MAX;
    ordered->turn.notify_all();
  }
  lock.unlock();
  // A block field whose value is the same in every row of the chunk (the process's, whichever of its blocks the
  // rows come from) is a constant vector: the Parquet writer's buffer then copies its text once per chunk rather
  // than once per row (DuckDB's ColumnDataCollection copies a constant string once). The rows of overlapping
  // payloads interleave, so the block_id column mostly stays one string per row.
  for (size_t f = 0; f < kBlockFieldCount && count > 0; f++) {
    if (f == kInsertTime) continue;
    if (bind->enum_index[f]) {
      EnumIndexes(*bind, f, from, count, vectors[f], validity[f]);
      continue;
    }
    const uint32_t first = bind->values[from[0] * kBlockFieldCount + f];
    idx_t same = 1;
    while (same < count && bind->values[from[same] * kBlockFieldCount + f] == first) same++;
    if (same == count && first != kNull) {
      const std::string &value = bind->blocks[from[0] * kBlockFieldCount + f];
      duckdb_value constant = duckdb_create_varchar_length(value.data(), value.size());
      duckdb_vector_reference_value(vectors[f], constant);
      duckdb_destroy_value(&constant);
      continue;
    }
    for (idx_t i = 0; i < count; i++) {
      const size_t at = from[i] * kBlockFieldCount + f;
      if (bind->nulls[at])
        SetNull(vectors[f], validity[f], i);
      else
        PointString(text[f], i, bind->blocks[at].data(), bind->blocks[at].size());
    }
  }
  duckdb_data_chunk_set_size(output, count);
}

// registerOtlpLogsTable(connection, root): registers __orrery_otlp_logs in the connection's database.
Napi::Value RegisterOtlpLogsTable(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 2 || !info[0].IsExternal() || !info[1].IsString())
    throw Napi::TypeError::New(env, "registerOtlpLogsTable(connection, root)");
  // @duckdb/node-bindings holds a connection as an External over { duckdb_connection }.
  duckdb_connection connection = *static_cast<duckdb_connection *>(info[0].As<Napi::External<void>>().Data());
  std::string root = info[1].As<Napi::String>().Utf8Value();
  if (root.empty() || root.back() != '/') root.push_back('/');
  struct Definition {
    const char *name;
    bool ordered;  // mins BIGINT[] and blocks VARCHAR[] after file and sizes
    duckdb_table_function_bind_t bind;
    duckdb_table_function_init_t init, local_init;
    duckdb_table_function_t function;
  };
  for (const Definition &d :
       {Definition{"__orrery_otlp_logs", false, LogsBind, LogsInit, LogsLocalInit, LogsFunction},
        Definition{"__orrery_otlp_logs_ordered", true, OrderedBindFunction, OrderedInit, OrderedLocalInit,
                   OrderedFunction}}) {
    duckdb_table_function function = duckdb_create_table_function();
    duckdb_table_function_set_name(function, d.name);
    duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
    duckdb_logical_type ubigint = duckdb_create_logical_type(DUCKDB_TYPE_UBIGINT);
    duckdb_logical_type bigint = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
    duckdb_logical_type sizes = duckdb_create_list_type(ubigint);
    duckdb_logical_type mins = duckdb_create_list_type(bigint);
    duckdb_logical_type blocks = duckdb_create_list_type(varchar);
    duckdb_table_function_add_parameter(function, varchar);
    duckdb_table_function_add_parameter(function, sizes);
    if (d.ordered) {
      duckdb_table_function_add_parameter(function, mins);
      duckdb_table_function_add_parameter(function, blocks);
      duckdb_table_function_add_named_parameter(function, "enums", blocks);
      duckdb_table_function_add_named_parameter(function, "row_group_size", ubigint);
    }
    for (duckdb_logical_type *type : {&blocks, &mins, &sizes, &bigint, &ubigint, &varchar})
      duckdb_destroy_logical_type(type);
    duckdb_table_function_set_extra_info(function, new Registration{root}, Delete<Registration>);
    duckdb_table_function_set_bind(function, d.bind);
    duckdb_table_function_set_init(function, d.init);
    if (d.local_init) duckdb_table_function_set_local_init(function, d.local_init);
    duckdb_table_function_set_function(function, d.function);
    const bool done = duckdb_register_table_function(connection, function) == DuckDBSuccess;
    duckdb_destroy_table_function(&function);
    if (!done) throw Napi::Error::New(env, std::string("DuckDB refused to register ") + d.name);
  }
  return env.Undefined();
}

// Decompresses a stored logs payload on a libuv worker thread: its content when that is protobuf (what
// __orrery_otlp_logs reads), null when it is NDJSON or empty, or cannot be decompressed (the JavaScript path
// then reads it and fails on it as before).
class ContentWorker : public Napi::AsyncWorker {
 public:
  ContentWorker(Napi::Env env, Napi::Uint8Array payload)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        payload_(Napi::Persistent(payload)),  // keeps the bytes alive (and where they are) until OnOK
        data_(payload.Data()),
        size_(payload.ByteLength()) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    try {
      const auto [content, size] = Content(data_, size_, *buffer_, 0);
      protobuf_ = size > 0 && content[0] != '{';
      plain_ = content == data_;
    } catch (const Failure &) {
      protobuf_ = false;
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (!protobuf_) {
      deferred_.Resolve(env.Null());
    } else if (plain_) {
      deferred_.Resolve(payload_.Value());
    } else {
      std::string *held = buffer_.release();
      deferred_.Resolve(Napi::Buffer<char>::New(env, held->data(), held->size(),
                                                [](Napi::Env, char *, std::string *bytes) { delete bytes; }, held));
    }
  }

  void OnError(const Napi::Error &error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Uint8Array> payload_;
  const uint8_t *data_;
  size_t size_;
  std::unique_ptr<std::string> buffer_ = std::make_unique<std::string>();
  bool protobuf_ = false;
  bool plain_ = false;
};

// storedLogsPayloadContent(payload): Promise<Uint8Array | null> (see ContentWorker).
Napi::Value StoredLogsPayloadContent(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "storedLogsPayloadContent(payload: Uint8Array)");
  auto *worker = new ContentWorker(env, info[0].As<Napi::Uint8Array>());
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// Writes a log_entries partition file from the ordered read's inputs on a libuv worker thread (see WriteOrdered):
// resolves to the rows written, or to null, writing nothing, when the writer does not write what the statement
// would (DirectWritable); rejects when the write fails (the file may then be partly written).
class OrderedWriteWorker : public Napi::AsyncWorker {
 public:
  OrderedWriteWorker(Napi::Env env, std::unique_ptr<OrderedBind> bind, std::string out, std::string created_by,
                     DirectOptions options)
      : Napi::AsyncWorker(env),
        deferred_(Napi::Promise::Deferred::New(env)),
        bind_(std::move(bind)),
        out_(std::move(out)),
        created_by_(std::move(created_by)),
        options_(options) {}

  Napi::Promise Promise() const { return deferred_.Promise(); }

  void Execute() override {
    if (!DirectWritable(*bind_)) return;
    try {
      rows_ = static_cast<double>(WriteOrdered(*bind_, out_, created_by_, options_).rows);
    } catch (const std::exception &e) {
      SetError(e.what());
    } catch (const Failure &f) {
      SetError(f.message);
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    deferred_.Resolve(rows_ < 0 ? env.Null() : Napi::Number::New(env, rows_));
  }

  void OnError(const Napi::Error &error) override { deferred_.Reject(error.Value()); }

 private:
  Napi::Promise::Deferred deferred_;
  std::unique_ptr<OrderedBind> bind_;
  std::string out_, created_by_;
  DirectOptions options_;
  double rows_ = -1;
};

// writeOrderedLogsPartition(file, sizes, firstTimes, blocks, out, createdBy[, rowGroupBytes]): Promise<number | null>:
// the arguments of __orrery_otlp_logs_ordered (firstTimes as decimal strings; blocks as orderedBlocks lists them, a
// string or null each), the file to write (see OrderedWriteWorker) and, optionally, the text bytes at which a row
// group is written early (DirectOptions::row_group_bytes; its default otherwise).
Napi::Value WriteOrderedLogsPartition(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  const char *usage =
      "writeOrderedLogsPartition(file: string, sizes: number[], firstTimes: string[], blocks: (string | null)[], "
      "out: string, createdBy: string, rowGroupBytes?: number)";
  if (info.Length() < 6 || !info[0].IsString() || !info[1].IsArray() || !info[2].IsArray() || !info[3].IsArray() ||
      !info[4].IsString() || !info[5].IsString() || (info.Length() > 6 && !info[6].IsNumber()))
    throw Napi::TypeError::New(env, usage);
  DirectOptions options;
  if (info.Length() > 6) {
    const int64_t bytes = info[6].As<Napi::Number>().Int64Value();
    if (bytes < 1) throw Napi::TypeError::New(env, usage);
    options.row_group_bytes = static_cast<size_t>(bytes);
  }
  auto bind = std::make_unique<OrderedBind>();
  bind->file = info[0].As<Napi::String>().Utf8Value();
  const Napi::Array sizes = info[1].As<Napi::Array>(), mins = info[2].As<Napi::Array>(),
                    blocks = info[3].As<Napi::Array>();
  if (mins.Length() != sizes.Length() || blocks.Length() != sizes.Length() * kBlockFieldCount)
    throw Napi::TypeError::New(env, usage);
  bind->offsets.assign(1, 0);
  for (uint32_t i = 0; i < sizes.Length(); i++) {
    bind->offsets.push_back(bind->offsets.back() + static_cast<uint64_t>(sizes.Get(i).As<Napi::Number>().Int64Value()));
    const std::string text = mins.Get(i).As<Napi::String>().Utf8Value();
    int64_t min = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), min);
    if (error != std::errc() || end != text.data() + text.size()) throw Napi::TypeError::New(env, usage);
    bind->mins.push_back(min);
  }
  for (uint32_t i = 0; i < blocks.Length(); i++) {
    const Napi::Value v = blocks.Get(i);
    bind->nulls.push_back(v.IsNull());
    bind->blocks.push_back(v.IsNull() ? "" : v.As<Napi::String>().Utf8Value());
  }
  std::vector<std::unordered_map<std::string, uint32_t>> numbers;
  if (!NumberBlocks(*bind, numbers)) throw Napi::TypeError::New(env, "writeOrderedLogsPartition: " + std::string(kInsertTimeRefused));
  // The six process fields as the statement reads them (the materializer's orderedEnumFields).
  for (size_t f = 0; f < kBlockFieldCount; f++)
    bind->enum_index[f] = f != kInsertTime && f != kProcessProperties && f != kBlockId && !numbers[f].empty() &&
                          numbers[f].size() <= kEnumMembers;
  auto *worker = new OrderedWriteWorker(env, std::move(bind), info[4].As<Napi::String>().Utf8Value(),
                                        info[5].As<Napi::String>().Utf8Value(), options);
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

}  // namespace

void DefineOtlpLogsTable(Napi::Env env, Napi::Object exports) {
  exports.Set("registerOtlpLogsTable", Napi::Function::New(env, RegisterOtlpLogsTable));
  exports.Set("storedLogsPayloadContent", Napi::Function::New(env, StoredLogsPayloadContent));
  exports.Set("writeOrderedLogsPartition", Napi::Function::New(env, WriteOrderedLogsPartition));
}
