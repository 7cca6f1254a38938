// The validating scan of OTLP logs protobuf bodies (logs-scan.cc): registers scanLogs on the addon's exports.
#pragma once

#include <napi.h>

void DefineLogsScan(Napi::Env env, Napi::Object exports);
