// The validating scan of an OTLP ExportLogsServiceRequest protobuf body (issue 16), in C++: the same walk,
// rule for rule, as src/ingestion/otlp/logs-scan.ts (read that file for what the scan vouches for and why);
// this one only runs faster on the ingestion path. Its verdict must be the JavaScript one for every body
// (test/ingestion/logs-scan-native.test.ts compares them over random, mutated and poison bodies), so the
// arithmetic follows JavaScript's where it matters: varints are summed as doubles (inexact past 2^53, as
// there), and a tag's field number and wire type come from its value modulo 2^32 (`tag >>> 3`, `tag & 7`).

#define NAPI_VERSION 8
#include <napi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "logs-scan.h"

namespace {

constexpr int kMaxDepth = 16;  // SCAN_MAX_DEPTH
constexpr uint64_t kMaxTime = 9223372036000000000ULL;  // MAX_TIME_UNIX_NANO (src/ingestion/otlp/otlp-fields.ts)
constexpr uint32_t kMaxHi = static_cast<uint32_t>(kMaxTime >> 32);
constexpr uint32_t kMaxLo = static_cast<uint32_t>(kMaxTime & 0xffffffffULL);

constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLen = 2;
constexpr uint32_t kFixed32 = 5;
constexpr double Tag(uint32_t number, uint32_t wire) { return static_cast<double>((number << 3) | wire); }

struct GiveUp {};

// ToUint32 of a varint's value (an integer-valued double below 2^70), as JavaScript's `>>>` and `&` take it.
uint32_t Uint32Of(double value) {
  return static_cast<uint32_t>(value < 4294967296.0 ? value : std::fmod(value, 4294967296.0));
}

class Scan {
 public:
  Scan(const uint8_t *buf, size_t size) : buf_(buf), size_(size) {}

  // Per ResourceLogs: start, end, resource start/end, schema URL start/end (-1: absent), records,
  // then the smallest and largest record time as (high, low) 32-bit halves; empty when not scannable.
  bool Run(std::vector<double> &out) {
    try {
      while (pos_ < size_) {
        if (Varint() != Tag(1, kLen)) return false;
        const size_t end = LengthEnd(size_);
        ResourceLogs(pos_, end, out);
      }
      return true;
    } catch (const GiveUp &) {
      return false;
    }
  }

 private:
  const uint8_t *buf_;
  size_t size_;
  size_t pos_ = 0;
  uint32_t time_hi_ = 0, time_lo_ = 0;
  double records_ = 0;
  uint32_t min_hi_ = 0, min_lo_ = 0, max_hi_ = 0, max_lo_ = 0;

  double Varint() {
    if (pos_ < size_ && buf_[pos_] < 0x80) return buf_[pos_++];
    double result = 0;
    double multiplier = 1;
    for (int i = 0; i < 10; i++) {
      if (pos_ >= size_) throw GiveUp();
      const uint8_t byte = buf_[pos_++];
      result += (byte & 0x7f) * multiplier;
      if (byte < 0x80) return result;
      multiplier *= 128;
    }
    throw GiveUp();
  }

  size_t LengthEnd(size_t limit) {
    const double length = Varint();  // before reading pos_, which it advances
    const double end = static_cast<double>(pos_) + length;
    if (end > static_cast<double>(limit)) throw GiveUp();
    return static_cast<size_t>(end);
  }

  void SkipVarint() {
    for (int i = 0; i < 10; i++) {
      if (pos_ >= size_) throw GiveUp();
      if (buf_[pos_++] < 0x80) return;
    }
    throw GiveUp();
  }

  void String(size_t limit) {
    const size_t end = LengthEnd(limit);
    if (!ValidUtf8(buf_ + pos_, end - pos_)) throw GiveUp();
    pos_ = end;
  }

  void Time(size_t limit) {
    if (pos_ + 8 > limit) throw GiveUp();
    const uint8_t *p = buf_ + pos_;
    time_lo_ = p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24);
    time_hi_ = p[4] | (p[5] << 8) | (p[6] << 16) | (static_cast<uint32_t>(p[7]) << 24);
    pos_ += 8;
    if (time_hi_ > kMaxHi || (time_hi_ == kMaxHi && time_lo_ >= kMaxLo)) throw GiveUp();
  }

  void AnyValue(size_t limit, int depth) {
    if (depth >= kMaxDepth) throw GiveUp();
    bool set = false;
    while (pos_ < limit) {
      const double tag = Varint();
      if (set) throw GiveUp();
      set = true;
      if (tag == Tag(1, kLen)) {  // string_value
        String(limit);
      } else if (tag == Tag(2, kVarint) || tag == Tag(3, kVarint)) {  // bool_value, int_value
        SkipVarint();
      } else if (tag == Tag(4, kFixed64)) {  // double_value
        if (pos_ + 8 > limit) throw GiveUp();
        pos_ += 8;
      } else if (tag == Tag(5, kLen) || tag == Tag(6, kLen)) {  // array_value, kvlist_value: repeated field 1
        const size_t end = LengthEnd(limit);
        while (pos_ < end) {
          if (Varint() != Tag(1, kLen)) throw GiveUp();
          const size_t item_end = LengthEnd(end);
          if (tag == Tag(5, kLen))
            AnyValue(item_end, depth + 1);
          else
            KeyValue(item_end, depth + 1);
        }
        if (pos_ != end) throw GiveUp();
      } else if (tag == Tag(7, kLen)) {  // bytes_value
        pos_ = LengthEnd(limit);
      } else {
        throw GiveUp();
      }
    }
    if (pos_ != limit) throw GiveUp();
  }

  void KeyValue(size_t limit, int depth) {
    bool key = false;
    bool value = false;
    while (pos_ < limit) {
      const double tag = Varint();
      if (tag == Tag(1, kLen) && !key) {
        key = true;
        String(limit);
      } else if (tag == Tag(2, kLen) && !value) {
        value = true;
        AnyValue(LengthEnd(limit), depth);
      } else {
        throw GiveUp();
      }
    }
    if (pos_ != limit) throw GiveUp();
  }

  void Scope(size_t limit) {
    uint8_t seen[5] = {0, 0, 0, 0, 0};
    while (pos_ < limit) {
      const uint32_t tag = Uint32Of(Varint());
      const uint32_t number = tag >> 3;
      if (number < 1 || number > 4 || (number != 3 && seen[number]++ > 0)) throw GiveUp();
      if (number == 4) {
        if ((tag & 7) != kVarint) throw GiveUp();
        SkipVarint();
        continue;
      }
      if ((tag & 7) != kLen) throw GiveUp();
      if (number == 3)
        KeyValue(LengthEnd(limit), 0);
      else
        String(limit);
    }
    if (pos_ != limit) throw GiveUp();
  }

  static constexpr uint32_t kSingularRecordFields = 0b1111110111110;  // 1, 2, 3, 5, 7, 8, 9, 10, 11, 12

  void LogRecord(size_t limit) {
    uint32_t seen = 0;
    uint32_t t_hi = 0, t_lo = 0, o_hi = 0, o_lo = 0;
    while (pos_ < limit) {
      const double tag = Varint();
      const uint32_t number = Uint32Of(tag) >> 3;
      if (number > 12) throw GiveUp();
      const uint32_t bit = 1u << number;
      if ((seen & bit & kSingularRecordFields) != 0) throw GiveUp();
      seen |= bit;
      if (tag == Tag(1, kFixed64)) {
        Time(limit);
        t_hi = time_hi_;
        t_lo = time_lo_;
      } else if (tag == Tag(11, kFixed64)) {
        Time(limit);
        o_hi = time_hi_;
        o_lo = time_lo_;
      } else if (tag == Tag(2, kVarint) || tag == Tag(7, kVarint)) {  // severity_number, dropped_attributes_count
        SkipVarint();
      } else if (tag == Tag(3, kLen) || tag == Tag(12, kLen)) {  // severity_text, event_name
        String(limit);
      } else if (tag == Tag(5, kLen)) {  // body
        AnyValue(LengthEnd(limit), 0);
      } else if (tag == Tag(6, kLen)) {  // attributes
        KeyValue(LengthEnd(limit), 0);
      } else if (tag == Tag(8, kFixed32)) {  // flags
        if (pos_ + 4 > limit) throw GiveUp();
        pos_ += 4;
      } else if (tag == Tag(9, kLen) || tag == Tag(10, kLen)) {  // trace_id, span_id
        const size_t end = LengthEnd(limit);
        const size_t size = end - pos_;
        if (size != 0 && size != (number == 9 ? 16u : 8u)) throw GiveUp();
        pos_ = end;
      } else {
        throw GiveUp();
      }
    }
    if (pos_ != limit) throw GiveUp();
    if (t_hi == 0 && t_lo == 0) {
      t_hi = o_hi;
      t_lo = o_lo;
    }
    if (t_hi == 0 && t_lo == 0) throw GiveUp();
    if (records_ == 0 || t_hi < min_hi_ || (t_hi == min_hi_ && t_lo < min_lo_)) {
      min_hi_ = t_hi;
      min_lo_ = t_lo;
    }
    if (records_ == 0 || t_hi > max_hi_ || (t_hi == max_hi_ && t_lo > max_lo_)) {
      max_hi_ = t_hi;
      max_lo_ = t_lo;
    }
    records_ += 1;
  }

  void ScopeLogs(size_t limit) {
    bool scope_seen = false;
    bool schema_seen = false;
    while (pos_ < limit) {
      const double tag = Varint();
      if (tag == Tag(2, kLen)) {
        LogRecord(LengthEnd(limit));
      } else if (tag == Tag(1, kLen) && !scope_seen) {
        scope_seen = true;
        Scope(LengthEnd(limit));
      } else if (tag == Tag(3, kLen) && !schema_seen) {
        schema_seen = true;
        String(limit);
      } else {
        throw GiveUp();
      }
    }
    if (pos_ != limit) throw GiveUp();
  }

  void ResourceLogs(size_t start, size_t limit, std::vector<double> &out) {
    double resource[2] = {-1, -1};
    double schema_url[2] = {-1, -1};
    records_ = 0;
    min_hi_ = min_lo_ = max_hi_ = max_lo_ = 0;
    while (pos_ < limit) {
      const size_t field_start = pos_;
      const double tag = Varint();
      if (tag == Tag(2, kLen)) {
        ScopeLogs(LengthEnd(limit));
      } else if (tag == Tag(1, kLen) && resource[0] < 0) {
        pos_ = LengthEnd(limit);
        resource[0] = static_cast<double>(field_start);
        resource[1] = static_cast<double>(pos_);
      } else if (tag == Tag(3, kLen) && schema_url[0] < 0) {
        pos_ = LengthEnd(limit);
        schema_url[0] = static_cast<double>(field_start);
        schema_url[1] = static_cast<double>(pos_);
      } else {
        throw GiveUp();
      }
    }
    if (pos_ != limit) throw GiveUp();
    out.insert(out.end(), {static_cast<double>(start), static_cast<double>(limit), resource[0], resource[1],
                           schema_url[0], schema_url[1], records_, static_cast<double>(min_hi_),
                           static_cast<double>(min_lo_), static_cast<double>(max_hi_), static_cast<double>(max_lo_)});
  }
};

// scanLogs(body: Uint8Array): Float64Array of 11 numbers per ResourceLogs (see Scan::Run), or null.
Napi::Value ScanLogs(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() ||
      info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "scanLogs(body: Uint8Array)");
  Napi::Uint8Array body = info[0].As<Napi::Uint8Array>();
  std::vector<double> out;
  if (!ScanLogsBody(body.Data(), body.ByteLength(), out)) return env.Null();
  Napi::Float64Array result = Napi::Float64Array::New(env, out.size());
  if (!out.empty()) std::memcpy(result.Data(), out.data(), out.size() * sizeof(double));
  return result;
}

}  // namespace

// Valid UTF-8 as Node's isUtf8 (and TextDecoder's fatal mode) means it: no overlong forms, no surrogates,
// nothing past U+10FFFF, no cut sequence. ASCII is skipped eight bytes at a time.
bool ValidUtf8(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t word;
      std::memcpy(&word, s + i, 8);
      if ((word & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    const uint8_t c = s[i];
    if (c < 0x80) {
      i += 1;
    } else if (c < 0xc2) {
      return false;
    } else if (c < 0xe0) {
      if (i + 1 >= n || (s[i + 1] & 0xc0) != 0x80) return false;
      i += 2;
    } else if (c < 0xf0) {
      if (i + 2 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80) return false;
      if (c == 0xe0 && s[i + 1] < 0xa0) return false;   // overlong
      if (c == 0xed && s[i + 1] >= 0xa0) return false;  // a surrogate
      i += 3;
    } else if (c < 0xf5) {
      if (i + 3 >= n || (s[i + 1] & 0xc0) != 0x80 || (s[i + 2] & 0xc0) != 0x80 || (s[i + 3] & 0xc0) != 0x80)
        return false;
      if (c == 0xf0 && s[i + 1] < 0x90) return false;   // overlong
      if (c == 0xf4 && s[i + 1] >= 0x90) return false;  // past U+10FFFF
      i += 4;
    } else {
      return false;
    }
  }
  return true;
}

bool ScanLogsBody(const uint8_t *body, size_t size, std::vector<double> &out) { return Scan(body, size).Run(out); }

void DefineLogsScan(Napi::Env env, Napi::Object exports) {
  exports.Set("scanLogs", Napi::Function::New(env, ScanLogs));
}
