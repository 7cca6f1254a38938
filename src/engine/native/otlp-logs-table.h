// The OTLP logs payload table function (otlp-logs-table.cc): registers registerOtlpLogsTable and
// storedLogsPayloadContent on the addon's exports.
#pragma once

#include <napi.h>

void DefineOtlpLogsTable(Napi::Env env, Napi::Object exports);
