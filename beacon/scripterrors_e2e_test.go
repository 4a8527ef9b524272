package beacon_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// serveBrokenScript is a page's script that breaks what h3rum uses, as
// polyfills and old libraries on real pages do: reading a response's body
// throws.
func serveBrokenScript(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/javascript")
	w.Write([]byte(`Response.prototype.arrayBuffer = () => { throw new TypeError('broken by the page'); };`))
}

// TestE2EScriptErrors runs the script on a page that breaks it: the run
// still ends, and its report counts every failure by the stage it
// happened in, with the samples it could take.
func TestE2EScriptErrors(t *testing.T) {
	f := newFixture(t, false)
	b := startBrowserAt(t, f, f.page+"?broken", false)
	r := f.awaitReport(b, 30*time.Second)
	want := beacon.ScriptErrors{Warmup: e2eWarmup + 1, Batch: 2 * e2eParallel}
	if r.ScriptErrors != want {
		t.Errorf("script errors %+v, want %+v", r.ScriptErrors, want)
	}
	if r.Partial || len(r.Samples) != e2eWarmup+1+2*e2eParallel {
		t.Errorf("partial %v, %d samples", r.Partial, len(r.Samples))
	}
}
