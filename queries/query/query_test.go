package query

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/model"
)

// A window that runs to the present takes its current hour from the
// rollup, which holds no row after now; one that ended in the past reads
// its last partial hour from the five-minute twins and raw rows.
func TestNewWindowCurrentHour(t *testing.T) {
	at := func(h, m int) uint32 { return uint32(time.Date(2025, 1, 1, h, m, 0, 0, time.UTC).Unix()) }
	tm := func(h, m int) time.Time { return time.Unix(int64(at(h, m)), 0).UTC() }
	for _, tc := range []struct {
		name              string
		since, until, now time.Time
		want              Window
	}{
		{"to the present", tm(0, 32), tm(5, 17), tm(5, 14), Window{since: at(0, 32), until: at(5, 17), hourFrom: at(1, 0), hourTo: at(6, 0),
			edgeA0: at(0, 32), edgeA1: at(0, 35), fineA0: at(0, 35), fineA1: at(1, 0),
			fineB0: at(5, 17), fineB1: at(5, 17), edgeB0: at(5, 17), edgeB1: at(5, 17)}},
		{"into the future", tm(0, 30), tm(5, 15), tm(3, 0), Window{since: at(0, 30), until: at(5, 15), hourFrom: at(1, 0), hourTo: at(6, 0),
			edgeA0: at(0, 30), edgeA1: at(0, 30), fineA0: at(0, 30), fineA1: at(1, 0),
			fineB0: at(5, 15), fineB1: at(5, 15), edgeB0: at(5, 15), edgeB1: at(5, 15)}},
		{"ended before now", tm(0, 32), tm(5, 17), tm(5, 18), Window{since: at(0, 32), until: at(5, 17), hourFrom: at(1, 0), hourTo: at(5, 0),
			edgeA0: at(0, 32), edgeA1: at(0, 35), fineA0: at(0, 35), fineA1: at(1, 0),
			fineB0: at(5, 0), fineB1: at(5, 15), edgeB0: at(5, 15), edgeB1: at(5, 17)}},
		{"whole hours to the present", tm(1, 0), tm(5, 0), tm(5, 0), Window{since: at(1, 0), until: at(5, 0), hourFrom: at(1, 0), hourTo: at(5, 0),
			edgeA0: at(1, 0), edgeA1: at(1, 0), fineA0: at(1, 0), fineA1: at(1, 0),
			fineB0: at(5, 0), fineB1: at(5, 0), edgeB0: at(5, 0), edgeB1: at(5, 0)}},
		{"within the current hour", tm(5, 12), tm(5, 53), tm(5, 40), Window{since: at(5, 12), until: at(5, 53), hourFrom: at(5, 12), hourTo: at(5, 12),
			edgeA0: at(5, 12), edgeA1: at(5, 15), fineA0: at(5, 15), fineA1: at(5, 50),
			fineB0: at(5, 53), fineB1: at(5, 53), edgeB0: at(5, 50), edgeB1: at(5, 53)}},
		{"within five minutes", tm(5, 11), tm(5, 14), tm(6, 0), Window{since: at(5, 11), until: at(5, 14), hourFrom: at(5, 11), hourTo: at(5, 11),
			edgeA0: at(5, 11), edgeA1: at(5, 14), fineA0: at(5, 14), fineA1: at(5, 14),
			fineB0: at(5, 14), fineB1: at(5, 14), edgeB0: at(5, 14), edgeB1: at(5, 14)}},
	} {
		if got := NewWindow(tc.since, tc.until, tc.now); got != tc.want {
			t.Errorf("%s: window\n%+v, want\n%+v", tc.name, got, tc.want)
		}
	}
}

// Every window's parts cover it once: whole hours, whole five minutes and
// at most two raw stretches of under five minutes each (and a window to
// the present the rest of its current hour).
func TestNewWindowParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	for range 20000 {
		since := base + rng.Int64N(4*3600)
		until := since + rng.Int64N(5*3600)
		now := until + rng.Int64N(3600) - 1800
		w := NewWindow(time.Unix(since, 0), time.Unix(until, 0), time.Unix(now, 0))
		parts := [][2]uint32{{w.edgeA0, w.edgeA1}, {w.fineA0, w.fineA1}, {w.hourFrom, w.hourTo}, {w.fineB0, w.fineB1}, {w.edgeB0, w.edgeB1}}
		at := since // the parts, in order, chain from since to the end
		for k, p := range parts {
			if p[1] < p[0] {
				t.Fatalf("[%d, %d) now %d: part %d ends before it starts: %+v", since, until, now, k, w)
			}
			if p[0] == p[1] {
				continue
			}
			if int64(p[0]) != at {
				t.Fatalf("[%d, %d) now %d: part %d starts at %d, want %d: %+v", since, until, now, k, p[0], at, w)
			}
			at = int64(p[1])
			switch k {
			case 0, 4:
				if p[1]-p[0] >= 300 {
					t.Fatalf("[%d, %d): raw part %d of %d s: %+v", since, until, k, p[1]-p[0], w)
				}
			case 1, 3:
				if p[0]%300 != 0 || p[1]%300 != 0 {
					t.Fatalf("[%d, %d): five-minute part %d off the slots: %+v", since, until, k, w)
				}
			case 2:
				if p[0]%3600 != 0 || p[1]%3600 != 0 {
					t.Fatalf("[%d, %d): hours off the hour: %+v", since, until, w)
				}
			}
		}
		end := until
		if w.hourTo > uint32(until) {
			end = int64(w.hourTo) // the current hour, whole in the rollup
		}
		if at != end && since != until {
			t.Fatalf("[%d, %d) now %d: parts end at %d, want %d: %+v", since, until, now, at, end, w)
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
