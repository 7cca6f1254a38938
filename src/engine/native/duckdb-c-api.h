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
typedef struct _duckdb_prepared_statement { void *internal_ptr; } *duckdb_prepared_statement;
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

duckdb_state duckdb_query(duckdb_connection connection, const char *query, duckdb_result *out_result);
duckdb_state duckdb_execute_prepared_streaming(duckdb_prepared_statement prepared_statement, duckdb_result *out_result);
typedef struct _duckdb_pending_result { void *internal_ptr; } *duckdb_pending_result;
typedef enum {
  DUCKDB_PENDING_RESULT_READY = 0,
  DUCKDB_PENDING_RESULT_NOT_READY = 1,
  DUCKDB_PENDING_ERROR = 2,
  DUCKDB_PENDING_NO_TASKS_AVAILABLE = 3
} duckdb_pending_state;
duckdb_state duckdb_pending_prepared_streaming(duckdb_prepared_statement prepared_statement,
                                               duckdb_pending_result *out_result);
void duckdb_destroy_pending(duckdb_pending_result *pending_result);
const char *duckdb_pending_error(duckdb_pending_result pending_result);
duckdb_pending_state duckdb_pending_execute_task(duckdb_pending_result pending_result);
duckdb_state duckdb_execute_pending(duckdb_pending_result pending_result, duckdb_result *out_result);
void duckdb_destroy_result(duckdb_result *result);
idx_t duckdb_column_count(duckdb_result *result);
// duckdb.h declares the type an enum (duckdb_type); an int has its size and its values.
int duckdb_column_type(duckdb_result *result, idx_t col);
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

// Aggregate functions (sketch-aggregates.cc).
typedef struct _duckdb_logical_type { void *internal_ptr; } *duckdb_logical_type;
typedef struct _duckdb_function_info { void *internal_ptr; } *duckdb_function_info;
typedef struct _duckdb_aggregate_function { void *internal_ptr; } *duckdb_aggregate_function;
typedef struct _duckdb_aggregate_state { void *internal_ptr; } *duckdb_aggregate_state;
typedef struct {
  uint64_t offset;
  uint64_t length;
} duckdb_list_entry;
// duckdb_type's values for the types used here.
enum { DUCKDB_TYPE_INTEGER = 4, DUCKDB_TYPE_UBIGINT = 9, DUCKDB_TYPE_DOUBLE = 11 };
typedef idx_t (*duckdb_aggregate_state_size)(duckdb_function_info info);
typedef void (*duckdb_aggregate_init_t)(duckdb_function_info info, duckdb_aggregate_state state);
typedef void (*duckdb_aggregate_destroy_t)(duckdb_aggregate_state *states, idx_t count);
typedef void (*duckdb_aggregate_update_t)(duckdb_function_info info, duckdb_data_chunk input,
                                          duckdb_aggregate_state *states);
typedef void (*duckdb_aggregate_combine_t)(duckdb_function_info info, duckdb_aggregate_state *source,
                                           duckdb_aggregate_state *target, idx_t count);
typedef void (*duckdb_aggregate_finalize_t)(duckdb_function_info info, duckdb_aggregate_state *source,
                                            duckdb_vector result, idx_t count, idx_t offset);

// duckdb.h declares the argument an enum (duckdb_type); an int has its size and its values.
duckdb_logical_type duckdb_create_logical_type(int type);
duckdb_logical_type duckdb_create_list_type(duckdb_logical_type type);
void duckdb_logical_type_set_alias(duckdb_logical_type type, const char *alias);
duckdb_logical_type duckdb_create_map_type(duckdb_logical_type key_type, duckdb_logical_type value_type);
void duckdb_destroy_logical_type(duckdb_logical_type *type);
duckdb_aggregate_function duckdb_create_aggregate_function();
void duckdb_destroy_aggregate_function(duckdb_aggregate_function *aggregate_function);
void duckdb_aggregate_function_set_name(duckdb_aggregate_function aggregate_function, const char *name);
void duckdb_aggregate_function_add_parameter(duckdb_aggregate_function aggregate_function, duckdb_logical_type type);
void duckdb_aggregate_function_set_return_type(duckdb_aggregate_function aggregate_function, duckdb_logical_type type);
void duckdb_aggregate_function_set_functions(duckdb_aggregate_function aggregate_function,
                                             duckdb_aggregate_state_size state_size, duckdb_aggregate_init_t state_init,
                                             duckdb_aggregate_update_t update, duckdb_aggregate_combine_t combine,
                                             duckdb_aggregate_finalize_t finalize);
void duckdb_aggregate_function_set_destructor(duckdb_aggregate_function aggregate_function,
                                              duckdb_aggregate_destroy_t destroy);
duckdb_state duckdb_register_aggregate_function(duckdb_connection con, duckdb_aggregate_function aggregate_function);
void duckdb_aggregate_function_set_error(duckdb_function_info info, const char *error);
typedef void (*duckdb_delete_callback_t)(void *data);
void duckdb_aggregate_function_set_extra_info(duckdb_aggregate_function aggregate_function, void *extra_info,
                                              duckdb_delete_callback_t destroy);
void *duckdb_aggregate_function_get_extra_info(duckdb_function_info info);
duckdb_vector duckdb_list_vector_get_child(duckdb_vector vector);
idx_t duckdb_list_vector_get_size(duckdb_vector vector);
duckdb_state duckdb_list_vector_set_size(duckdb_vector vector, idx_t size);
duckdb_state duckdb_list_vector_reserve(duckdb_vector vector, idx_t required_capacity);
duckdb_vector duckdb_struct_vector_get_child(duckdb_vector vector, idx_t index);

// Table functions (otlp-logs-table.cc).
typedef struct _duckdb_table_function { void *internal_ptr; } *duckdb_table_function;
typedef struct _duckdb_bind_info { void *internal_ptr; } *duckdb_bind_info;
typedef struct _duckdb_init_info { void *internal_ptr; } *duckdb_init_info;
typedef struct _duckdb_value { void *internal_ptr; } *duckdb_value;
enum { DUCKDB_TYPE_BIGINT = 5, DUCKDB_TYPE_VARCHAR = 17 };
typedef void (*duckdb_table_function_bind_t)(duckdb_bind_info info);
typedef void (*duckdb_table_function_init_t)(duckdb_init_info info);
typedef void (*duckdb_table_function_t)(duckdb_function_info info, duckdb_data_chunk output);
duckdb_table_function duckdb_create_table_function();
void duckdb_destroy_table_function(duckdb_table_function *table_function);
void duckdb_table_function_set_name(duckdb_table_function table_function, const char *name);
void duckdb_table_function_add_parameter(duckdb_table_function table_function, duckdb_logical_type type);
void duckdb_table_function_set_extra_info(duckdb_table_function table_function, void *extra_info,
                                          duckdb_delete_callback_t destroy);
void duckdb_table_function_set_bind(duckdb_table_function table_function, duckdb_table_function_bind_t bind);
void duckdb_table_function_set_init(duckdb_table_function table_function, duckdb_table_function_init_t init);
void duckdb_table_function_set_local_init(duckdb_table_function table_function, duckdb_table_function_init_t init);
void duckdb_table_function_set_function(duckdb_table_function table_function, duckdb_table_function_t function);
duckdb_state duckdb_register_table_function(duckdb_connection con, duckdb_table_function function);
void *duckdb_bind_get_extra_info(duckdb_bind_info info);
void duckdb_bind_add_result_column(duckdb_bind_info info, const char *name, duckdb_logical_type type);
duckdb_value duckdb_bind_get_parameter(duckdb_bind_info info, idx_t index);
void duckdb_bind_set_bind_data(duckdb_bind_info info, void *bind_data, duckdb_delete_callback_t destroy);
void duckdb_bind_set_cardinality(duckdb_bind_info info, idx_t cardinality, bool is_exact);
void duckdb_bind_set_error(duckdb_bind_info info, const char *error);
void *duckdb_init_get_bind_data(duckdb_init_info info);
void duckdb_init_set_init_data(duckdb_init_info info, void *init_data, duckdb_delete_callback_t destroy);
void duckdb_init_set_max_threads(duckdb_init_info info, idx_t max_threads);
void *duckdb_function_get_bind_data(duckdb_function_info info);
void *duckdb_function_get_init_data(duckdb_function_info info);
void *duckdb_function_get_local_init_data(duckdb_function_info info);
void duckdb_function_set_error(duckdb_function_info info, const char *error);
void duckdb_data_chunk_set_size(duckdb_data_chunk chunk, idx_t size);
void duckdb_vector_assign_string_element_len(duckdb_vector vector, idx_t index, const char *str, idx_t str_len);
void duckdb_vector_ensure_validity_writable(duckdb_vector vector);
void duckdb_validity_set_row_invalid(uint64_t *validity, idx_t row);
idx_t duckdb_vector_size();
char *duckdb_get_varchar(duckdb_value value);
idx_t duckdb_get_list_size(duckdb_value value);
duckdb_value duckdb_get_list_child(duckdb_value value, idx_t index);
void duckdb_destroy_value(duckdb_value *value);
void duckdb_free(void *ptr);
uint64_t duckdb_get_uint64(duckdb_value val);
int64_t duckdb_get_int64(duckdb_value val);
bool duckdb_is_null_value(duckdb_value value);
duckdb_value duckdb_create_varchar_length(const char *text, idx_t length);
void duckdb_vector_reference_value(duckdb_vector vector, duckdb_value value);
void duckdb_init_set_error(duckdb_init_info info, const char *error);
void duckdb_table_function_add_named_parameter(duckdb_table_function table_function, const char *name,
                                               duckdb_logical_type type);
duckdb_value duckdb_bind_get_named_parameter(duckdb_bind_info info, const char *name);
duckdb_logical_type duckdb_create_enum_type(const char **member_names, idx_t member_count);
// Returns a duckdb_type (an int here, as above): DUCKDB_TYPE_UTINYINT, _USMALLINT or _UINTEGER.
int duckdb_enum_internal_type(duckdb_logical_type type);
enum { DUCKDB_TYPE_UTINYINT = 6, DUCKDB_TYPE_USMALLINT = 7, DUCKDB_TYPE_UINTEGER = 8 };

// Scalar functions with a bind and a per-run init (tail-rows.cc).
typedef struct _duckdb_scalar_function { void *internal_ptr; } *duckdb_scalar_function;
typedef struct _duckdb_expression { void *internal_ptr; } *duckdb_expression;
typedef struct _duckdb_client_context { void *internal_ptr; } *duckdb_client_context;
typedef struct _duckdb_error_data { void *internal_ptr; } *duckdb_error_data;
typedef void (*duckdb_scalar_function_t)(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output);
typedef void (*duckdb_scalar_function_bind_t)(duckdb_bind_info info);
typedef void (*duckdb_scalar_function_init_t)(duckdb_init_info info);
typedef void *(*duckdb_copy_callback_t)(void *data);
duckdb_scalar_function duckdb_create_scalar_function();
void duckdb_destroy_scalar_function(duckdb_scalar_function *scalar_function);
void duckdb_scalar_function_set_name(duckdb_scalar_function scalar_function, const char *name);
void duckdb_scalar_function_set_volatile(duckdb_scalar_function scalar_function);
void duckdb_scalar_function_add_parameter(duckdb_scalar_function scalar_function, duckdb_logical_type type);
void duckdb_scalar_function_set_return_type(duckdb_scalar_function scalar_function, duckdb_logical_type type);
void duckdb_scalar_function_set_bind(duckdb_scalar_function scalar_function, duckdb_scalar_function_bind_t bind);
void duckdb_scalar_function_set_init(duckdb_scalar_function scalar_function, duckdb_scalar_function_init_t init);
void duckdb_scalar_function_set_function(duckdb_scalar_function scalar_function, duckdb_scalar_function_t function);
duckdb_state duckdb_register_scalar_function(duckdb_connection con, duckdb_scalar_function scalar_function);
void duckdb_scalar_function_set_bind_data(duckdb_bind_info info, void *bind_data, duckdb_delete_callback_t destroy);
void duckdb_scalar_function_set_bind_data_copy(duckdb_bind_info info, duckdb_copy_callback_t copy);
void duckdb_scalar_function_bind_set_error(duckdb_bind_info info, const char *error);
idx_t duckdb_scalar_function_bind_get_argument_count(duckdb_bind_info info);
duckdb_expression duckdb_scalar_function_bind_get_argument(duckdb_bind_info info, idx_t index);
void duckdb_scalar_function_get_client_context(duckdb_bind_info info, duckdb_client_context *out_context);
void duckdb_scalar_function_init_get_client_context(duckdb_init_info info, duckdb_client_context *out_context);
void *duckdb_scalar_function_init_get_bind_data(duckdb_init_info info);
void duckdb_scalar_function_init_set_state(duckdb_init_info info, void *state, duckdb_delete_callback_t destroy);
void duckdb_scalar_function_init_set_error(duckdb_init_info info, const char *error);
void *duckdb_scalar_function_get_state(duckdb_function_info info);
void duckdb_scalar_function_set_extra_info(duckdb_scalar_function scalar_function, void *extra_info,
                                           duckdb_delete_callback_t destroy);
void *duckdb_scalar_function_init_get_extra_info(duckdb_init_info info);
bool duckdb_expression_is_foldable(duckdb_expression expr);
duckdb_error_data duckdb_expression_fold(duckdb_client_context context, duckdb_expression expr, duckdb_value *out_value);
void duckdb_destroy_expression(duckdb_expression *expr);
bool duckdb_error_data_has_error(duckdb_error_data error_data);
void duckdb_destroy_error_data(duckdb_error_data *error_data);
void duckdb_connection_get_client_context(duckdb_connection connection, duckdb_client_context *out_context);
idx_t duckdb_client_context_get_connection_id(duckdb_client_context context);
void duckdb_destroy_client_context(duckdb_client_context *context);
}
