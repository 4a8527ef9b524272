package store_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// TestPinnedSettings: the connections store opens (Open and Dial) run with
// the pinned settings that the server knows, while the shared test
// server's defaults are the opposite ones (storetest.FlippedDefaults), as
// if a release had flipped them: a pin that is lost fails here, on either
// engine, and the suites run under the flipped defaults too.
func TestPinnedSettings(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.DSN(t)
	opened, err := store.Open(ctx, dsn) // first: it creates the database on 18.16
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	dialed, err := store.Dial(dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := clickhouse.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	want := store.PinnedSettings()
	defaults := settings(t, plain, slices.Collect(maps.Keys(want)))
	t.Logf("server defaults %v, pinned %v", defaults, want)
	for name, v := range storetest.FlippedDefaults(storetest.Shared()) {
		if defaults[name] != v {
			t.Errorf("the test server's default %s = %q, want the flipped %s", name, defaults[name], v)
		}
	}
	if storetest.Shared() == storetest.Chdb && len(storetest.FlippedDefaults(storetest.Shared())) != len(want) {
		t.Errorf("the 26.x test server flips %v of the pins %v", storetest.FlippedDefaults(storetest.Shared()), want)
	}
	for _, c := range []struct {
		name string
		conn driver.Conn
	}{{"Open", opened}, {"Dial", dialed}} {
		got := settings(t, c.conn, slices.Collect(maps.Keys(want)))
		for name := range defaults {
			if got[name] != want[name] {
				t.Errorf("%s: %s = %s, want %s", c.name, name, got[name], want[name])
			}
		}
	}
}

// TestPinnedTextSettingOnOldServer: 18.16 takes settings per connection as
// integers only, so a text setting store pins must already have its value
// there; a server whose profile says otherwise is refused, naming the
// setting and where to change it, rather than used with the wrong one.
func TestPinnedTextSettingOnOldServer(t *testing.T) {
	l := storetest.PrivateProfile(t, "<date_time_input_format>best_effort</date_time_input_format>")
	conn, err := store.Open(context.Background(), l.DSN())
	if err == nil {
		defer conn.Close()
		var v string
		err := conn.QueryRow(context.Background(), "SELECT value FROM system.settings WHERE name = 'date_time_input_format'").Scan(&v)
		if err != nil || v != "basic" {
			t.Fatalf("store.Open succeeded with date_time_input_format = %q (%v)", v, err)
		}
		t.Skip("this server takes text settings per connection: the pin applies, nothing to refuse")
	}
	if !strings.Contains(err.Error(), "date_time_input_format = best_effort") || !strings.Contains(err.Error(), "profile") {
		t.Errorf("store.Open: %v, want a refusal naming date_time_input_format and the profile", err)
	}
}

// settings returns the values of the settings among names that the
// server knows, as a query on conn sees them.
func settings(t *testing.T, conn driver.Conn, names []string) map[string]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT name, value FROM system.settings WHERE has(?, name)", names)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			t.Fatal(err)
		}
		m[name] = value
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}
