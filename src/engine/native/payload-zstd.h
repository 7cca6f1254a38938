// The stored payload's zstd codec (payload-zstd.cc): what logs-seal.cc compresses a logs body with and what
// otlp-logs-table.cc and payloadContent (through zstdContent) decompress it with.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <memory>

// The first byte of a protobuf payload stored zstd (PROTOBUF_ZSTD_MARK in src/ingestion/ingestion-service.ts).
constexpr uint8_t kProtobufZstdMark = 0xd7;

// A protobuf body as a PROTOBUF_ZSTD_MARK payload (the mark, its length as a varint, then its zstd frame) in `out`,
// `size` bytes of it; false when zstd fails.
bool ZstdPayload(const uint8_t *in, size_t n, std::unique_ptr<uint8_t[]> &out, size_t &size);

// Whether the zstd frame `in` states `size` as its content's length (its header, which ZstdPayload writes): what
// the payload's own length says is then to be believed before that much memory is taken for it.
bool ZstdStates(const uint8_t *in, size_t n, size_t size);

// Decompresses the zstd frame `in` into `out`, which must hold exactly `size` bytes: false when the frame is
// damaged or does not hold `size` bytes.
bool ZstdDecompress(const uint8_t *in, size_t n, uint8_t *out, size_t size);

// Adds zstdPayload and zstdContent to the module's exports.
void DefinePayloadZstd(Napi::Env env, Napi::Object exports);
