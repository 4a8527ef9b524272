// Package storetest gives tests fresh, migrated databases on one private
// ClickHouse server shared by a test binary.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
)

var shared struct {
	once sync.Once
	l    *store.Local
	err  error
	dbs  atomic.Int64
}

// Main runs the package's tests and then stops the shared server, if a
// test started it. Use it as: func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if l := shared.l; l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := l.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test ClickHouse: %v\n", err)
		}
		cancel()
		os.RemoveAll(filepath.Dir(l.Dir))
	}
	return code
}

// Server returns the shared server, starting it on first use (~1 s).
func Server(t testing.TB) *store.Local {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "h3rum-test-clickhouse-")
		if err != nil {
			shared.err = err
			return
		}
		shared.l = &store.Local{Dir: filepath.Join(dir, "clickhouse")}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.err = shared.l.Start(ctx)
	})
	if shared.err != nil {
		t.Fatalf("starting the test ClickHouse: %v", shared.err)
	}
	return shared.l
}

// DSN returns the address of a database of its own for the calling test
// on the shared server; the database is created on first Open.
func DSN(t testing.TB) string {
	t.Helper()
	l := Server(t)
	name := fmt.Sprintf("t%d_%d_%s", os.Getpid(), shared.dbs.Add(1), strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name()))
	return l.DSNFor(name[:min(len(name), 100)])
}

// DB opens a fresh, migrated database on the shared server, closed when
// the test ends.
func DB(t testing.TB) driver.Conn {
	t.Helper()
	return Open(t, DSN(t))
}

// Open connects to dsn and applies the migrations; the connection is
// closed when the test ends.
func Open(t testing.TB, dsn string) driver.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("opening %s: %v", dsn, err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := store.Migrate(ctx, conn); err != nil {
		t.Fatalf("migrating %s: %v", dsn, err)
	}
	return conn
}

// Private starts a ClickHouse server of the test's own, for tests that stop
// or kill it; it is stopped when the test ends.
func Private(t testing.TB) *store.Local {
	t.Helper()
	l := &store.Local{Dir: filepath.Join(t.TempDir(), "clickhouse")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Start(ctx); err != nil {
		t.Fatalf("starting a private ClickHouse: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.Stop(ctx); err != nil {
			t.Errorf("stopping the private ClickHouse: %v", err)
		}
	})
	return l
}

// Run returns a realistic enriched run for site (beacontest's default
// report with a fresh run id, a Berlin Chrome visitor), received now.
func Run(t testing.TB, site string) store.Run {
	t.Helper()
	return RunOf(t, beacontest.Run{Site: site})
}

// RunOf is Run for the report r describes; an empty r.ID gets a fresh one.
func RunOf(t testing.TB, r beacontest.Run) store.Run {
	t.Helper()
	if r.ID == "" {
		var id [16]byte
		rand.Read(id[:])
		r.ID = hex.EncodeToString(id[:])
	}
	wire := beacontest.Report(r)
	rep, err := beacon.Decode(wire)
	if err != nil {
		t.Fatalf("test report does not decode: %v", err)
	}
	return store.Run{
		Report:   rep,
		Wire:     wire,
		Received: time.Now().UTC(),
		Enrichment: store.Enrichment{
			Geo:          store.Geo{Continent: "EU", Country: "DE", Subdivision: "DE-BE", CityID: 2950159, ASN: 64500, ASOrg: "Example"},
			Browser:      "Chrome",
			BrowserMajor: 121,
		},
	}
}
