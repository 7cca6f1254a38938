// The validating scan of OTLP logs protobuf bodies (logs-scan.cc): registers scanLogs on the addon's exports.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

// The scan itself, callable from any thread (it touches no JavaScript value): true and 11 numbers per
// ResourceLogs appended to `out` (see Scan::Run), or false when the scan does not vouch for the body.
bool ScanLogsBody(const uint8_t *body, size_t size, std::vector<double> &out);

// Valid UTF-8 as Node's isUtf8 and TextDecoder (fatal) mean it; callable from any thread.
bool ValidUtf8(const uint8_t *s, size_t n);

void DefineLogsScan(Napi::Env env, Napi::Object exports);
