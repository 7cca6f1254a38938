// The sketch aggregates of the native addon (sketch-aggregates.cc); arrow-export.cc's Init registers it.
#pragma once
#define NAPI_VERSION 8
#include <napi.h>

// exports.registerSketchFunctions(connection): the native aggregates behind the sketch macros.
void DefineSketchAggregates(Napi::Env env, Napi::Object exports);
