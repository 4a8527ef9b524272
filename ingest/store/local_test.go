package store_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func TestMigrateAppliesOnceThenNoop(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	all, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	applied, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if len(applied) != len(all) || len(all) == 0 {
		t.Fatalf("first migrate applied %v, want all %d migrations", applied, len(all))
	}
	again, err := store.Migrate(ctx, conn)
	if err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if len(again) != 0 {
		t.Fatalf("second migrate applied %v, want none", again)
	}
	var tables []string
	rows, err := conn.Query(ctx, "SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, want := range []string{"samples", "samples_rollup", "samples_rollup_mv", "schema_migrations"} {
		if !slices.Contains(tables, want) {
			t.Errorf("table %s missing after migrate; have %v", want, tables)
		}
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if int(n) != len(all) {
		t.Errorf("schema_migrations has %d rows, want %d", n, len(all))
	}
}

func TestLocalRestartKeepsPortAndData(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE t (x UInt32) ENGINE = MergeTree ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "INSERT INTO t (x) SELECT 7"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	dsn := l.DSN()
	recorded, err := store.ReadLocalDSN(l.Dir)
	if err != nil || recorded != dsn {
		t.Fatalf("ReadLocalDSN = %q, %v; want %q", recorded, err, dsn)
	}
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(l.Dir, store.AddressFile)); !os.IsNotExist(err) {
		t.Errorf("address file still present after Stop: %v", err)
	}
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if l.DSN() != dsn {
		t.Errorf("DSN changed across restart: %s → %s", dsn, l.DSN())
	}
	conn, err = store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var x uint32
	if err := conn.QueryRow(ctx, "SELECT x FROM t").Scan(&x); err != nil || x != 7 {
		t.Fatalf("after restart: x = %d, %v; want 7", x, err)
	}
}

func TestLocalMissingBinary(t *testing.T) {
	l := &store.Local{Dir: t.TempDir(), Binary: filepath.Join(t.TempDir(), "no-such-clickhouse")}
	if err := l.Start(context.Background()); err == nil {
		l.Stop(context.Background())
		t.Fatal("Start with a missing binary succeeded")
	}
}

func TestOpenRejectsBadDSN(t *testing.T) {
	for _, dsn := range []string{"http://127.0.0.1:8123/db", "::not a dsn"} {
		if c, err := store.Open(context.Background(), dsn); err == nil {
			c.Close()
			t.Errorf("store.Open(%q) succeeded", dsn)
		}
	}
}

func TestOpenCreatesMissingDatabase(t *testing.T) {
	l := storetest.Private(t)
	dsn := l.DSNFor("fresh_db")
	conn, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open with a missing database: %v", err)
	}
	defer conn.Close()
	var db string
	if err := conn.QueryRow(context.Background(), "SELECT currentDatabase()").Scan(&db); err != nil || db != "fresh_db" {
		t.Fatalf("currentDatabase() = %q, %v; want fresh_db", db, err)
	}
}

// The managed server has a password, generated at first start and kept
// with the DSN in files only their owner can read: a connection without it
// is refused. A data dir from a release without a password (config and
// address files readable by the group) gets one on its next start, and
// the data stays.
func TestLocalPassword(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	for _, name := range []string{store.PasswordFile, store.AddressFile, "config.xml"} {
		fi, err := os.Stat(filepath.Join(l.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	pw, err := os.ReadFile(filepath.Join(l.Dir, store.PasswordFile))
	if err != nil || len(strings.TrimSpace(string(pw))) < 32 {
		t.Fatalf("password file %q (%v): want at least 32 characters", pw, err)
	}
	if cfg, _ := os.ReadFile(filepath.Join(l.Dir, "config.xml")); strings.Contains(string(cfg), strings.TrimSpace(string(pw))) {
		t.Error("config.xml holds the password itself, not its hash")
	}
	u, err := url.Parse(l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range []*url.Userinfo{url.User("default"), url.UserPassword("default", "wrong")} {
		u.User = user
		if conn, err := store.Open(ctx, u.String()); err == nil {
			conn.Close()
			t.Errorf("connected as %q without the right password", user.String())
		}
	}
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatalf("with the password: %v", err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE kept (x UInt8) ENGINE = TinyLog"); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// An older data dir: no password file, loose modes.
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(l.Dir, store.PasswordFile))
	os.Chmod(filepath.Join(l.Dir, "config.xml"), 0o644)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pw2, _ := os.ReadFile(filepath.Join(l.Dir, store.PasswordFile))
	if len(pw2) == 0 || string(pw2) == string(pw) {
		t.Errorf("no fresh password for a data dir without one: %q", pw2)
	}
	if fi, _ := os.Stat(filepath.Join(l.Dir, "config.xml")); fi.Mode().Perm() != 0o600 {
		t.Errorf("config.xml mode %v after restart, want 0600", fi.Mode().Perm())
	}
	conn, err = store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Errorf("table lost across the password change: %d, %v", n, err)
	}
}

// A supervised server that dies is started again on the same port, with
// its data and password; Stop ends the supervision (no restart after it).
func TestLocalSupervisedRestart(t *testing.T) {
	l := storetest.Private(t)
	ctx := context.Background()
	conn, err := store.Open(ctx, l.DSN())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Exec(ctx, "CREATE TABLE kept (x UInt8) ENGINE = TinyLog"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	dsn := l.DSN()
	l.Supervise()
	pid := l.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for (l.Restarts() == 0 || !l.Up()) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if l.Restarts() != 1 || !l.Up() || l.PID() == pid {
		t.Fatalf("after a kill: restarts %d, up %v, pid %d (was %d); want a restarted server", l.Restarts(), l.Up(), l.PID(), pid)
	}
	if l.DSN() != dsn {
		t.Errorf("DSN changed across the restart: %s → %s", dsn, l.DSN())
	}
	conn, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Errorf("after the restart: table kept %d, %v", n, err)
	}
	if err := l.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * superviseWait)
	if l.Up() || l.PID() != 0 || l.Restarts() != 1 {
		t.Errorf("after Stop: up %v, pid %d, restarts %d; want stopped for good", l.Up(), l.PID(), l.Restarts())
	}
}

// superviseWait is longer than the first restart's backoff.
const superviseWait = time.Second
