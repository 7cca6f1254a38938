import {
  Binary,
  Bool,
  DenseUnion,
  Field,
  Int32,
  Int64,
  List,
  Map_,
  Schema,
  Struct,
  Uint32,
  Uint8,
  Utf8,
} from 'apache-arrow';

// The result schemas the Flight SQL specification mandates for its metadata commands,
// field for field: names, types and nullability. ADBC compares them exactly.

const utf8 = (name: string, nullable = true): Field => new Field(name, new Utf8(), nullable);
const int32 = (name: string, nullable = true): Field => new Field(name, new Int32(), nullable);
const bool = (name: string, nullable = true): Field => new Field(name, new Bool(), nullable);

export const catalogsSchema = new Schema([utf8('catalog_name', false)]);

export const dbSchemasSchema = new Schema([utf8('catalog_name'), utf8('db_schema_name', false)]);

const tablesFields = [
  utf8('catalog_name'),
  utf8('db_schema_name'),
  utf8('table_name', false),
  utf8('table_type', false),
];
export const tablesSchema = new Schema(tablesFields);
export const tablesWithSchemaSchema = new Schema([...tablesFields, new Field('table_schema', new Binary(), false)]);

export const tableTypesSchema = new Schema([utf8('table_type', false)]);

export const primaryKeysSchema = new Schema([
  utf8('catalog_name'),
  utf8('db_schema_name'),
  utf8('table_name', false),
  utf8('column_name', false),
  int32('key_sequence', false),
  utf8('key_name'),
]);

export const foreignKeysSchema = new Schema([
  utf8('pk_catalog_name'),
  utf8('pk_db_schema_name'),
  utf8('pk_table_name', false),
  utf8('pk_column_name', false),
  utf8('fk_catalog_name'),
  utf8('fk_db_schema_name'),
  utf8('fk_table_name', false),
  utf8('fk_column_name', false),
  int32('key_sequence', false),
  utf8('fk_key_name'),
  utf8('pk_key_name'),
  new Field('update_rule', new Uint8(), false),
  new Field('delete_rule', new Uint8(), false),
]);

/** The dense union of GetSqlInfo values; type codes 0..5 in this order. */
export const sqlInfoValueType = new DenseUnion(
  [0, 1, 2, 3, 4, 5],
  [
    utf8('string_value', false),
    bool('bool_value', false),
    new Field('bigint_value', new Int64(), false),
    int32('int32_bitmask', false),
    new Field('string_list', new List(utf8('item')), false),
    new Field(
      'int32_to_int32_list_map',
      new Map_(
        new Field(
          'entries',
          new Struct<{ key: Int32; value: List<Int32> }>([
            int32('key', false),
            new Field('value', new List(int32('item')), true),
          ]),
          false,
        ),
      ),
      false,
    ),
  ],
);

export const sqlInfoSchema = new Schema([
  new Field('info_name', new Uint32(), false),
  new Field('value', sqlInfoValueType, false),
]);

export const xdbcTypeInfoSchema = new Schema([
  utf8('type_name', false),
  int32('data_type', false),
  int32('column_size'),
  utf8('literal_prefix'),
  utf8('literal_suffix'),
  new Field('create_params', new List(utf8('item', false)), true),
  int32('nullable', false),
  bool('case_sensitive', false),
  int32('searchable', false),
  bool('unsigned_attribute'),
  bool('fixed_prec_scale', false),
  bool('auto_increment'),
  utf8('local_type_name'),
  int32('minimum_scale'),
  int32('maximum_scale'),
  int32('sql_data_type', false),
  int32('datetime_subcode'),
  int32('num_prec_radix'),
  int32('interval_precision'),
]);
