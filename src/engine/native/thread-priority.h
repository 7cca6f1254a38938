// Lower CPU priority for threads that work only for the heavy lane (issue 9, item 3): see thread-priority.cc.
#pragma once
#include <napi.h>

#include <string>

// Sets the calling thread's nice value (Linux: per thread). '' on success, else why not (strerror).
std::string LowerThisThread(int nice);

// Adds threadPriorityProblem and setThreadsAtPriority to the module's exports.
void DefineThreadPriority(Napi::Env env, Napi::Object exports);
