// A commit group's object written, synced and closed in one trip to libuv's thread pool (group-write.cc).
#pragma once

#include <napi.h>

// Adds writeSynced to the module's exports.
void DefineGroupWrite(Napi::Env env, Napi::Object exports);
