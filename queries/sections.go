package queries

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/h3rum/h3rum/queries/model"
)

// A section is one part of the report. The file that declares it (one
// per section) holds its queries, reads their rows into the model and
// says what it costs; the report runs every registered section, in lanes
// by cost (lanes), and lists them in its stages.
type section struct {
	name string
	// part is when it runs: with the estimate (the dashboard's first
	// paint), as the bootstrap, or in the complete report.
	part part
	// files are its query files in sql/, and reads the sources they read
	// (TestSectionsDeclareTheirFiles checks both against the files).
	files []string
	reads []source
	// cost is how much of ClickHouse it takes at scale: the lanes deal
	// heavy sections apart, so that no two run one after the other.
	cost cost
	// headline keeps it in a headline-only report (Options.Headline).
	headline bool
	run      func(ctx context.Context, rep *build, conn driver.Conn) error
}

// part is when a section runs.
type part int

const (
	estimatePart part = iota // Estimate's, in registration order
	runsPart                 // the bootstrap, after the point estimates
	completePart             // the complete report's, beside the bootstrap
)

// cost is a section's cost class.
type cost int

const (
	light cost = iota // counts or digests over the window's hours
	heavy             // a pass over every run of the window
)

// source is a kind of table a section's queries read.
type source string

const (
	fromRaw       source = "raw"        // samples
	fromRollup    source = "rollup"     // the hourly tables, and handshake_requests for their edges
	fromRunsTable source = "runs table" // runs, runs_by_id and run_facts, a row per run
	fromNEL       source = "nel"        // nel_reports
)

// registered is every section, in the order of their files; each file
// registers its own from init, so that adding a section is adding a file.
var registered []section

func register(s section) { registered = append(registered, s) }

// sectionsOf returns the registered sections of part p that rep runs.
func (rep *build) sectionsOf(p part) []section {
	var out []section
	for _, s := range registered {
		if s.part == p && (!rep.opts.Headline || s.part != completePart || s.headline) {
			out = append(out, s)
		}
	}
	return out
}

// lanes deals the complete report's sections into two lanes beside the
// bootstrap's, heavy ones alternating first, then light ones, so that
// ClickHouse works on up to three of the report's queries at once and no
// lane holds two heavy sections where the other holds none.
func lanes(secs []section) (a, b []section) {
	var light []section
	for _, s := range secs {
		switch {
		case s.cost != heavy:
			light = append(light, s)
		case len(a) <= len(b):
			a = append(a, s)
		default:
			b = append(b, s)
		}
	}
	for _, s := range light {
		if len(b) <= len(a) {
			b = append(b, s)
		} else {
			a = append(a, s)
		}
	}
	return a, b
}

// groupSet is the report's groups, which its sections fill in at once:
// each writes fields of its own, and adding a group is serialised.
type groupSet struct {
	mu sync.Mutex
	m  map[string]*model.Group
}

// get returns the group name, added if new (groupOf).
func (s *groupSet) get(name string) *model.Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return groupOf(s.m, name)
}

// all returns the groups added so far.
func (s *groupSet) all() []*model.Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.m))
}

// groupOf returns groups[name], adding an empty group (a group whose runs
// are all outside the headline still shows its other sections).
func groupOf(groups map[string]*model.Group, name string) *model.Group {
	g := groups[name]
	if g == nil {
		g = &model.Group{Group: name, Diff: []model.Diff{}, Failures: []model.Failure{}}
		groups[name] = g
	}
	return g
}
