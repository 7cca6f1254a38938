// OTLP/JSON logs bodies as the protobuf bytes they stand for (logs-json.cc), for the seal (logs-seal.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

// True with `out` holding the ExportLogsServiceRequest protobuf encoding of the OTLP/JSON `body`, or false when
// the transcoder does not vouch for the body (then the JSON is decoded the slow way). Callable from any thread.
bool LogsJsonToProtobuf(const uint8_t *body, size_t size, std::vector<uint8_t> &out);
