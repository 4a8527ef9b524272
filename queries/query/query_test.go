package query

import (
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
)

// A window that runs to the present takes its current hour from the
// rollup, which holds no row after now; one that ended in the past reads
// its last partial hour from raw rows.
func TestNewWindowCurrentHour(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2025, 1, 1, h, m, 0, 0, time.UTC) }
	u := func(t time.Time) uint32 { return uint32(t.Unix()) }
	for _, tc := range []struct {
		name              string
		since, until, now time.Time
		want              Window
	}{
		{"to the present", at(0, 30), at(5, 15), at(5, 14),
			Window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(6, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 15)), u(at(5, 15))}},
		{"into the future", at(0, 30), at(5, 15), at(3, 0),
			Window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(6, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 15)), u(at(5, 15))}},
		{"ended before now", at(0, 30), at(5, 15), at(5, 16),
			Window{u(at(0, 30)), u(at(5, 15)), u(at(1, 0)), u(at(5, 0)), u(at(0, 30)), u(at(1, 0)), u(at(5, 0)), u(at(5, 15))}},
		{"whole hours to the present", at(1, 0), at(5, 0), at(5, 0),
			Window{u(at(1, 0)), u(at(5, 0)), u(at(1, 0)), u(at(5, 0)), u(at(1, 0)), u(at(1, 0)), u(at(5, 0)), u(at(5, 0))}},
		{"within the current hour", at(5, 10), at(5, 50), at(5, 40),
			Window{u(at(5, 10)), u(at(5, 50)), u(at(5, 10)), u(at(5, 10)), u(at(5, 10)), u(at(5, 50)), u(at(5, 50)), u(at(5, 50))}},
	} {
		if got := NewWindow(tc.since, tc.until, tc.now); got != tc.want {
			t.Errorf("%s: window %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// keptDurationsSQL and KeptSQL leave a run's failed requests in its arrays, without reading
// their error codes, when excluded runs are left out: every exclusion mask
// must then count ExcludeFailed, the mark of a run with one.
func TestExclusionMasksCountFailed(t *testing.T) {
	for _, o := range []model.Options{{}, {IncludeBots: true}, {IncludeFailed: true}} {
		if exclusionMask(&o)&store.ExcludeFailed == 0 {
			t.Errorf("%+v: the exclusion mask %08b leaves runs with a failed request in", o, exclusionMask(&o))
		}
		if o.IncludeExcluded || keptDurationsSQL(&o) != "durations" || KeptSQL(&o) != "outcomes" {
			t.Errorf("%+v: kept %s and %s", o, keptDurationsSQL(&o), KeptSQL(&o))
		}
	}
	if o := (model.Options{IncludeExcluded: true}); !strings.Contains(keptDurationsSQL(&o), "errors") || !strings.Contains(KeptSQL(&o), "errors") {
		t.Errorf("with excluded runs in, kept %s and %s read no error codes", keptDurationsSQL(&o), KeptSQL(&o))
	}
}
