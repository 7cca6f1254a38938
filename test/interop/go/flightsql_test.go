// Interop tests for Orrery's Flight SQL endpoint with the arrow-go Flight SQL
// client, i.e. the client the Grafana Flight SQL datasource is built on.
//
// The server under test is given by the environment:
//
//	ORRERY_FLIGHT_HOST, ORRERY_FLIGHT_PORT
//	ORRERY_ADMIN_USER, ORRERY_ADMIN_KEY     (may create tables)
//	ORRERY_READER_USER, ORRERY_READER_KEY   (reads)
//
// Nothing is skipped: a missing variable fails the test that needs it.
package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type orreryEnv struct {
	addr                  string
	adminUser, adminKey   string
	readerUser, readerKey string
}

// env reads the connection settings, failing the test (not skipping it) when
// any of them is missing.
func env(t *testing.T) orreryEnv {
	t.Helper()
	names := []string{
		"ORRERY_FLIGHT_HOST", "ORRERY_FLIGHT_PORT",
		"ORRERY_ADMIN_USER", "ORRERY_ADMIN_KEY",
		"ORRERY_READER_USER", "ORRERY_READER_KEY",
	}
	vals := map[string]string{}
	var missing []string
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			missing = append(missing, n)
		}
		vals[n] = v
	}
	if len(missing) > 0 {
		t.Fatalf("environment not set: %s (start an Orrery server and export ORRERY_FLIGHT_HOST/PORT, "+
			"ORRERY_ADMIN_USER/KEY and ORRERY_READER_USER/KEY; see test/interop/go/run.sh)",
			strings.Join(missing, ", "))
	}
	return orreryEnv{
		addr:       net.JoinHostPort(vals["ORRERY_FLIGHT_HOST"], vals["ORRERY_FLIGHT_PORT"]),
		adminUser:  vals["ORRERY_ADMIN_USER"],
		adminKey:   vals["ORRERY_ADMIN_KEY"],
		readerUser: vals["ORRERY_READER_USER"],
		readerKey:  vals["ORRERY_READER_KEY"],
	}
}

// newClient opens a plaintext connection, as the Grafana datasource does with
// "Require TLS" off.
func newClient(t *testing.T, e orreryEnv) *flightsql.Client {
	t.Helper()
	cl, err := flightsql.NewClient(e.addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("flightsql.NewClient(%s): %v", e.addr, err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// basicCtx does what Grafana's "username/password" auth does: a Handshake with
// Basic credentials, then the returned context (carrying the server's
// `authorization` value) on every call.
func basicCtx(t *testing.T, cl *flightsql.Client, user, key string) context.Context {
	t.Helper()
	ctx, err := cl.Client.AuthenticateBasicToken(testCtx(t), user, key)
	if err != nil {
		t.Fatalf("AuthenticateBasicToken(%q): %v", user, err)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	auth := md.Get("authorization")
	if len(auth) == 0 || !strings.HasPrefix(strings.ToLower(auth[len(auth)-1]), "bearer ") {
		t.Fatalf("AuthenticateBasicToken(%q): the server's authorization header is %q, want \"Bearer <token>\"", user, auth)
	}
	return ctx
}

// bearerCtx does what Grafana's "token" auth does: `authorization: Bearer <key>`
// on every call, no Handshake.
func bearerCtx(t *testing.T, key string) context.Context {
	return metadata.AppendToOutgoingContext(testCtx(t), "authorization", "Bearer "+key)
}

type result struct {
	schema *arrow.Schema
	recs   []arrow.RecordBatch
	rows   int64
}

// fetch does what Grafana does with a FlightInfo: it requires exactly one
// endpoint and reads it with DoGet on the same connection.
func fetch(t *testing.T, ctx context.Context, cl *flightsql.Client, what string, info *flight.FlightInfo) result {
	t.Helper()
	if n := len(info.GetEndpoint()); n != 1 {
		t.Fatalf("%s: FlightInfo has %d endpoints; Grafana requires exactly 1 (\"unsupported endpoint count\")", what, n)
	}
	ep := info.Endpoint[0]
	if ep.GetTicket() == nil || len(ep.Ticket.GetTicket()) == 0 {
		t.Fatalf("%s: endpoint has an empty ticket", what)
	}
	rdr, err := cl.DoGet(ctx, ep.Ticket)
	if err != nil {
		t.Fatalf("%s: DoGet: %v", what, err)
	}
	defer rdr.Release()
	res := result{schema: rdr.Schema()}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		res.recs = append(res.recs, rec)
		res.rows += rec.NumRows()
	}
	if err := rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("%s: reading DoGet stream: %v", what, err)
	}
	t.Cleanup(func() {
		for _, r := range res.recs {
			r.Release()
		}
	})
	return res
}

func query(t *testing.T, ctx context.Context, cl *flightsql.Client, sql string) result {
	t.Helper()
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("Execute(%q) (GetFlightInfo CommandStatementQuery): %v", sql, err)
	}
	return fetch(t, ctx, cl, fmt.Sprintf("Execute(%q)", sql), info)
}

// intValue reads an integer cell whatever its integer width.
func intValue(t *testing.T, col arrow.Array, i int) int64 {
	t.Helper()
	if col.IsNull(i) {
		t.Fatalf("row %d of %s column is null", i, col.DataType())
	}
	switch a := col.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return int64(a.Value(i))
	case *array.Uint16:
		return int64(a.Value(i))
	case *array.Uint32:
		return int64(a.Value(i))
	case *array.Uint64:
		return int64(a.Value(i))
	}
	t.Fatalf("expected an integer column, got %s", col.DataType())
	return 0
}

func TestBasicAuthHandshake(t *testing.T) {
	e := env(t)
	for _, who := range []struct{ role, user, key string }{
		{"admin", e.adminUser, e.adminKey},
		{"reader", e.readerUser, e.readerKey},
	} {
		t.Run(who.role, func(t *testing.T) {
			cl := newClient(t, e)
			ctx := basicCtx(t, cl, who.user, who.key)
			res := query(t, ctx, cl, "select 1")
			if res.rows != 1 {
				t.Fatalf("select 1 after Basic handshake: %d rows, want 1", res.rows)
			}
		})
	}
}

func TestBearerHeader(t *testing.T) {
	e := env(t)
	for _, who := range []struct{ role, key string }{
		{"admin", e.adminKey},
		{"reader", e.readerKey},
	} {
		t.Run(who.role, func(t *testing.T) {
			cl := newClient(t, e)
			res := query(t, bearerCtx(t, who.key), cl, "select 1")
			if res.rows != 1 {
				t.Fatalf("select 1 with `authorization: Bearer <key>`: %d rows, want 1", res.rows)
			}
		})
	}
}

func TestSelectOne(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.readerUser, e.readerKey)

	info, err := cl.Execute(ctx, "select 1")
	if err != nil {
		t.Fatalf("Execute(select 1): %v", err)
	}
	res := fetch(t, ctx, cl, "Execute(select 1)", info)
	if got := res.schema.NumFields(); got != 1 {
		t.Fatalf("select 1: %d columns (%s), want 1", got, res.schema)
	}
	if res.rows != 1 {
		t.Fatalf("select 1: %d rows, want 1", res.rows)
	}
	var rec arrow.RecordBatch
	for _, r := range res.recs {
		if r.NumRows() > 0 {
			rec = r
			break
		}
	}
	if v := intValue(t, rec.Column(0), 0); v != 1 {
		t.Fatalf("select 1 returned %d", v)
	}

	// FlightInfo.schema, when sent, must be the DoGet schema (ADBC fails with
	// "inconsistent schema" otherwise; Grafana ignores it).
	if len(info.GetSchema()) > 0 {
		s, err := flight.DeserializeSchema(info.Schema, memory.DefaultAllocator)
		if err != nil {
			t.Fatalf("select 1: FlightInfo.schema does not decode: %v", err)
		}
		if !s.Equal(res.schema) {
			t.Fatalf("select 1: FlightInfo.schema %s differs from DoGet schema %s", s, res.schema)
		}
	}
}

// sqlInfoRows decodes a GetSqlInfo result into id -> (type code, value).
type sqlInfoRow struct {
	code  arrow.UnionTypeCode
	value any
}

func decodeSqlInfo(t *testing.T, res result) ([]uint32, map[uint32]sqlInfoRow) {
	t.Helper()
	if res.schema.NumFields() != 2 {
		t.Fatalf("GetSqlInfo schema has %d fields, want 2: %s", res.schema.NumFields(), res.schema)
	}
	f0, f1 := res.schema.Field(0), res.schema.Field(1)
	if f0.Name != "info_name" || f0.Type.ID() != arrow.UINT32 {
		t.Fatalf("GetSqlInfo column 0 is %s: %s, want info_name: uint32", f0.Name, f0.Type)
	}
	if f1.Name != "value" || f1.Type.ID() != arrow.DENSE_UNION {
		t.Fatalf("GetSqlInfo column 1 is %s: %s, want value: dense_union", f1.Name, f1.Type)
	}
	var ids []uint32
	rows := map[uint32]sqlInfoRow{}
	for _, rec := range res.recs {
		names, ok := rec.Column(0).(*array.Uint32)
		if !ok {
			t.Fatalf("GetSqlInfo column 0 decodes as %T, want *array.Uint32", rec.Column(0))
		}
		values, ok := rec.Column(1).(*array.DenseUnion)
		if !ok {
			t.Fatalf("GetSqlInfo column 1 decodes as %T, want *array.DenseUnion", rec.Column(1))
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			id := names.Value(i)
			code := values.TypeCode(i)
			child := values.Field(values.ChildID(i))
			off := int(values.ValueOffset(i))
			var v any
			switch c := child.(type) {
			case *array.String:
				v = c.Value(off)
			case *array.Boolean:
				v = c.Value(off)
			case *array.Int64:
				v = c.Value(off)
			case *array.Int32:
				v = c.Value(off)
			default:
				v = child.GetOneForMarshal(off)
			}
			ids = append(ids, id)
			if _, dup := rows[id]; dup {
				t.Fatalf("GetSqlInfo: info id %d appears twice", id)
			}
			rows[id] = sqlInfoRow{code: code, value: v}
		}
	}
	return ids, rows
}

func TestGetSqlInfoAll(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.readerUser, e.readerKey)

	// Grafana's query builder asks for every SqlInfo (empty list).
	info, err := cl.GetSqlInfo(ctx, []flightsql.SqlInfo{})
	if err != nil {
		t.Fatalf("GetSqlInfo([]): %v", err)
	}
	res := fetch(t, ctx, cl, "GetSqlInfo([])", info)
	ids, rows := decodeSqlInfo(t, res)
	if len(ids) == 0 {
		t.Fatalf("GetSqlInfo([]) returned no rows")
	}
	if !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
		t.Fatalf("GetSqlInfo([]) rows are not in ascending info id order: %v", ids)
	}
	for _, id := range []uint32{0, 1} {
		if _, ok := rows[id]; !ok {
			t.Errorf("GetSqlInfo([]) lacks info id %d", id)
		}
	}
	t.Logf("GetSqlInfo([]): %d rows, ids %v", len(ids), ids)

	// The Grafana editor reads rows 17..21 of the value column positionally as its
	// keyword and function lists (SqlInfo 508..512, string_list arm 4).
	t.Run("rows 17-21 are the keyword and function lists", func(t *testing.T) {
		if len(ids) < 22 {
			t.Fatalf("GetSqlInfo([]) has %d rows; Grafana reads rows 17..21", len(ids))
		}
		for i := 17; i <= 21; i++ {
			want := uint32(508 + i - 17)
			if ids[i] != want || rows[ids[i]].code != 4 {
				t.Errorf("row %d is info id %d (type code %d), want id %d as a string_list (type code 4)", i, ids[i], rows[ids[i]].code, want)
			}
		}
	})

	t.Run("schema equals the spec's", func(t *testing.T) {
		if !schema_ref.SqlInfo.Equal(res.schema) {
			t.Fatalf("GetSqlInfo schema\n got: %s\nwant: %s", res.schema, schema_ref.SqlInfo)
		}
	})
}

func TestGetSqlInfoNameVersion(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.readerUser, e.readerKey)

	info, err := cl.GetSqlInfo(ctx, []flightsql.SqlInfo{
		flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerVersion,
	})
	if err != nil {
		t.Fatalf("GetSqlInfo([0,1]): %v", err)
	}
	res := fetch(t, ctx, cl, "GetSqlInfo([0,1])", info)
	ids, rows := decodeSqlInfo(t, res)
	if len(ids) != 2 || ids[0] != 0 || ids[1] != 1 {
		t.Fatalf("GetSqlInfo([0,1]) returned ids %v, want [0 1]", ids)
	}
	for _, id := range []uint32{0, 1} {
		r := rows[id]
		s, ok := r.value.(string)
		if r.code != 0 || !ok {
			t.Fatalf("GetSqlInfo id %d: union type code %d value %#v, want code 0 (string_value)", id, r.code, r.value)
		}
		if s == "" {
			t.Fatalf("GetSqlInfo id %d is an empty string", id)
		}
	}
	t.Logf("server name %q, version %q", rows[0].value, rows[1].value)
}

// createGoT makes go_t as the admin, through ExecuteUpdate (DoPut
// CommandStatementUpdate) or, if the server refuses that, through Execute.
func createGoT(t *testing.T, e orreryEnv) {
	t.Helper()
	const ddl = "CREATE OR REPLACE TABLE go_t AS SELECT 1::BIGINT AS id, 'a' AS name"
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.adminUser, e.adminKey)
	// A server that never answers the DoPut would otherwise use up the whole test timeout.
	updCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	n, err := cl.ExecuteUpdate(updCtx, ddl)
	if err == nil {
		t.Logf("ExecuteUpdate(%q) = %d", ddl, n)
		return
	}
	t.Logf("ExecuteUpdate(%q) failed (%v); trying Execute + DoGet", ddl, err)
	info, err2 := cl.Execute(ctx, ddl)
	if err2 != nil {
		t.Fatalf("creating go_t as admin: ExecuteUpdate: %v; Execute: %v", err, err2)
	}
	fetch(t, ctx, cl, "Execute(CREATE go_t)", info)
}

type tableRow struct {
	catalog, schema *string
	name, typ       string
	tableSchema     []byte
}

func readTables(t *testing.T, res result, includeSchema bool) []tableRow {
	t.Helper()
	want := schema_ref.Tables
	if includeSchema {
		want = schema_ref.TablesWithIncludedSchema
	}
	if !want.Equal(res.schema) {
		t.Fatalf("GetTables schema\n got: %s\nwant: %s", res.schema, want)
	}
	var out []tableRow
	opt := func(a *array.String, i int) *string {
		if a.IsNull(i) {
			return nil
		}
		s := a.Value(i)
		return &s
	}
	for _, rec := range res.recs {
		cat := rec.Column(0).(*array.String)
		sch := rec.Column(1).(*array.String)
		name := rec.Column(2).(*array.String)
		typ := rec.Column(3).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			r := tableRow{catalog: opt(cat, i), schema: opt(sch, i), name: name.Value(i), typ: typ.Value(i)}
			if includeSchema {
				r.tableSchema = bytes.Clone(rec.Column(4).(*array.Binary).Value(i))
			}
			out = append(out, r)
		}
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func checkGoTSchema(t *testing.T, raw []byte) {
	t.Helper()
	s, err := flight.DeserializeSchema(raw, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("go_t table_schema (%d bytes) does not decode: %v", len(raw), err)
	}
	if s.NumFields() != 2 {
		t.Fatalf("go_t table_schema has %d fields, want 2: %s", s.NumFields(), s)
	}
	if f := s.Field(0); f.Name != "id" || f.Type.ID() != arrow.INT64 {
		t.Errorf("go_t field 0 is %s: %s, want id: int64", f.Name, f.Type)
	}
	if f := s.Field(1); f.Name != "name" || f.Type.ID() != arrow.STRING {
		t.Errorf("go_t field 1 is %s: %s, want name: utf8", f.Name, f.Type)
	}
}

func TestGetTablesGrafana(t *testing.T) {
	e := env(t)
	createGoT(t, e)

	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.readerUser, e.readerKey)

	// The query builder's table list.
	info, err := cl.GetTables(ctx, &flightsql.GetTablesOpts{
		TableTypes:    []string{"BASE TABLE", "table"},
		IncludeSchema: true,
	})
	if err != nil {
		t.Fatalf("GetTables(table_types=[BASE TABLE, table], include_schema=true): %v", err)
	}
	rows := readTables(t, fetch(t, ctx, cl, "GetTables", info), true)
	var found *tableRow
	var names []string
	for i := range rows {
		names = append(names, str(rows[i].catalog)+"."+str(rows[i].schema)+"."+rows[i].name+"("+rows[i].typ+")")
		if rows[i].name == "go_t" && found == nil {
			found = &rows[i]
		}
	}
	if found == nil {
		t.Fatalf("GetTables(table_types=[BASE TABLE, table]) as reader does not list go_t; rows: %v", names)
	}
	t.Logf("go_t row: catalog=%s schema=%s type=%s", str(found.catalog), str(found.schema), found.typ)
	checkGoTSchema(t, found.tableSchema)

	// The query builder's column list: table_name_filter_pattern=<table>,
	// include_schema=true, and the first row's table_schema is used.
	t.Run("column list by table name", func(t *testing.T) {
		name := "go_t"
		info, err := cl.GetTables(ctx, &flightsql.GetTablesOpts{TableNameFilterPattern: &name, IncludeSchema: true})
		if err != nil {
			t.Fatalf("GetTables(table_name_filter_pattern=go_t, include_schema=true): %v", err)
		}
		rows := readTables(t, fetch(t, ctx, cl, "GetTables(go_t)", info), true)
		if len(rows) == 0 {
			t.Fatalf("GetTables(table_name_filter_pattern=go_t) returned no rows")
		}
		if rows[0].name != "go_t" {
			t.Fatalf("GetTables(table_name_filter_pattern=go_t): first row is %q; Grafana uses the first row", rows[0].name)
		}
		checkGoTSchema(t, rows[0].tableSchema)
	})
}

func TestTimestampTimeColumnIsNanoseconds(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.readerUser, e.readerKey)

	const q = "SELECT TIMESTAMP '2024-01-02 03:04:05' AS time, 1.5::DOUBLE AS value"
	res := query(t, ctx, cl, q)
	idx := res.schema.FieldIndices("time")
	if len(idx) != 1 {
		t.Fatalf("%s: schema %s has no single `time` column", q, res.schema)
	}
	f := res.schema.Field(idx[0])
	ts, ok := f.Type.(*arrow.TimestampType)
	if !ok {
		t.Fatalf("%s: column time is %s, want timestamp[ns]", q, f.Type)
	}
	if ts.Unit != arrow.Nanosecond {
		t.Fatalf("%s: column time is %s, want timestamp[ns] (Grafana reads every timestamp as nanoseconds)", q, f.Type)
	}
	if res.rows != 1 {
		t.Fatalf("%s: %d rows, want 1", q, res.rows)
	}
	for _, rec := range res.recs {
		if rec.NumRows() == 0 {
			continue
		}
		col := rec.Column(idx[0]).(*array.Timestamp)
		want := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
		if got := int64(col.Value(0)); got != want {
			t.Fatalf("%s: time = %d ns, want %d (2024-01-02T03:04:05Z)", q, got, want)
		}
	}
}

func wantUnauthenticated(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want codes.Unauthenticated", what)
	}
	if st, _ := status.FromError(err); st.Code() != codes.Unauthenticated {
		t.Fatalf("%s: got %v (code %s), want codes.Unauthenticated", what, err, st.Code())
	}
}

func TestWrongKeyIsUnauthenticated(t *testing.T) {
	e := env(t)

	t.Run("basic handshake", func(t *testing.T) {
		cl := newClient(t, e)
		_, err := cl.Client.AuthenticateBasicToken(testCtx(t), e.readerUser, e.readerKey+"-wrong")
		wantUnauthenticated(t, "AuthenticateBasicToken with a wrong key", err)
	})

	t.Run("bearer header", func(t *testing.T) {
		cl := newClient(t, e)
		_, err := cl.Execute(bearerCtx(t, "wrong-"+e.readerKey), "select 1")
		wantUnauthenticated(t, "Execute(select 1) with `authorization: Bearer <wrong key>`", err)
	})
}
