// The ack path's work on an OTLP logs body off the event loop (logs-seal.cc): registers sealLogs on the
// addon's exports when this Node exports the sha256 it links.
#pragma once

#include <napi.h>

void DefineLogsSeal(Napi::Env env, Napi::Object exports);
