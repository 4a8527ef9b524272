package beacon_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
)

// BenchmarkE2EMainThreadTrace says where the main-thread script time that
// BenchmarkE2EMainThreadCPU measures goes: it records a DevTools trace of
// one load each of the script's page (configured by its URL) and of the
// idle floor's, both bare, and sums the renderer main thread's CPU time
// (threadTicks, tdur) of each JavaScript entry by what the browser called
// it for: the script's evaluation, the load event, the idle callback,
// timers, observers and other events. Promise reactions run after an
// entry are summed apart ("microtasks"): DevTools' script time leaves them
// out. Each figure is the median over the loads. Tracing adds its own
// cost to every entry, so the figures compare the two pages; they are not
// the other benchmark's.
// Run: go test ./beacon -run '^$' -bench E2EMainThreadTrace -benchtime 5x
func BenchmarkE2EMainThreadTrace(b *testing.B) {
	f := newFixture(b, false)
	kinds := map[string]map[string][]float64{} // page → entry kind → ms per load
	pages := []string{"url", "floor=idle"}
	for b.Loop() {
		var held time.Duration
		report := func(br *chromium.Browser) {
			start := time.Now()
			f.awaitReport(br, 30*time.Second)
			time.Sleep(500 * time.Millisecond)
			held = time.Since(start)
		}
		hold := func(*chromium.Browser) { time.Sleep(held) }
		for i, p := range pages {
			done := hold
			if i == 0 {
				done = report
			}
			byKind := mainThreadEntries(b, traceLoad(b, f, f.page+"?"+p, 0, done))
			if kinds[p] == nil {
				kinds[p] = map[string][]float64{}
			}
			for k, ms := range byKind {
				kinds[p][k] = append(kinds[p][k], ms)
			}
		}
	}
	med := func(l []float64) float64 {
		if len(l) < b.N { // loads without such an entry count as 0
			l = append(l, make([]float64, b.N-len(l))...)
		}
		l = slices.Sorted(slices.Values(l))
		return l[len(l)/2]
	}
	var all []string
	for _, p := range pages {
		for k := range kinds[p] {
			if !slices.Contains(all, k) {
				all = append(all, k)
			}
		}
	}
	slices.Sort(all)
	var out strings.Builder
	fmt.Fprintf(&out, "main-thread CPU by entry, ms (median of %d loads; tracing on):\n%-28s %8s %8s\n", b.N, "entry", "script", "floor")
	var sum [2]float64
	for _, k := range all {
		s, fl := med(kinds[pages[0]][k]), med(kinds[pages[1]][k])
		fmt.Fprintf(&out, "%-28s %8.3f %8.3f\n", k, s, fl)
		if k != "microtasks" {
			sum[0], sum[1] = sum[0]+s, sum[1]+fl
		}
	}
	fmt.Fprintf(&out, "%-28s %8.3f %8.3f", "script time (no microtasks)", sum[0], sum[1])
	b.ReportMetric(sum[0], "traced-script-ms/run")
	b.ReportMetric(sum[1], "traced-idle-floor-ms/run")
	b.Log(out.String())
}

// traceEvent is one event of Chromium's trace format.
type traceEvent struct {
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	Ts   float64         `json:"ts"`   // µs
	Dur  float64         `json:"dur"`  // µs, wall
	Tdur float64         `json:"tdur"` // µs, thread CPU
	Args json.RawMessage `json:"args"`
}

// traceLoad loads url in a fresh Chromium with DevTools tracing on, from
// navigation until done returns, and returns the trace's events. A
// throttle above 1 slows the page's CPU that many times (DevTools' CPU
// throttling, as Lighthouse's mobile preset does with 4).
func traceLoad(b *testing.B, f *fixture, url string, throttle float64, done func(*chromium.Browser)) []traceEvent {
	br, s, closeAll := blankSession(b, f)
	defer closeAll()
	if throttle > 1 {
		if _, err := s.call("Emulation.setCPUThrottlingRate", map[string]any{"rate": throttle}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.call("Tracing.start", map[string]any{
		"categories":   "toplevel,devtools.timeline,v8.execute,disabled-by-default-devtools.timeline",
		"transferMode": "ReturnAsStream",
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.call("Page.navigate", map[string]string{"url": url}); err != nil {
		b.Fatal(err)
	}
	done(br)
	if _, err := s.call("Tracing.end", nil); err != nil {
		b.Fatal(err)
	}
	var complete struct {
		Stream string `json:"stream"`
	}
	if err := s.event("Tracing.tracingComplete", &complete); err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for {
		res, err := s.call("IO.read", map[string]any{"handle": complete.Stream, "size": 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		var chunk struct {
			Base64 bool   `json:"base64Encoded"`
			Data   string `json:"data"`
			EOF    bool   `json:"eof"`
		}
		if err := json.Unmarshal(res, &chunk); err != nil {
			b.Fatal(err)
		}
		if !chunk.Base64 {
			buf.WriteString(chunk.Data)
		} else if d, err := base64.StdEncoding.DecodeString(chunk.Data); err != nil {
			b.Fatal(err)
		} else {
			buf.Write(d)
		}
		if chunk.EOF {
			break
		}
	}
	var tr struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &tr); err != nil {
		b.Fatalf("trace: %v", err)
	}
	return tr.TraceEvents
}

// event reads messages until the event method arrives and decodes its
// params into v.
func (c *cdpSession) event(method string, v any) error {
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var msg struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := c.conn.ReadJSON(&msg); err != nil {
			return fmt.Errorf("devtools: waiting for %s: %w", method, err)
		}
		if msg.Method == method {
			return json.Unmarshal(msg.Params, v)
		}
	}
}

// LongTaskMS is the Long Tasks API's threshold: a task over it delays
// input on the page.
const LongTaskMS = 50

// A scriptTask is a renderer main-thread task (RunTask) that ran the
// script: its wall duration and the wall time of its outermost JavaScript
// calls (EvaluateScript, FunctionCall) and microtask checkpoints
// (RunMicrotasks) by the script and by every other URL, ms. A checkpoint
// carries no URL: it is the script's after the script's own call, and
// where no call came before it in the task (the promise reactions of a
// fetch the script made run so, with nothing else), which counts against
// the script whatever reactions it ran; it is another URL's after that
// URL's call.
type scriptTask struct{ dur, own, others float64 }

// owned reports whether the task is the script's: its JavaScript (with
// the layouts it forced) is at least half of the task and more than any
// other URL's. The parser's task that evaluates the script, or a page's
// load handler and layout that the script's load listener joins, are the
// page's: without the script they would be as long.
func (t scriptTask) owned() bool { return t.own >= t.others && 2*t.own >= t.dur }

// scriptTasks returns every task that ran the script: one enclosing an
// EvaluateScript or FunctionCall of a URL holding script, or a microtask
// checkpoint counted as the script's.
func scriptTasks(b testing.TB, evs []traceEvent, script string) []scriptTask {
	xs := mainThreadEvents(b, evs)
	var out []scriptTask
	var task *traceEvent
	var cur scriptTask
	ran := false
	var jsEnd float64 // the end of the current outermost JavaScript call
	lastOwn := true   // the task's last outermost call was the script's, or there was none
	flush := func() {
		if ran {
			out = append(out, cur)
		}
	}
	for i := range xs {
		e := &xs[i]
		if e.Name == "RunTask" || e.Name == "ThreadControllerImpl::RunTask" {
			if task == nil || e.Ts >= task.Ts+task.Dur {
				flush()
				task, cur, ran, jsEnd, lastOwn = e, scriptTask{dur: e.Dur / 1000}, false, 0, true
			}
			continue
		}
		if task == nil || e.Ts >= task.Ts+task.Dur || e.Ts < jsEnd {
			continue
		}
		ours := lastOwn
		switch e.Name {
		case "EvaluateScript", "FunctionCall":
			var a struct {
				Data struct{ URL string } `json:"data"`
			}
			json.Unmarshal(e.Args, &a)
			ours = strings.Contains(a.Data.URL, script)
			lastOwn = ours
		case "RunMicrotasks":
		default:
			continue
		}
		jsEnd = e.Ts + e.Dur
		if ours {
			cur.own += e.Dur / 1000
			ran = true
		} else {
			cur.others += e.Dur / 1000
		}
	}
	flush()
	return out
}

// mainThreadEvents are the renderer main thread's complete events,
// parents before children: by start, the longer first.
func mainThreadEvents(b testing.TB, evs []traceEvent) []traceEvent {
	main := map[[2]int]bool{}
	for _, e := range evs {
		if e.Ph == "M" && e.Name == "thread_name" && strings.Contains(string(e.Args), `"CrRendererMain"`) {
			main[[2]int{e.Pid, e.Tid}] = true
		}
	}
	var xs []traceEvent
	for _, e := range evs {
		if e.Ph == "X" && main[[2]int{e.Pid, e.Tid}] {
			xs = append(xs, e)
		}
	}
	if len(xs) == 0 {
		b.Fatal("the trace has no renderer main thread events")
	}
	slices.SortFunc(xs, func(a, b traceEvent) int {
		if a.Ts != b.Ts {
			return int(a.Ts - b.Ts)
		}
		return int(b.Dur - a.Dur)
	})
	return xs
}

// mainThreadEntries sums the renderer main thread's JavaScript entries'
// thread CPU, ms, by kind: each outermost EvaluateScript or FunctionCall
// by the event that called it, and the microtask checkpoints after them.
func mainThreadEntries(b *testing.B, evs []traceEvent) map[string]float64 {
	xs := mainThreadEvents(b, evs)
	out := map[string]float64{}
	var stack []traceEvent // the enclosing events of the current one
	for _, e := range xs {
		for len(stack) > 0 && e.Ts >= stack[len(stack)-1].Ts+stack[len(stack)-1].Dur {
			stack = stack[:len(stack)-1]
		}
		inJS := slices.ContainsFunc(stack, func(p traceEvent) bool {
			return p.Name == "EvaluateScript" || p.Name == "FunctionCall" || p.Name == "RunMicrotasks"
		})
		switch {
		case inJS:
		case e.Name == "RunMicrotasks":
			out["microtasks"] += e.Tdur / 1000
		case e.Name == "EvaluateScript":
			out["evaluate"] += e.Tdur / 1000
		case e.Name == "FunctionCall":
			out[entryKind(stack)] += e.Tdur / 1000
		}
		stack = append(stack, e)
	}
	return out
}

// entryKind names what called a FunctionCall, from its enclosing events.
func entryKind(stack []traceEvent) string {
	for _, p := range slices.Backward(stack) {
		switch p.Name {
		case "FireIdleCallback":
			return "idle callback"
		case "TimerFire", "TimerBase::run":
			return "timer"
		case "FireAnimationFrame":
			return "animation frame"
		case "EventDispatch":
			var a struct {
				Data struct{ Type string } `json:"data"`
			}
			json.Unmarshal(p.Args, &a)
			return "event " + a.Data.Type
		}
	}
	return "other (observers, …)"
}

// TestScriptTasksAttribution: a task is the script's when its JavaScript
// is most of it, counting outermost calls once.
func TestScriptTasksAttribution(t *testing.T) {
	meta := traceEvent{Name: "thread_name", Ph: "M", Pid: 1, Tid: 1, Args: json.RawMessage(`{"name":"CrRendererMain"}`)}
	x := func(name string, ts, dur float64, url string) traceEvent {
		return traceEvent{Name: name, Ph: "X", Pid: 1, Tid: 1, Ts: ts * 1000, Dur: dur * 1000,
			Args: json.RawMessage(fmt.Sprintf(`{"data":{"url":%q}}`, url))}
	}
	const ours, page = "https://c.example/h3rum.js", "https://site.example/"
	evs := []traceEvent{meta,
		// The page's load event: its handler and a layout, the script's listener.
		x("RunTask", 0, 170, ""), x("FunctionCall", 10, 18, page), x("FunctionCall", 30, 3, ours), x("Layout", 50, 80, ""),
		// The script's idle callback, a nested call inside its own.
		x("RunTask", 200, 40, ""), x("FunctionCall", 201, 21, ours), x("FunctionCall", 202, 5, ours),
		// A task without the script.
		x("RunTask", 300, 90, ""), x("FunctionCall", 301, 80, page),
		// The parser's task evaluating the script among its own work.
		x("RunTask", 400, 120, ""), x("EvaluateScript", 410, 7, ours),
		// The script's call, then its microtasks, a nested call inside them.
		x("RunTask", 600, 30, ""), x("FunctionCall", 601, 4, ours), x("RunMicrotasks", 606, 20, ""), x("FunctionCall", 610, 2, page),
		// Microtasks with no call before them: counted as the script's.
		x("RunTask", 700, 12, ""), x("RunMicrotasks", 701, 10, ""),
		// The page's call and its microtasks, then the script's call.
		x("RunTask", 800, 40, ""), x("FunctionCall", 801, 5, page), x("RunMicrotasks", 807, 25, ""), x("FunctionCall", 833, 2, ours),
	}
	got := scriptTasks(t, evs, "/h3rum.")
	want := []scriptTask{{dur: 170, own: 3, others: 18}, {dur: 40, own: 21}, {dur: 120, own: 7},
		{dur: 30, own: 24}, {dur: 12, own: 10}, {dur: 40, own: 2, others: 30}}
	if !slices.Equal(got, want) {
		t.Fatalf("scriptTasks = %+v, want %+v", got, want)
	}
	for i, w := range []bool{false, true, false, true, true, false} {
		if got[i].owned() != w {
			t.Errorf("task %d owned %v, want %v", i, got[i].owned(), w)
		}
	}
}
