// Issue 12: a series table written with arrow-go's Flight SQL client: ExecuteUpdate and
// ExecuteIngest (CommandStatementIngest), then read back.
package interop

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestSeriesTableExecuteUpdateAndIngest(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.adminUser, e.adminKey)
	table := fmt.Sprintf("go_series_%d", time.Now().UnixNano())

	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE "+table+" (ts TIMESTAMP, host VARCHAR, cpu DOUBLE)"); err != nil {
		t.Fatalf("CREATE TABLE: %v", err)
	}
	n, err := cl.ExecuteUpdate(ctx, "INSERT INTO "+table+" VALUES ('2024-05-01 10:00:00', 'a', 0.5), ('2024-05-01 10:01:00', 'a', 1.5)")
	if err != nil || n != 2 {
		t.Fatalf("INSERT: %d rows, %v; want 2", n, err)
	}

	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "cpu", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	var recs []arrow.RecordBatch
	for batch := 0; batch < 3; batch++ {
		for i := 0; i < 100; i++ {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1714557600000000 + int64(batch*100+i)*1000000))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-%d", batch))
			b.Field(2).(*array.Float64Builder).Append(float64(i))
		}
		recs = append(recs, b.NewRecordBatch())
	}
	rdr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	opts := &flightsql.ExecuteIngestOpts{
		Table: table,
		TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
			IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_FAIL,
			IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND,
		},
	}
	ingested, err := cl.ExecuteIngest(ctx, rdr, opts)
	if err != nil || ingested != 300 {
		t.Fatalf("ExecuteIngest: %d rows, %v; want 300", ingested, err)
	}

	res := query(t, ctx, cl, "SELECT count(*), sum(cpu) FROM "+table)
	if got := intValue(t, res.recs[0].Column(0), 0); got != 302 {
		t.Fatalf("count(*) = %d, want 302", got)
	}
	if got := res.recs[0].Column(1).(*array.Float64).Value(0); got != 3*4950+2 {
		t.Fatalf("sum(cpu) = %v, want %v", got, 3*4950+2)
	}
	if _, err := cl.ExecuteUpdate(ctx, "DROP TABLE "+table); err != nil {
		t.Fatalf("DROP TABLE: %v", err)
	}
}

// Issue 12: ExecuteIngest inside a transaction. arrow-go's Txn has no ExecuteIngest, but its
// ExecuteIngestOpts is CommandStatementIngest, whose transaction_id the client may set; the rows
// are then the transaction's: seen by others only after Commit, never after Rollback.
func TestSeriesTableIngestInTransaction(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := basicCtx(t, cl, e.adminUser, e.adminKey)
	other := newClient(t, e)
	otherCtx := basicCtx(t, other, e.adminUser, e.adminKey)
	table := fmt.Sprintf("go_series_tx_%d", time.Now().UnixNano())
	if _, err := cl.ExecuteUpdate(ctx, "CREATE TABLE "+table+" (ts TIMESTAMP, n BIGINT)"); err != nil {
		t.Fatalf("CREATE TABLE: %v", err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	ingest := func(tx *flightsql.Txn, rows int) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for i := 0; i < rows; i++ {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1714557600000000 + int64(i)*1000000))
			b.Field(1).(*array.Int64Builder).Append(int64(i))
		}
		rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{b.NewRecordBatch()})
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		opts := &flightsql.ExecuteIngestOpts{
			Table: table,
			TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
				IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_FAIL,
				IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND,
			},
			TransactionId: tx.ID(),
		}
		if n, err := cl.ExecuteIngest(ctx, rdr, opts); err != nil || n != int64(rows) {
			t.Fatalf("ExecuteIngest in a transaction: %d rows, %v; want %d", n, err, rows)
		}
	}
	count := func() int64 {
		res := query(t, otherCtx, other, "SELECT count(*) FROM "+table)
		return intValue(t, res.recs[0].Column(0), 0)
	}

	tx, err := cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	ingest(tx, 10)
	if got := count(); got != 0 {
		t.Fatalf("before Commit another client sees %d rows, want 0", got)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if got := count(); got != 10 {
		t.Fatalf("after Commit: %d rows, want 10", got)
	}

	tx, err = cl.BeginTransaction(ctx)
	if err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	ingest(tx, 5)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if got := count(); got != 10 {
		t.Fatalf("after Rollback: %d rows, want 10", got)
	}
	if _, err := cl.ExecuteUpdate(ctx, "DROP TABLE "+table); err != nil {
		t.Fatalf("DROP TABLE: %v", err)
	}
}
