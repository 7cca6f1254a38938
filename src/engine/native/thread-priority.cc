// Lower CPU priority for the threads that work only for the heavy lane's DuckDB instance (issue 9,
// item 3). Linux schedules threads, and a thread's nice value is its own (setpriority with a thread
// id) and passes to the threads it creates. A heavy statement runs on a thread of its exporter's
// (arrow-export.cc), which lowers itself first; the instance's background threads are made by a
// `SET threads` run on a lowered thread here, so they inherit its nice value. Shared threads (libuv's
// pool, the event loop) are never lowered: without privileges a thread cannot raise its priority
// again, and they also run small statements and ingestion.
#include "thread-priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "duckdb-c-api.h"

std::string LowerThisThread(int nice) {
  // PRIO_PROCESS with a thread id sets that one thread's nice value on Linux.
  if (setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), nice) == 0) return "";
  return std::strerror(errno);
}

namespace {

// threadPriorityProblem(nice): '' when a thread may lower itself to `nice`, else why not. Tried on a
// thread made for it, which then ends: the caller's own priority is untouched.
Napi::Value ThreadPriorityProblem(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "threadPriorityProblem(nice)");
  const int nice = info[0].As<Napi::Number>().Int32Value();
  std::string problem;
  std::thread([&] { problem = LowerThisThread(nice); }).join();
  return Napi::String::New(env, problem);
}

// setThreadsAtPriority(connection, threads, nice): runs `SET threads = <threads>` on the connection
// from a thread lowered to `nice`. DuckDB (re)launches its background threads at the end of that
// statement, on the thread that ran it, so they start with its nice value. '' or DuckDB's error.
Napi::Value SetThreadsAtPriority(const Napi::CallbackInfo &info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[0].IsExternal() || !info[1].IsNumber() || !info[2].IsNumber())
    throw Napi::TypeError::New(env, "setThreadsAtPriority(connection, threads, nice)");
  // @duckdb/node-bindings holds a connection as an External over { duckdb_connection }.
  duckdb_connection connection = *static_cast<duckdb_connection *>(info[0].As<Napi::External<void>>().Data());
  if (!connection) throw Napi::TypeError::New(env, "setThreadsAtPriority: the connection is closed");
  const std::string sql = "SET threads = " + std::to_string(info[1].As<Napi::Number>().Int64Value());
  const int nice = info[2].As<Napi::Number>().Int32Value();
  std::string error;
  std::thread([&] {
    error = LowerThisThread(nice);
    if (!error.empty()) return;
    duckdb_result result;
    if (duckdb_query(connection, sql.c_str(), &result) != DuckDBSuccess) {
      const char *message = duckdb_result_error(&result);
      error = message && *message ? message : "SET threads failed";
    }
    duckdb_destroy_result(&result);
  }).join();
  return Napi::String::New(env, error);
}

}  // namespace

void DefineThreadPriority(Napi::Env env, Napi::Object exports) {
  exports.Set("threadPriorityProblem", Napi::Function::New(env, ThreadPriorityProblem));
  exports.Set("setThreadsAtPriority", Napi::Function::New(env, SetThreadsAtPriority));
}
