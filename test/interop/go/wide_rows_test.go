package interop

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestWideRowsWithinDefaultReceiveLimit reads a result of wide rows (2,000 text columns, 16 KB a
// row) with grpc-go's default receive limit of 4 MiB, as Grafana's client does. The server cuts its
// batches at their byte target (2 MiB) while filling them; cut after the fact, a batch of such rows
// came out at 4.1 MB of buffers, under the server's split threshold, and with its Arrow header
// (64 bytes a column) the message passed 4 MiB: "received message larger than max".
func TestWideRowsWithinDefaultReceiveLimit(t *testing.T) {
	e := env(t)
	cl := newClient(t, e)
	ctx := bearerCtx(t, e.readerKey)
	const columns, rows = 2000, 3000
	list := make([]string, columns)
	for c := range list {
		list[c] = fmt.Sprintf("v AS c%d", c)
	}
	sql := "WITH t AS (SELECT range AS i, lpad(CAST(range % 10000 AS VARCHAR), 4, '0') AS v FROM range(" +
		fmt.Sprint(rows) + ")) SELECT i, " + strings.Join(list, ", ") + " FROM t ORDER BY i"
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		t.Fatalf("Execute(%d text columns): %v", columns, err)
	}
	res := fetch(t, ctx, cl, fmt.Sprintf("Execute(%d text columns)", columns), info)
	if res.rows != rows {
		t.Fatalf("%d rows, want %d", res.rows, rows)
	}
	if n := res.schema.NumFields(); n != columns+1 {
		t.Fatalf("%d columns, want %d", n, columns+1)
	}
	row := int64(0)
	for _, rec := range res.recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			want := fmt.Sprintf("%04d", row%10000)
			if got := intValue(t, rec.Column(0), i); got != row {
				t.Fatalf("row %d: i = %d", row, got)
			}
			for _, c := range []int{1, columns} {
				if got := rec.Column(c).(*array.String).Value(i); got != want {
					t.Fatalf("row %d, column %d: %q, want %q", row, c, got, want)
				}
			}
			row++
		}
	}
}
