// OTLP/JSON logs bodies turned into the ExportLogsServiceRequest protobuf bytes they stand for (issue 16), so that
// they take the protobuf path: the validating scan, sha256 and brotli on the same worker thread (logs-seal.cc),
// stored as protobuf and decoded at materialization like any protobuf body. Decoding the JSON on the event loop
// (JSON.parse, objects, NDJSON lines) held OTLP/JSON at ~0.1 M records/s where protobuf bodies went 6x faster.
//
// One pass over the bytes builds no objects: each field of the OTLP schema is written as it is read. It answers
// only for bodies whose meaning it is sure of, the forms OTLP/JSON exporters write: every key a known field of its
// message (lowerCamelCase or snake_case, at most once), the JSON well formed and valid UTF-8, 64-bit integers as
// decimal strings or as numbers up to 2^53 (JSON.parse keeps those exact), ids as hex of their size, enums as
// numbers, bytes as padded standard base64, AnyValues of one kind at most 16 deep. Anything else (enum names,
// exponents, a NUL, a key with escapes, duplicate keys...) gives up: the caller then decodes the body the slow way (JSON.parse and the
// typed reads of otlp-fields.ts), which accepts it or answers the precise 400. What it gives must decode to the
// same records as the slow way gives for the JSON (test/ingestion/logs-json-native.test.ts checks both over random
// and mutated bodies); the protobuf scan then checks its times, ids and strings as for any protobuf body.

#include <charconv>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <vector>

#include "logs-json.h"
#include "logs-scan.h"

namespace {

constexpr int kMaxDepth = 16;  // the protobuf scan's SCAN_MAX_DEPTH: deeper would be given up there anyway
constexpr uint64_t kMaxExact = 1ULL << 53;

constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLen = 2;
constexpr uint32_t kFixed32 = 5;

struct GiveUp {};

// A key of the body, as read (keys with escapes are given up), compared with a field's two spellings.
struct Key {
  const uint8_t *data;
  size_t size;
  bool Is(const char *camel, const char *snake) const {
    return Equals(camel) || (snake != nullptr && Equals(snake));
  }
  bool Equals(const char *name) const { return std::strlen(name) == size && std::memcmp(name, data, size) == 0; }
};

int HexDigit(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Transcode {
 public:
  Transcode(const uint8_t *s, size_t n, std::vector<uint8_t> &out) : s_(s), n_(n), out_(out) {}

  bool Run() {
    if (!ValidUtf8(s_, n_)) return false;
    try {
      Ws();
      uint32_t seen = 0;
      Object([&](const Key &key) {
        if (!key.Is("resourceLogs", "resource_logs")) throw GiveUp();
        Once(seen, 1);
        if (Null()) return;
        Array([&] { Message(1, [&](const Key &k, uint32_t &s) { ResourceLogs(k, s); }); });
      });
      Ws();
      return pos_ == n_;
    } catch (const GiveUp &) {
      return false;
    }
  }

 private:
  const uint8_t *s_;
  size_t n_;
  size_t pos_ = 0;
  std::vector<uint8_t> &out_;

  // --- JSON ---

  void Ws() {
    while (pos_ < n_ && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) pos_++;
  }

  void Expect(uint8_t c) {
    if (pos_ >= n_ || s_[pos_] != c) throw GiveUp();
    pos_++;
  }

  bool Peek(uint8_t c) const { return pos_ < n_ && s_[pos_] == c; }

  // `null` (a field so given is unset, as the slow way reads it); consumed when there.
  bool Null() {
    if (pos_ + 4 <= n_ && std::memcmp(s_ + pos_, "null", 4) == 0) {
      pos_ += 4;
      return true;
    }
    return false;
  }

  // A field key: a string without escapes (no field name has any).
  Key ReadKey() {
    Expect('"');
    const size_t start = pos_;
    while (pos_ < n_ && s_[pos_] != '"') {
      if (s_[pos_] == '\\' || s_[pos_] < 0x20) throw GiveUp();
      pos_++;
    }
    Expect('"');
    return Key{s_ + start, pos_ - 1 - start};
  }

  // An object; `value` is called at each key with the position on its value, and must consume it.
  template <class F>
  void Object(F &&value) {
    Expect('{');
    Ws();
    if (Peek('}')) {
      pos_++;
      return;
    }
    for (;;) {
      const Key key = ReadKey();
      Ws();
      Expect(':');
      Ws();
      value(key);
      Ws();
      if (Peek(',')) {
        pos_++;
        Ws();
        continue;
      }
      Expect('}');
      return;
    }
  }

  // An array; `item` is called at each item and must consume it (a null item is not an unset field: given up).
  template <class F>
  void Array(F &&item) {
    Expect('[');
    Ws();
    if (Peek(']')) {
      pos_++;
      return;
    }
    for (;;) {
      if (Peek('n')) throw GiveUp();
      item();
      Ws();
      if (Peek(',')) {
        pos_++;
        Ws();
        continue;
      }
      Expect(']');
      return;
    }
  }

  static void Once(uint32_t &seen, uint32_t bit) {
    if (seen & (1u << bit)) throw GiveUp();  // a key twice, or in both spellings: JSON.parse keeps one, we don't guess
    seen |= 1u << bit;
  }

  // A string's bytes appended to out_, escapes decoded. A NUL or a lone surrogate is given up.
  void StringBytes() {
    Expect('"');
    for (;;) {
      const size_t start = pos_;
      while (pos_ < n_ && s_[pos_] != '"' && s_[pos_] != '\\' && s_[pos_] >= 0x20) pos_++;
      out_.insert(out_.end(), s_ + start, s_ + pos_);
      if (pos_ >= n_ || s_[pos_] < 0x20) throw GiveUp();
      if (s_[pos_++] == '"') return;
      if (pos_ >= n_) throw GiveUp();
      const uint8_t e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out_.push_back(e);
          break;
        case 'b':
          out_.push_back('\b');
          break;
        case 'f':
          out_.push_back('\f');
          break;
        case 'n':
          out_.push_back('\n');
          break;
        case 'r':
          out_.push_back('\r');
          break;
        case 't':
          out_.push_back('\t');
          break;
        case 'u': {
          uint32_t code = Hex4();
          if (code >= 0xdc00 && code <= 0xdfff) throw GiveUp();
          if (code >= 0xd800 && code <= 0xdbff) {
            if (pos_ + 2 > n_ || s_[pos_] != '\\' || s_[pos_ + 1] != 'u') throw GiveUp();
            pos_ += 2;
            const uint32_t low = Hex4();
            if (low < 0xdc00 || low > 0xdfff) throw GiveUp();
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          }
          if (code == 0) throw GiveUp();
          Utf8(code);
          break;
        }
        default:
          throw GiveUp();
      }
    }
  }

  uint32_t Hex4() {
    if (pos_ + 4 > n_) throw GiveUp();
    uint32_t code = 0;
    for (int i = 0; i < 4; i++) {
      const int d = HexDigit(s_[pos_++]);
      if (d < 0) throw GiveUp();
      code = code << 4 | static_cast<uint32_t>(d);
    }
    return code;
  }

  void Utf8(uint32_t code) {
    if (code < 0x80) {
      out_.push_back(static_cast<uint8_t>(code));
    } else if (code < 0x800) {
      out_.push_back(static_cast<uint8_t>(0xc0 | code >> 6));
      out_.push_back(static_cast<uint8_t>(0x80 | (code & 0x3f)));
    } else if (code < 0x10000) {
      out_.push_back(static_cast<uint8_t>(0xe0 | code >> 12));
      out_.push_back(static_cast<uint8_t>(0x80 | (code >> 6 & 0x3f)));
      out_.push_back(static_cast<uint8_t>(0x80 | (code & 0x3f)));
    } else {
      out_.push_back(static_cast<uint8_t>(0xf0 | code >> 18));
      out_.push_back(static_cast<uint8_t>(0x80 | (code >> 12 & 0x3f)));
      out_.push_back(static_cast<uint8_t>(0x80 | (code >> 6 & 0x3f)));
      out_.push_back(static_cast<uint8_t>(0x80 | (code & 0x3f)));
    }
  }

  // Decimal digits to a uint64 (at least one, no overflow).
  uint64_t Digits(size_t max_digits) {
    const size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < n_ && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const uint64_t d = s_[pos_] - '0';
      if (value > (UINT64_MAX - d) / 10) throw GiveUp();
      value = value * 10 + d;
      pos_++;
    }
    if (pos_ == start || pos_ - start > max_digits) throw GiveUp();
    return value;
  }

  // An integer given as a JSON number (no fraction, no exponent, at most 2^53 in magnitude: JSON.parse's exact
  // range) or as a decimal string (as the slow way's /^-?\d+$/), with its sign; magnitude up to 2^64 - 1.
  uint64_t Integer(bool &negative) {
    negative = false;
    if (Peek('"')) {
      pos_++;
      if (Peek('-')) {
        negative = true;
        pos_++;
      }
      const uint64_t value = Digits(20);
      Expect('"');
      return value;
    }
    if (Peek('-')) {
      negative = true;
      pos_++;
    }
    if (Peek('0') && pos_ + 1 < n_ && s_[pos_ + 1] >= '0' && s_[pos_ + 1] <= '9') throw GiveUp();  // not JSON
    const uint64_t value = Digits(16);
    if (pos_ < n_ && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) throw GiveUp();
    if (value > kMaxExact) throw GiveUp();
    return value;
  }

  uint64_t Unsigned(uint64_t max) {
    bool negative;
    const uint64_t value = Integer(negative);
    if (negative || value > max) throw GiveUp();
    return value;
  }

  // --- protobuf ---

  void Raw(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<uint8_t>(value | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<uint8_t>(value));
  }

  void Tag(uint32_t number, uint32_t wire) { Raw(number << 3 | wire); }

  void Fixed(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; i++) out_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  }

  // A length-delimited field: its tag, one byte kept for its length, `body` writes the content, then the length
  // (moving the content when it needs more bytes). Dropped when empty and `keep_empty` is false (proto3's
  // default: the same message decoded).
  template <class F>
  void Delimited(uint32_t number, bool keep_empty, F &&body) {
    const size_t tag_start = out_.size();
    Tag(number, kLen);
    out_.push_back(0);
    const size_t start = out_.size();
    body();
    const size_t length = out_.size() - start;
    if (length == 0 && !keep_empty) {
      out_.resize(tag_start);
      return;
    }
    if (length < 0x80) {
      out_[start - 1] = static_cast<uint8_t>(length);
      return;
    }
    uint8_t prefix[10];
    int size = 0;
    uint64_t v = length;
    for (; v >= 0x80; v >>= 7) prefix[size++] = static_cast<uint8_t>(v | 0x80);
    prefix[size++] = static_cast<uint8_t>(v);
    out_.insert(out_.begin() + static_cast<std::ptrdiff_t>(start), static_cast<size_t>(size - 1), 0);
    std::memcpy(out_.data() + start - 1, prefix, static_cast<size_t>(size));
  }

  // A message field from a JSON object; `field` is called at each key with the object's bits of keys seen.
  template <class F>
  void Message(uint32_t number, F &&field) {
    Delimited(number, true, [&] {
      uint32_t seen = 0;
      Object([&](const Key &key) { field(key, seen); });
    });
  }

  void StringField(uint32_t number, bool keep_empty) {
    if (!Peek('"')) throw GiveUp();
    Delimited(number, keep_empty, [&] { StringBytes(); });
  }

  // trace_id / span_id: hex of `size` bytes, or "" (unset).
  void Id(uint32_t number, size_t size) {
    Expect('"');
    const size_t start = pos_;
    while (pos_ < n_ && s_[pos_] != '"') pos_++;
    const size_t digits = pos_ - start;
    Expect('"');
    if (digits == 0) return;
    if (digits != 2 * size) throw GiveUp();
    Tag(number, kLen);
    Raw(size);
    for (size_t i = 0; i < size; i++) {
      const int hi = HexDigit(s_[start + 2 * i]);
      const int lo = HexDigit(s_[start + 2 * i + 1]);
      if (hi < 0 || lo < 0) throw GiveUp();
      out_.push_back(static_cast<uint8_t>(hi << 4 | lo));
    }
  }

  // --- OTLP ---

  void ResourceLogs(const Key &key, uint32_t &seen) {
    if (key.Is("resource", nullptr)) {
      Once(seen, 1);
      if (!Null()) Message(1, [&](const Key &k, uint32_t &s) { Resource(k, s); });
    } else if (key.Is("scopeLogs", "scope_logs")) {
      Once(seen, 2);
      if (!Null()) Array([&] { Message(2, [&](const Key &k, uint32_t &s) { ScopeLogs(k, s); }); });
    } else if (key.Is("schemaUrl", "schema_url")) {
      Once(seen, 3);
      if (!Null()) StringField(3, false);
    } else {
      throw GiveUp();
    }
  }

  void Resource(const Key &key, uint32_t &seen) {
    if (key.Is("attributes", nullptr)) {
      Once(seen, 1);
      if (!Null()) Attributes(1, 0);
    } else if (key.Is("droppedAttributesCount", "dropped_attributes_count")) {
      Once(seen, 2);
      if (!Null()) Uint32Field(2);
    } else {
      throw GiveUp();
    }
  }

  void ScopeLogs(const Key &key, uint32_t &seen) {
    if (key.Is("scope", nullptr)) {
      Once(seen, 1);
      if (!Null()) Message(1, [&](const Key &k, uint32_t &s) { Scope(k, s); });
    } else if (key.Is("logRecords", "log_records")) {
      Once(seen, 2);
      if (!Null()) Array([&] { Message(2, [&](const Key &k, uint32_t &s) { LogRecord(k, s); }); });
    } else if (key.Is("schemaUrl", "schema_url")) {
      Once(seen, 3);
      if (!Null()) StringField(3, false);
    } else {
      throw GiveUp();
    }
  }

  void Scope(const Key &key, uint32_t &seen) {
    if (key.Is("name", nullptr)) {
      Once(seen, 1);
      if (!Null()) StringField(1, false);
    } else if (key.Is("version", nullptr)) {
      Once(seen, 2);
      if (!Null()) StringField(2, false);
    } else if (key.Is("attributes", nullptr)) {
      Once(seen, 3);
      if (!Null()) Attributes(3, 0);
    } else if (key.Is("droppedAttributesCount", "dropped_attributes_count")) {
      Once(seen, 4);
      if (!Null()) Uint32Field(4);
    } else {
      throw GiveUp();
    }
  }

  void Uint32Field(uint32_t number) {
    const uint64_t value = Unsigned(UINT32_MAX);
    if (value == 0) return;
    Tag(number, kVarint);
    Raw(value);
  }

  void LogRecord(const Key &key, uint32_t &seen) {
      if (key.Is("timeUnixNano", "time_unix_nano")) {
        Once(seen, 1);
        if (!Null()) Time(1);
      } else if (key.Is("observedTimeUnixNano", "observed_time_unix_nano")) {
        Once(seen, 11);
        if (!Null()) Time(11);
      } else if (key.Is("severityNumber", "severity_number")) {
        Once(seen, 2);
        if (Null()) return;
        // Numbers only: a name would need the enum's table; the slow way reads those.
        const uint64_t value = Unsigned(INT32_MAX);
        if (value == 0) return;
        Tag(2, kVarint);
        Raw(value);
      } else if (key.Is("severityText", "severity_text")) {
        Once(seen, 3);
        if (!Null()) StringField(3, false);
      } else if (key.Is("body", nullptr)) {
        Once(seen, 5);
        if (!Null()) Delimited(5, true, [&] { AnyValue(0); });
      } else if (key.Is("attributes", nullptr)) {
        Once(seen, 6);
        if (!Null()) Attributes(6, 0);
      } else if (key.Is("droppedAttributesCount", "dropped_attributes_count")) {
        Once(seen, 7);
        if (!Null()) Uint32Field(7);
      } else if (key.Is("flags", nullptr)) {
        Once(seen, 8);
        if (Null()) return;
        const uint64_t value = Unsigned(UINT32_MAX);
        if (value == 0) return;
        Tag(8, kFixed32);
        Fixed(value, 4);
      } else if (key.Is("traceId", "trace_id")) {
        Once(seen, 9);
        if (!Null()) Id(9, 16);
      } else if (key.Is("spanId", "span_id")) {
        Once(seen, 10);
        if (!Null()) Id(10, 8);
      } else if (key.Is("eventName", "event_name")) {
        Once(seen, 12);
        if (!Null()) StringField(12, false);
      } else {
        throw GiveUp();
      }
  }

  // A fixed64 time (0 is unset; the range is the protobuf scan's to check, as for any protobuf body).
  void Time(uint32_t number) {
    const uint64_t value = Unsigned(UINT64_MAX);
    if (value == 0) return;
    Tag(number, kFixed64);
    Fixed(value, 8);
  }

  // A repeated KeyValue field.
  void Attributes(uint32_t number, int depth) {
    Array([&] { Message(number, [&](const Key &k, uint32_t &s) { KeyValue(k, s, depth); }); });
  }

  void KeyValue(const Key &key, uint32_t &seen, int depth) {
    if (key.Is("key", nullptr)) {
      Once(seen, 1);
      if (!Null()) StringField(1, false);
    } else if (key.Is("value", nullptr)) {
      Once(seen, 2);
      if (!Null()) Delimited(2, true, [&] { AnyValue(depth); });
    } else {
      throw GiveUp();
    }
  }

  // An AnyValue: one kind set at most (a kind given as null is unset, as the slow way reads it).
  void AnyValue(int depth) {
    if (depth >= kMaxDepth) throw GiveUp();
    uint32_t seen = 0;
    bool set = false;
    Object([&](const Key &key) {
      const uint32_t kind = KindOf(key);
      Once(seen, kind);
      if (Null()) return;
      if (set) throw GiveUp();
      set = true;
      if (kind == 1) {
        StringField(1, true);
      } else if (kind == 2) {
        bool value;
        if (n_ - pos_ >= 4 && std::memcmp(s_ + pos_, "true", 4) == 0) {
          value = true;
          pos_ += 4;
        } else if (n_ - pos_ >= 5 && std::memcmp(s_ + pos_, "false", 5) == 0) {
          value = false;
          pos_ += 5;
        } else {
          throw GiveUp();
        }
        Tag(2, kVarint);
        Raw(value ? 1 : 0);
      } else if (kind == 3) {
        bool negative;
        const uint64_t magnitude = Integer(negative);
        if (negative ? magnitude > (1ULL << 63) : magnitude > static_cast<uint64_t>(INT64_MAX)) throw GiveUp();
        Tag(3, kVarint);
        Raw(negative ? ~magnitude + 1 : magnitude);  // two's complement, as protobuf writes an int64
      } else if (kind == 4) {
        Tag(4, kFixed64);
        Fixed(Double(), 8);
      } else if (kind == 5) {
        Message(5, [&](const Key &k, uint32_t &s) {
          if (!k.Is("values", nullptr)) throw GiveUp();
          Once(s, 1);
          if (Null()) return;
          Array([&] { Delimited(1, true, [&] { AnyValue(depth + 1); }); });
        });
      } else if (kind == 7) {
        if (!Peek('"')) throw GiveUp();
        Delimited(7, true, [&] { Base64(); });
      } else {
        Message(6, [&](const Key &k, uint32_t &s) {
          if (!k.Is("values", nullptr)) throw GiveUp();
          Once(s, 1);
          if (Null()) return;
          Attributes(1, depth + 1);
        });
      }
    });
  }

  // The AnyValue field a key names (its protobuf number); unknown keys are given up.
  static uint32_t KindOf(const Key &key) {
    if (key.Is("stringValue", "string_value")) return 1;
    if (key.Is("boolValue", "bool_value")) return 2;
    if (key.Is("intValue", "int_value")) return 3;
    if (key.Is("doubleValue", "double_value")) return 4;
    if (key.Is("arrayValue", "array_value")) return 5;
    if (key.Is("kvlistValue", "kvlist_value")) return 6;
    if (key.Is("bytesValue", "bytes_value")) return 7;
    throw GiveUp();
  }

  // bytesValue: standard base64 in groups of four, '=' only as the last group's padding (what Buffer.from(s,
  // 'base64') reads to the same bytes; the slow way's looser forms, url-safe or unpadded, are given up). Bits
  // past the last byte are dropped, as Node drops them.
  void Base64() {
    Expect('"');
    const size_t start = pos_;
    while (pos_ < n_ && s_[pos_] != '"') pos_++;
    const size_t end = pos_;
    Expect('"');
    if ((end - start) % 4 != 0) throw GiveUp();
    for (size_t i = start; i < end; i += 4) {
      int v[4];
      int padding = 0;
      for (int j = 0; j < 4; j++) {
        const uint8_t c = s_[i + j];
        if (c == '=' && i + 4 == end && j >= 2 && (j == 3 || s_[i + 3] == '=')) {
          v[j] = 0;
          padding++;
          continue;
        }
        if (padding > 0) throw GiveUp();
        v[j] = c >= 'A' && c <= 'Z'   ? c - 'A'
               : c >= 'a' && c <= 'z' ? c - 'a' + 26
               : c >= '0' && c <= '9' ? c - '0' + 52
               : c == '+'             ? 62
               : c == '/'             ? 63
                                      : -1;
        if (v[j] < 0) throw GiveUp();
      }
      const uint32_t bits = static_cast<uint32_t>(v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3]);
      out_.push_back(static_cast<uint8_t>(bits >> 16));
      if (padding < 2) out_.push_back(static_cast<uint8_t>(bits >> 8));
      if (padding < 1) out_.push_back(static_cast<uint8_t>(bits));
    }
  }

  // A JSON number as the bits of the double JSON.parse would give (from_chars rounds the same: to nearest), or the
  // strings "NaN", "Infinity", "-Infinity". Other numeric strings: given up.
  uint64_t Double() {
    double value;
    if (Peek('"')) {
      static const char *const kSpecial[] = {"\"NaN\"", "\"Infinity\"", "\"-Infinity\""};
      static const double kValues[] = {__builtin_nan(""), __builtin_inf(), -__builtin_inf()};
      int found = -1;
      for (int i = 0; i < 3; i++) {
        const size_t len = std::strlen(kSpecial[i]);
        if (n_ - pos_ >= len && std::memcmp(s_ + pos_, kSpecial[i], len) == 0) {
          found = i;
          pos_ += len;
          break;
        }
      }
      if (found < 0) throw GiveUp();
      value = kValues[found];
    } else {
      // The JSON number grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
      const size_t start = pos_;
      if (Peek('-')) pos_++;
      if (Peek('0')) {
        pos_++;
      } else {
        const size_t d = pos_;
        while (pos_ < n_ && s_[pos_] >= '0' && s_[pos_] <= '9') pos_++;
        if (pos_ == d) throw GiveUp();
      }
      if (Peek('.')) {
        pos_++;
        const size_t d = pos_;
        while (pos_ < n_ && s_[pos_] >= '0' && s_[pos_] <= '9') pos_++;
        if (pos_ == d) throw GiveUp();
      }
      if (Peek('e') || Peek('E')) {
        pos_++;
        if (Peek('+') || Peek('-')) pos_++;
        const size_t d = pos_;
        while (pos_ < n_ && s_[pos_] >= '0' && s_[pos_] <= '9') pos_++;
        if (pos_ == d) throw GiveUp();
      }
      const char *text = reinterpret_cast<const char *>(s_ + start);
      const std::from_chars_result parsed = std::from_chars(text, text + (pos_ - start), value);
      // Out of range: JSON.parse gives an infinity or zero; from_chars reports it instead (rare: the slow way).
      if (parsed.ec != std::errc() || parsed.ptr != text + (pos_ - start)) throw GiveUp();
    }
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    return bits;
  }
};

}  // namespace

bool LogsJsonToProtobuf(const uint8_t *body, size_t size, std::vector<uint8_t> &out) {
  out.clear();
  out.reserve(size / 2);
  return Transcode(body, size, out).Run();
}
