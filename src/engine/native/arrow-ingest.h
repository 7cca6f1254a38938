// The bulk ingest half of the native addon (arrow-ingest.cc); arrow-export.cc's Init registers it.
#pragma once
#define NAPI_VERSION 8
#include <napi.h>

// exports.ArrowIngest: an Arrow stream DuckDB reads through a view while JavaScript pushes batches.
void DefineArrowIngest(Napi::Env env, Napi::Object exports);
