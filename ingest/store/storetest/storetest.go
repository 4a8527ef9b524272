// Package storetest gives tests fresh, migrated databases on one private
// ClickHouse server shared by a test binary.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/chdb"
	"github.com/h3rum/h3rum/ingest/store/local"
)

// Engine is a ClickHouse a test binary can run its databases on.
type Engine string

const (
	// Managed is clickhouse-server from PATH (Debian's 18.16 here), run by
	// local.Server as serve runs it.
	Managed Engine = "managed"
	// Chdb is ClickHouse 26.x, the chdb library that ChdbEnv names, as a
	// listener in a child process (chdb.go): a test server only.
	Chdb Engine = "chdb"
)

// EngineEnv names the environment variable that chooses the engine of
// DB and DSN: "chdb" for Chdb (which needs ChdbEnv), anything else
// Managed. make test runs the suites that query ClickHouse once each way.
// On Chdb, tests that need a managed server's process, password or
// restarts (Server, Private, StartCluster) are skipped: they run on
// Managed.
const EngineEnv = "H3RUM_TEST_ENGINE"

// Shared is the engine of DB and DSN.
func Shared() Engine {
	if os.Getenv(EngineEnv) == string(Chdb) {
		return Chdb
	}
	return Managed
}

// servers are the test binary's shared servers, one per engine, each
// started on first use and stopped by Main.
var servers struct {
	managed struct {
		once sync.Once
		l    *local.Server
		err  error
	}
	chdb struct {
		once sync.Once
		s    *chdb.Server
		err  error
	}
	dbs    atomic.Int64
	inMain bool // Main runs the tests, so it can also be the 26.x server's process
}

// Main runs the package's tests and then stops the shared servers that
// tests started. Use it as: func TestMain(m *testing.M) { os.Exit(storetest.Main(m)) }.
// It is also the 26.x server's process: the test binary run again by the
// first test that uses Chdb.
func Main(m *testing.M) int {
	if code, ok := chdb.Serve(); ok {
		return code
	}
	servers.inMain = true
	code := m.Run()
	if s := servers.chdb.s; s != nil {
		if err := s.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: %v\n", err)
			code = max(code, 1)
		}
	}
	if l := servers.managed.l; l != nil {
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
// (~1 s). When the shared engine is Chdb, t is skipped.
func Server(t testing.TB) *local.Server {
	t.Helper()
	skipManaged(t, "its process")
	return managed(t)
}

func managed(t testing.TB) *local.Server {
	t.Helper()
	m := &servers.managed
	m.once.Do(func() {
		dir, err := os.MkdirTemp("", "h3rum-test-clickhouse-")
		if err != nil {
			m.err = err
			return
		}
		m.l = &local.Server{Dir: filepath.Join(dir, "clickhouse"), ExtraProfile: profileXML(FlippedDefaults(Managed))}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.err = m.l.Start(ctx)
	})
	if m.err != nil {
		t.Fatalf("starting the test ClickHouse: %v", m.err)
	}
	return m.l
}

func chdbServer(t testing.TB) *chdb.Server {
	t.Helper()
	c := &servers.chdb
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c.s, c.err = startChdb(ctx, os.Getenv(ChdbEnv))
	})
	if c.err != nil {
		t.Fatalf("starting the 26.x test ClickHouse: %v", c.err)
	}
	return c.s
}

// FlippedDefaults are the defaults e's shared server is given for the
// settings store pins (store.PinnedSettings), each the opposite of the
// pinned value, as if a release had flipped it: the suites run under them,
// and store's TestPinnedSettings checks that its connections do not. 18.16
// gets insert_deduplicate only: it knows no async_insert, and its
// date_time_input_format cannot be set per connection (store refuses a
// server whose value is not the pinned one).
func FlippedDefaults(e Engine) map[string]string {
	if e == Chdb {
		return map[string]string{"async_insert": "1", "date_time_input_format": "best_effort", "insert_deduplicate": "0"}
	}
	return map[string]string{"insert_deduplicate": "0"}
}

func profileXML(settings map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&b, "<%s>%s</%s>", k, settings[k], k)
	}
	return b.String()
}

// DSN returns the address of a database of its own for the calling test
// on the shared server of the Shared engine; the database is created on
// first Open (on Chdb, which a DSN naming a missing database would abort,
// before DSN returns).
func DSN(t testing.TB) string {
	t.Helper()
	return DSNOn(t, Shared())
}

// DSNOn is DSN on e's shared server. Chdb needs ChdbEnv: without it, t
// is skipped.
func DSNOn(t testing.TB, e Engine) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d_%s", os.Getpid(), servers.dbs.Add(1), strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, t.Name()))
	name = name[:min(len(name), 100)]
	if e == Chdb {
		if os.Getenv(ChdbEnv) == "" {
			t.Skipf("needs ClickHouse 26.x: %s naming the chdb library (make chdb fetches it)", ChdbEnv)
		}
		dsn, err := chdbServer(t).DSN(name)
		if err != nil {
			t.Fatal(err)
		}
		return dsn
	}
	return managed(t).DSNFor(name)
}

// DBOn is DB on e's shared server.
func DBOn(t testing.TB, e Engine) driver.Conn {
	t.Helper()
	return Open(t, DSNOn(t, e))
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
func Private(t testing.TB) *local.Server {
	t.Helper()
	return PrivateProfile(t, "")
}

// PrivateProfile is Private with profile placed in the server's default
// settings profile (local.Server.ExtraProfile), e.g. a setting's default.
func PrivateProfile(t testing.TB, profile string) *local.Server {
	t.Helper()
	skipManaged(t, "a server of the test's own to stop, kill or log in to with a password")
	l := &local.Server{Dir: filepath.Join(t.TempDir(), "clickhouse"), ExtraProfile: profile}
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

// DetachViews detaches the views of every derived table but those in
// keep, so that an insert into samples is stored as a server killed after
// those views leaves it; reattach attaches them again. Detach before the
// INSERT begins: it holds the tables' locks until its data is sent.
func DetachViews(t testing.TB, conn driver.Conn, keep []string) (reattach func()) {
	t.Helper()
	var detached []string
	for _, name := range store.DerivedTables() {
		if !slices.Contains(keep, name) {
			detached = append(detached, name+"_mv")
		}
	}
	for _, v := range detached {
		if err := conn.Exec(context.Background(), "DETACH TABLE "+v); err != nil {
			t.Errorf("detaching %s: %v", v, err)
		}
	}
	return func() {
		for _, v := range detached {
			if err := conn.Exec(context.Background(), "ATTACH TABLE "+v); err != nil {
				t.Errorf("attaching %s: %v", v, err)
			}
		}
	}
}

// Fold merges table's duplicate rows away (a ReplacingMergeTree's), as a
// server's background merges eventually do. OPTIMIZE ... FINAL returns
// without merging while another merge holds the table's parts, so Fold
// repeats it until reading with FINAL finds no more rows than without,
// for at most 30 s.
func Fold(t testing.TB, conn driver.Conn, table string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := conn.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL"); err != nil {
			t.Fatalf("folding %s: %v", table, err)
		}
		var all, folded uint64
		if err := conn.QueryRow(ctx, "SELECT (SELECT count() FROM "+table+"), (SELECT count() FROM "+table+" FINAL)").Scan(&all, &folded); err != nil {
			t.Fatalf("folding %s: %v", table, err)
		}
		if all == folded {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("folding %s: %d rows, %d after FINAL, after 30 s of OPTIMIZE", table, all, folded)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
