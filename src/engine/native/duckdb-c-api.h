// The part of DuckDB's C API (duckdb.h, stable since 1.0) that the Arrow exporter calls.
// DuckDB's npm packages ship libduckdb.so without its header, so the declarations are
// written out here, exactly as duckdb.h has them.
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
