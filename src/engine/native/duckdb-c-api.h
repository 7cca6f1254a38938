// The part of DuckDB's C API (duckdb.h, stable since 1.0) that the native addon calls, and the
// Arrow C data interface structs (arrow/c/abi.h). DuckDB's npm packages ship libduckdb.so without
// its header, so the declarations are written out here, exactly as those headers have them.
#pragma once
#include <cstdint>

extern "C" {

typedef uint64_t idx_t;
typedef struct _duckdb_data_chunk { void *internal_ptr; } *duckdb_data_chunk;
typedef struct _duckdb_vector { void *internal_ptr; } *duckdb_vector;

typedef struct {
  idx_t deprecated_column_count;
  idx_t deprecated_row_count;
  idx_t deprecated_rows_changed;
  void *deprecated_columns;
  char *deprecated_error_message;
  void *internal_data;
} duckdb_result;

typedef struct {
  union {
    struct {
      uint32_t length;
      char prefix[4];
      char *ptr;
    } pointer;
    struct {
      uint32_t length;
      char inlined[12];
    } inlined;
  } value;
} duckdb_string_t;

typedef struct _duckdb_connection { void *internal_ptr; } *duckdb_connection;
typedef enum { DuckDBSuccess = 0, DuckDBError = 1 } duckdb_state;

struct ArrowSchema {
  const char *format;
  const char *name;
  const char *metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema **children;
  struct ArrowSchema *dictionary;
  void (*release)(struct ArrowSchema *);
  void *private_data;
};

struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void **buffers;
  struct ArrowArray **children;
  struct ArrowArray *dictionary;
  void (*release)(struct ArrowArray *);
  void *private_data;
};

struct ArrowArrayStream {
  int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
  int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
  const char *(*get_last_error)(struct ArrowArrayStream *);
  void (*release)(struct ArrowArrayStream *);
  void *private_data;
};

// duckdb_arrow_stream is an ArrowArrayStream* in duckdb.h (deprecated there, still exported).
duckdb_state duckdb_arrow_scan(duckdb_connection connection, const char *table_name, struct ArrowArrayStream *arrow);

idx_t duckdb_column_count(duckdb_result *result);
duckdb_data_chunk duckdb_fetch_chunk(duckdb_result result);
idx_t duckdb_data_chunk_get_size(duckdb_data_chunk chunk);
idx_t duckdb_data_chunk_get_column_count(duckdb_data_chunk chunk);
duckdb_vector duckdb_data_chunk_get_vector(duckdb_data_chunk chunk, idx_t col_idx);
void duckdb_destroy_data_chunk(duckdb_data_chunk *chunk);
void *duckdb_vector_get_data(duckdb_vector vector);
uint64_t *duckdb_vector_get_validity(duckdb_vector vector);
const char *duckdb_result_error(duckdb_result *result);
// duckdb.h declares the result an enum (duckdb_error_type); an int has its size and its values.
int duckdb_result_error_type(duckdb_result *result);
}
