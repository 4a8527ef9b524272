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
	once   sync.Once
	l      *store.Local
	chdb   *chdbServer
	err    error
	dbs    atomic.Int64
	inMain bool // Main runs the tests, so it can also run the 26.x server
}

// Main runs the package's tests and then stops the shared server, if a
// test started it. Use it as: func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }.
// With ChdbEnv set it is also the 26.x server's process (the test binary
// run again by the tests' first use of the server).
func Main(m *testing.M) int {
	if os.Getenv(chdbServeEnv) != "" {
		return serveChdb(os.Getenv(ChdbEnv), os.Args[1:])
	}
	shared.inMain = true
	code := m.Run()
	if s := shared.chdb; s != nil {
		if err := s.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: %v\n", err)
			code = max(code, 1)
		}
	}
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

// Server returns the shared managed server, starting it on first use
// (~1 s). With ChdbEnv set the shared server is not one: t is skipped.
func Server(t testing.TB) *store.Local {
	t.Helper()
	skipManaged(t, "its process")
	start()
	if shared.err != nil {
		t.Fatalf("starting the test ClickHouse: %v", shared.err)
	}
	return shared.l
}

// start starts the shared server of the engine ChdbEnv selects, once.
func start() {
	shared.once.Do(func() {
		if lib := os.Getenv(ChdbEnv); lib != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			shared.chdb, shared.err = startChdb(ctx, lib)
			return
		}
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
}

// DSN returns the address of a database of its own for the calling test
// on the shared server; the database is created on first Open (on the
// 26.x server, which a DSN naming a missing database would abort, before
// DSN returns).
func DSN(t testing.TB) string {
	t.Helper()
	start()
	if shared.err != nil {
		t.Fatalf("starting the test ClickHouse: %v", shared.err)
	}
	name := fmt.Sprintf("t%d_%d_%s", os.Getpid(), shared.dbs.Add(1), strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name()))
	name = name[:min(len(name), 100)]
	if shared.chdb != nil {
		dsn, err := shared.chdb.dsnFor(name)
		if err != nil {
			t.Fatal(err)
		}
		return dsn
	}
	return shared.l.DSNFor(name)
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

// Private starts a managed ClickHouse server of the test's own, for tests
// that stop or kill it or use its password; it is stopped when the test
// ends. With ChdbEnv set, t is skipped: such tests run on clickhouse-server.
func Private(t testing.TB) *store.Local {
	t.Helper()
	skipManaged(t, "a server of the test's own to stop, kill or log in to with a password")
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
