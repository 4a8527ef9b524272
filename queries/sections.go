package queries

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// eachRowOf runs q with args and hands every row to scan.
func eachRowOf(ctx context.Context, conn driver.Conn, q string, args []any, what string, scan func(driver.Rows) error) error {
	rows, err := conn.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("querying %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("reading %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

// groupSet is the report's groups, which its sections fill in at once:
// each writes fields of its own, and adding a group is serialised.
type groupSet struct {
	mu sync.Mutex
	m  map[string]*Group
}

// get returns the group name, added if new (groupOf).
func (s *groupSet) get(name string) *Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return groupOf(s.m, name)
}

// all returns the groups added so far.
func (s *groupSet) all() []*Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.m))
}

// groupOf returns groups[name], adding an empty group (a group whose runs
// are all outside the headline still shows its other sections).
func groupOf(groups map[string]*Group, name string) *Group {
	g := groups[name]
	if g == nil {
		g = &Group{Group: name, Diff: []Diff{}, Failures: []Failure{}}
		groups[name] = g
	}
	return g
}
