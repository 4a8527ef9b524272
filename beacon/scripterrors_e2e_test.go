package beacon_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// serveBrokenScript is a page's script that breaks what h3rum uses, as
// polyfills and old libraries on real pages do: reading a response's body
// throws, or with ?broken=observer, observing Resource Timing does. With
// ?broken=uuid it removes crypto.randomUUID, as on an http page, where
// only getRandomValues is there.
func serveBrokenScript(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/javascript")
	if r.URL.Query().Has("uuid") {
		fmt.Fprint(w, "delete Crypto.prototype.randomUUID;")
		return
	}
	broken := "Response.prototype.arrayBuffer"
	if r.URL.Query().Has("observer") {
		broken = "PerformanceObserver.prototype.observe"
	}
	fmt.Fprintf(w, "%s = () => { throw new TypeError('broken by the page'); };", broken)
}

// TestE2EScriptErrors runs the script on a page that breaks it: the run
// still ends, and its report counts every failure by the stage it
// happened in, with the samples it could take.
func TestE2EScriptErrors(t *testing.T) {
	f := newFixture(t, false)
	for _, tt := range []struct {
		q       string
		want    beacon.ScriptErrors
		noEntry bool // every sample without its Resource Timing entry
	}{
		{"?broken", beacon.ScriptErrors{Warmup: e2eWarmup + 1, Batch: 2 * e2eParallel}, false},
		// Each request then waits 2 s for an entry that never comes.
		{"?broken=observer", beacon.ScriptErrors{Timing: 1}, true},
	} {
		t.Run(tt.q, func(t *testing.T) {
			b := startBrowserAt(t, f, f.page+tt.q, false)
			r := f.awaitReport(b, 45*time.Second)
			if r.ScriptErrors != tt.want {
				t.Errorf("script errors %+v, want %+v", r.ScriptErrors, tt.want)
			}
			if r.Partial || len(r.Samples) != e2eWarmup+1+2*e2eParallel {
				t.Errorf("partial %v, %d samples", r.Partial, len(r.Samples))
			}
			for _, s := range r.Samples {
				if noEntry := s.Error == "noentry"; noEntry != tt.noEntry {
					t.Errorf("seq %d: error %q", s.Seq, s.Error)
				}
			}
		})
	}
}
