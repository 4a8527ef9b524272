package beacon_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/chromium"
)

// evaluate runs expr in the browser's one page, the promise it returns
// awaited, and decodes its value into v.
func evaluate(ctx context.Context, t testing.TB, b *chromium.Browser, expr string, v any) {
	t.Helper()
	pages, err := b.Pages(ctx)
	if err != nil || len(pages) != 1 {
		t.Fatalf("pages %+v: %v", pages, err)
	}
	// A page that is still starting has no execution context yet.
	res, err := b.Call(ctx, pages[0].WSURL, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	for err != nil && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		res, err = b.Call(ctx, pages[0].WSURL, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	}
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatal(err)
	}
	if out.Exception != nil {
		t.Fatalf("%s threw: %s", expr, out.Exception)
	}
	if err := json.Unmarshal(out.Result.Value, v); err != nil {
		t.Fatalf("%s: %v (%s)", expr, err, out.Result.Value)
	}
}

// runIDCost times the script's run id (core.js runID, copied here) on a
// cross-origin isolated page (performance.now() to 5 µs), µs: the page's
// first crypto.randomUUID call (its first use of the CSPRNG) and the
// second, then the first crypto.getRandomValues call (the CSPRNG already
// used, so what is left is the browser's first use of the typed array it
// fills) and the second, the first whole id each way (randomUUID, as on a
// secure page, and getRandomValues, as on an http page; their code
// compiled then) and the first Math.random id of scripts before 1.3.0;
// then the mean of 10,000 ids each way.
const runIDCost = `(async () => {
  while (location.protocol != 'https:' || document.readyState != 'complete') await new Promise((r) => setTimeout(r, 10));
  const runID = (c) => {
    if (c.randomUUID) {
      const [t, m, v, r, n] = c.randomUUID().split('-');
      return t + m + v.slice(1) + r.slice(1) + n + c.randomUUID().slice(-2);
    }
    let s = '';
    for (const x of c.getRandomValues(new Uint8Array(16))) s += (x + 256).toString(16).slice(1);
    return s;
  };
  const old = () => {
    let s = '';
    while (s.length < 32) s += ((Math.random() * 16) | 0).toString(16);
    return s;
  };
  const P = performance, N = 1e4, u = new Uint8Array(16), C = crypto;
  const bytes = { getRandomValues: (a) => C.getRandomValues(a) }; // crypto without randomUUID
  const time = (f) => {
    const t = P.now();
    f();
    return (P.now() - t) * 1e3;
  };
  let id = '', bytesID = '', sink = 0;
  const m = {
    firstRandomUUID: time(() => C.randomUUID()),
    secondRandomUUID: time(() => C.randomUUID()),
    firstGetRandomValues: time(() => C.getRandomValues(u)),
    secondGetRandomValues: time(() => C.getRandomValues(u)),
    firstID: time(() => (id = runID(C))),
    firstBytesID: time(() => (bytesID = runID(bytes))),
    firstMathRandomID: time(old),
    meanMathRandomID: time(() => { for (let i = 0; i < N; i++) sink += old().length; }) / N,
    meanID: time(() => { for (let i = 0; i < N; i++) sink += runID(C).length; }) / N,
    meanBytesID: time(() => { for (let i = 0; i < N; i++) sink += runID(bytes).length; }) / N,
  };
  return { id, bytesID, m, sink, isolated: crossOriginIsolated };
})()`

// BenchmarkE2ERunID measures what a run id from the CSPRNG (randomUUID,
// or getRandomValues where randomUUID is missing) costs the main thread in
// Chromium, with the Math.random ids of earlier scripts for comparison (medians over the iterations, each a fresh
// browser). Run: go test ./beacon -run '^$' -bench E2ERunID -benchtime 9x
func BenchmarkE2ERunID(b *testing.B) {
	f := newFixture(b, false)
	all := map[string][]float64{}
	for b.Loop() {
		br := startBrowserAt(b, f, f.page+"?control", true)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var v struct {
			ID, BytesID string
			M           map[string]float64
			Isolated    bool
		}
		evaluate(ctx, b, br, runIDCost, &v)
		cancel()
		if len(v.ID) != 32 || len(v.BytesID) != 32 || !v.Isolated {
			b.Fatalf("ids %q and %q, cross-origin isolated %v", v.ID, v.BytesID, v.Isolated)
		}
		for k, x := range v.M {
			all[k] = append(all[k], x)
		}
		if err := br.Close(); err != nil {
			b.Fatal(err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		l := slices.Sorted(slices.Values(all[k]))
		b.ReportMetric(l[len(l)/2], k+"-us")
		b.Logf("%s, µs, sorted: %.1f", k, l)
	}
}

// TestE2ERunIDWithoutRandomUUID runs the script on a page without
// crypto.randomUUID (as an http page is): the run id then comes from
// getRandomValues, and the run is as complete as anywhere.
func TestE2ERunIDWithoutRandomUUID(t *testing.T) {
	f := newFixture(t, false)
	b := startBrowserAt(t, f, f.page+"?broken=uuid", true)
	r := f.awaitReport(b, 30*time.Second)
	if r.ScriptErrors != (beacon.ScriptErrors{}) || r.Partial || len(r.Samples) != e2eWarmup+1+2*e2eParallel {
		t.Errorf("script errors %+v, partial %v, %d samples", r.ScriptErrors, r.Partial, len(r.Samples))
	}
	if r.RunID == ([16]byte{}) {
		t.Error("no run id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var has bool
	evaluate(ctx, t, b, "'randomUUID' in crypto", &has)
	if has {
		t.Error("the page still has crypto.randomUUID")
	}
}
