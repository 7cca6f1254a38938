// Statement latency through arrow-go's Flight SQL client (the one Grafana's datasource uses): each
// statement is Execute (GetFlightInfo) then DoGet of its endpoint, read to the end, hot, with one
// client and with -clients clients at once (each its own connection). Prints one JSON line per
// phase: {"client":"go","phase":"1"|"N","n":...,"p50_ms":...,"p99_ms":...,"per_s":...,"rows":...}.
// Run by bench/latency/bench.py.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

type runner func() (int64, error)

func connect(addr, user, key, sql string, prepared bool) (runner, func(), error) {
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	ctx, err := cl.Client.AuthenticateBasicToken(context.Background(), user, key)
	if err != nil {
		cl.Close()
		return nil, nil, fmt.Errorf("handshake: %w", err)
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	ctx = metadata.NewOutgoingContext(context.Background(), md)
	var stmt *flightsql.PreparedStatement
	if prepared {
		if stmt, err = cl.Prepare(ctx, sql); err != nil {
			cl.Close()
			return nil, nil, fmt.Errorf("prepare: %w", err)
		}
	}
	run := func() (int64, error) {
		var info *flight.FlightInfo
		var err error
		if stmt != nil {
			info, err = stmt.Execute(ctx)
		} else {
			info, err = cl.Execute(ctx, sql)
		}
		if err != nil {
			return 0, err
		}
		var rows int64
		for _, ep := range info.Endpoint {
			rdr, err := cl.DoGet(ctx, ep.Ticket)
			if err != nil {
				return 0, err
			}
			for rdr.Next() {
				rows += rdr.RecordBatch().NumRows()
			}
			err = rdr.Err()
			rdr.Release()
			if err != nil {
				return 0, err
			}
		}
		return rows, nil
	}
	return run, func() { cl.Close() }, nil
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

type summary struct {
	Client string  `json:"client"`
	Phase  string  `json:"phase"`
	N      int     `json:"n"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	PerS   float64 `json:"per_s"`
	Rows   int64   `json:"rows"`
}

func report(phase string, times []float64, elapsed time.Duration, rows int64) {
	sort.Float64s(times)
	s := summary{"go", phase, len(times), percentile(times, 50), percentile(times, 99),
		float64(len(times)) / elapsed.Seconds(), rows}
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
}

// mark tells bench.py that a phase's timed part starts now (it reads the server's and this
// process's CPU then, and again at the phase's report line).
func mark(phase string) {
	fmt.Printf("{\"client\":\"go\",\"mark\":%q}\n", phase)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "Flight SQL host:port")
	user := flag.String("user", "reader", "key name")
	key := flag.String("key", "", "key")
	sql := flag.String("sql", "SELECT 1", "statement")
	seconds := flag.Float64("seconds", 2, "timed seconds per phase")
	clients := flag.Int("clients", 16, "clients at once in the second phase")
	warmup := flag.Int("warmup", 5, "untimed statements first, per client")
	prepared := flag.Bool("prepared", false, "run the statement as a prepared statement (CreatePreparedStatement once), as ADBC does")
	pause := flag.Duration("pause", 0, "pause after each statement of a client")
	flag.Parse()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "latency-go:", err)
		os.Exit(1)
	}
	duration := time.Duration(*seconds * float64(time.Second))

	run, closeOne, err := connect(*addr, *user, *key, *sql, *prepared)
	if err != nil {
		fail(err)
	}
	var rows int64
	for i := 0; i < *warmup; i++ {
		if rows, err = run(); err != nil {
			fail(err)
		}
	}
	var times []float64
	mark("1")
	start := time.Now()
	for time.Since(start) < duration {
		t0 := time.Now()
		if rows, err = run(); err != nil {
			fail(err)
		}
		times = append(times, float64(time.Since(t0).Microseconds())/1000)
		time.Sleep(*pause)
	}
	report("1", times, time.Since(start), rows)
	closeOne()

	runners := make([]runner, *clients)
	for i := range runners {
		r, c, err := connect(*addr, *user, *key, *sql, *prepared)
		if err != nil {
			fail(err)
		}
		defer c()
		if _, err := r(); err != nil {
			fail(err)
		}
		runners[i] = r
	}
	perClient := make([][]float64, *clients)
	errs := make(chan error, *clients)
	var wg sync.WaitGroup
	mark(fmt.Sprint(*clients))
	start = time.Now()
	end := start.Add(duration)
	for i, r := range runners {
		wg.Add(1)
		go func(i int, r runner) {
			defer wg.Done()
			for time.Now().Before(end) {
				t0 := time.Now()
				if _, err := r(); err != nil {
					errs <- err
					return
				}
				perClient[i] = append(perClient[i], float64(time.Since(t0).Microseconds())/1000)
				time.Sleep(*pause)
			}
		}(i, r)
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		fail(err)
	}
	var all []float64
	for _, ts := range perClient {
		all = append(all, ts...)
	}
	report(fmt.Sprint(*clients), all, elapsed, rows)
}
