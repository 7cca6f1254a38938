// Which row of a rollup's ring of kept tails a statement reads, without a statement of its own (tail-rows.cc);
// arrow-export.cc's Init registers it.
#pragma once
#define NAPI_VERSION 8
#include <napi.h>

// exports.registerTailRowFunction, setTailReads, forgetTailReads, tailRowGone, forgetTailRing.
void DefineTailRows(Napi::Env env, Napi::Object exports);
