package ingest

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/h3rum/h3rum/beacon"
)

// wireReport returns a complete report in wire format: warmup sequential
// H3 requests, one H2 warm-up, and two parallel batches of parallel
// requests (1+1+5+5 = 12 samples by default, a realistic run).
func wireReport(id, site string, warmup, parallel int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"v":1,"id":%q,"site":%q,"o":"https://www.example.com","bv":"1.0.0","p":false,"mt":3.5,`, id, site)
	fmt.Fprintf(&b, `"par":{"n":%d,"w":%d,"b":0,"ord":"h3first","trg":"load"},`, parallel, warmup)
	b.WriteString(`"c":{"br":[["Not A(Brand","99"],["Google Chrome","121"],["Chromium","121"]],"pf":"Linux","mb":false,"et":"4g","rtt":50,"dl":10},"s":[`)
	total := warmup + 1 + 2*parallel
	for q := range total {
		ph, want := "p", "h2"
		switch {
		case q < warmup:
			ph, want = "w", "h3"
		case q == warmup:
			ph, want = "w", "h2"
		case q <= warmup+parallel:
			want = "h3"
		}
		if q > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"q":%d,"ph":%q,"w":%q,"g":%q,"st":%d.25,"d":%d.5,"dns":0,"con":0,"tls":0,"tf":20.125,"dl":1.5,"r":true,"ts":300,`,
			q, ph, want, want, 10*q, 30+q)
		fmt.Fprintf(&b, `"sv":{"proto":%q,"app":0.05,"rtt":21.5,"minrtt":20,"rttvar":1.25,"lost":0,"cid":"c%d","creq":%d,"resumed":0,"early":0}}`, want, q%2, q+1)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func randomRunID() string {
	var id [16]byte
	for i := range id {
		id[i] = byte(rand.IntN(256))
	}
	return hex.EncodeToString(id[:])
}

// testRun decodes a wire report into an enriched run.
func testRun(t testing.TB, site string) Run {
	t.Helper()
	rep, err := beacon.Decode(wireReport(randomRunID(), site, 1, 5))
	if err != nil {
		t.Fatalf("test report does not decode: %v", err)
	}
	return Run{
		Envelope:     beacon.Envelope{Report: rep, Received: time.Now().UTC()},
		Geo:          Geo{Continent: "EU", Country: "DE", Subdivision: "DE-BE", CityID: 2950159, ASN: 64500, ASOrg: "Example"},
		Browser:      BrowserChrome,
		BrowserMajor: 121,
	}
}

var shared struct {
	once sync.Once
	l    *Local
	err  error
	n    int
	mu   sync.Mutex
}

// TestMain stops the shared ClickHouse server after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared.l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		shared.l.Stop(ctx)
		cancel()
		os.RemoveAll(filepath.Dir(shared.l.Dir))
	}
	os.Exit(code)
}

// testDB returns a connection to a fresh, migrated database on a ClickHouse
// server shared by the package's tests.
func testDB(t testing.TB) driver.Conn {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "h3rum-ingest-test-")
		if err != nil {
			shared.err = err
			return
		}
		shared.l = &Local{Dir: filepath.Join(dir, "clickhouse")}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.err = shared.l.Start(ctx)
	})
	if shared.err != nil {
		t.Fatalf("starting shared ClickHouse: %v", shared.err)
	}
	shared.mu.Lock()
	shared.n++
	db := fmt.Sprintf("t%d_%d", os.Getpid(), shared.n)
	shared.mu.Unlock()
	return openMigrated(t, fmt.Sprintf("clickhouse://default@127.0.0.1:%d/%s", shared.l.Port, db))
}

func openMigrated(t testing.TB, dsn string) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := Migrate(ctx, conn); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	return conn
}

// deadConn is a connection to a port nothing listens on: ClickHouse "down".
func deadConn(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{"127.0.0.1:1"}, DialTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func startPipeline(t testing.TB, p *Pipeline) *Pipeline {
	t.Helper()
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		p.Shutdown(ctx)
	})
	return p
}

func countRows(t testing.TB, conn driver.Conn, query string, args ...any) uint64 {
	t.Helper()
	var n uint64
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// waitFor polls cond until it holds or a generous deadline passes; it does
// not measure speed, only that the state is reached.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testLogger(w *strings.Builder) *slog.Logger {
	var mu sync.Mutex
	return slog.New(slog.NewTextHandler(lockedWriter{w, &mu}, nil))
}

type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func counterValue(t testing.TB, c prometheus.Metric) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue() + m.GetGauge().GetValue()
}
