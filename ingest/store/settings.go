package store

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"maps"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"
)

// pins are the settings the pipeline depends on, at the values every
// connection sets wherever the server knows them: server defaults have
// changed under it between releases without notice.
var pins = []struct {
	name  string
	value any // int or string, as clickhouse-go sends them
}{
	// An acknowledged insert is a part on disk that the next query sees:
	// the spool deletes a batch once ClickHouse has acknowledged it, and
	// Stored looks for the runs a replay would repeat. 26.2 made 1 the
	// default, which acknowledges an insert once buffered (or, without
	// wait_for_async_insert, before it is).
	{"async_insert", 0},
	// Text dates are read in the one format the migrations and bound
	// parameters write (YYYY-MM-DD hh:mm:ss); 26.5 made best_effort the
	// default, which also reads other forms.
	{"date_time_input_format", "basic"},
	// A repeated insert into a replicated table (a retry after an error
	// that came after the commit) is dropped as a duplicate block (and so
	// never reaches the views), the cluster's guard against counting a
	// batch twice.
	{"insert_deduplicate", 1},
}

// PinnedSettings returns the settings h3rum's connections set, by name,
// with their values as system.settings shows them.
func PinnedSettings() map[string]string {
	m := make(map[string]string, len(pins))
	for _, s := range pins {
		m[s.name] = fmt.Sprint(s.value)
	}
	return m
}

//go:embed sql/known_settings.sql
var knownSettingsSQL string

// pin returns opts for a pool each of whose connections sets the pinned
// settings its server knows: before each dial, a short connection of its
// own asks the server which it has, so a server upgraded under a running
// pool gets the new ones on its next connections.
func pin(opts *clickhouse.Options) *clickhouse.Options {
	probe, pinned := *opts, *opts
	next := opts.DialStrategy
	if next == nil {
		next = clickhouse.DefaultDialStrategy
	}
	pinned.DialStrategy = func(ctx context.Context, id int, o *clickhouse.Options, dial clickhouse.Dial) (clickhouse.DialResult, error) {
		// The probe runs to its end, within the dial timeout, even when
		// the caller has gone (a report whose client left): it takes a
		// millisecond, and the connection it would otherwise leave behind
		// is one more for the server to drop.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(probe.DialTimeout, 30*time.Second)) // clickhouse-go's default
		defer cancel()
		known, err := knownPinned(pctx, &probe)
		if err != nil {
			return clickhouse.DialResult{}, err
		}
		with := *o
		with.Settings = maps.Clone(o.Settings)
		if with.Settings == nil {
			with.Settings = clickhouse.Settings{}
		}
		// The pins win over settings in the DSN: the pipeline is only
		// correct with them.
		maps.Copy(with.Settings, known)
		return next(ctx, id, &with, dial)
	}
	return &pinned
}

// knownPinned returns the pinned settings that the server opts names has
// and that its connections must set. A server too old to take settings as
// text (18.16) can be sent integer settings only: there a text setting must
// already have its pinned value, or the connection is refused.
func knownPinned(ctx context.Context, opts *clickhouse.Options) (clickhouse.Settings, error) {
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	version, err := conn.ServerVersion()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(pins))
	for i, s := range pins {
		names[i] = s.name
	}
	rows, err := conn.Query(ctx, knownSettingsSQL, names)
	if err != nil {
		return nil, fmt.Errorf("reading the server's settings: %w", err)
	}
	defer rows.Close()
	has := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("reading the server's settings: %w", err)
		}
		has[name] = value
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the server's settings: %w", err)
	}
	known := clickhouse.Settings{}
	for _, s := range pins {
		value, ok := has[s.name]
		if !ok {
			continue
		}
		if _, text := s.value.(string); text && version.Revision < proto.DBMS_MIN_REVISION_WITH_SETTINGS_SERIALIZED_AS_STRINGS {
			if value != s.value {
				return nil, fmt.Errorf("ClickHouse %s has %s = %s, and h3rum needs %v: this version cannot be told per connection, so set it in the user's settings profile", version.Version, s.name, value, s.value)
			}
			continue
		}
		known[s.name] = s.value
	}
	return known, nil
}
