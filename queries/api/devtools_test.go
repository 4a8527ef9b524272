//go:build unix

package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon/chromium"
)

// tab is one DevTools session on a page of a headless Chromium: the
// commands it sends and the console errors, exceptions and CSP violations
// the page reports meanwhile.
type tab struct {
	t    *testing.T
	conn *websocket.Conn
	done chan struct{}

	mu      sync.Mutex
	next    int
	waiting map[int]chan json.RawMessage
	errs    []string
}

// violationsHook records the page's CSP violations where evaluate can read
// them; DevTools runs it before the page's own scripts, exempt from the
// CSP.
const violationsHook = `window.__violations = [];
document.addEventListener('securitypolicyviolation', e => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));`

// openTab starts Chromium with DevTools and attaches to its page with the
// console, the log and CSP violations watched; url is loaded.
func openTab(t *testing.T, ctx context.Context, width, height int) *tab {
	t.Helper()
	b, err := chromium.Start(ctx, "about:blank", chromium.Options{DevTools: true})
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	var pages []chromium.Page
	for deadline := time.Now().Add(20 * time.Second); len(pages) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pages, _ = b.Pages(ctx)
	}
	if len(pages) == 0 {
		t.Fatal("chromium opened no page")
	}
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, pages[0].WSURL, nil)
	if err != nil {
		t.Fatalf("devtools: %v", err)
	}
	tb := &tab{t: t, conn: conn, done: make(chan struct{}), waiting: map[int]chan json.RawMessage{}}
	go tb.read()
	t.Cleanup(func() { conn.Close(); <-tb.done })
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable"} {
		tb.call(m, nil)
	}
	tb.call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": violationsHook})
	tb.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500})
	return tb
}

func (tb *tab) read() {
	defer close(tb.done)
	for {
		var msg struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := tb.conn.ReadJSON(&msg); err != nil {
			tb.mu.Lock()
			for _, c := range tb.waiting {
				close(c)
			}
			tb.waiting = map[int]chan json.RawMessage{}
			tb.mu.Unlock()
			return
		}
		tb.mu.Lock()
		switch {
		case msg.ID != 0:
			if c := tb.waiting[msg.ID]; c != nil {
				delete(tb.waiting, msg.ID)
				if msg.Error != nil {
					c <- json.RawMessage(fmt.Sprintf(`{"__error":%q}`, msg.Error.Message))
				} else {
					c <- msg.Result
				}
			}
		case msg.Method == "Runtime.exceptionThrown":
			tb.errs = append(tb.errs, "exception: "+string(msg.Params))
		case msg.Method == "Runtime.consoleAPICalled":
			var p struct{ Type string }
			if json.Unmarshal(msg.Params, &p) == nil && (p.Type == "error" || p.Type == "warning" || p.Type == "assert") {
				tb.errs = append(tb.errs, "console."+p.Type+": "+string(msg.Params))
			}
		case msg.Method == "Log.entryAdded":
			var p struct {
				Entry struct{ Level, Source, Text, URL string }
			}
			if json.Unmarshal(msg.Params, &p) == nil && (p.Entry.Level == "error" || p.Entry.Source == "security") &&
				!strings.HasSuffix(p.Entry.URL, "/favicon.ico") {
				tb.errs = append(tb.errs, "log "+p.Entry.Source+": "+p.Entry.Text+" "+p.Entry.URL)
			}
		}
		tb.mu.Unlock()
	}
}

// call sends a DevTools command and returns its result.
func (tb *tab) call(method string, params any) json.RawMessage {
	tb.t.Helper()
	res, err := tb.send(method, params)
	if err != nil {
		tb.t.Fatal(err)
	}
	return res
}

// send sends a DevTools command and returns its result, or the error the
// browser answered with.
func (tb *tab) send(method string, params any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	c := make(chan json.RawMessage, 1)
	tb.mu.Lock()
	tb.next++
	id := tb.next
	tb.waiting[id] = c
	tb.mu.Unlock()
	if err := tb.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("devtools %s: %w", method, err)
	}
	select {
	case res, ok := <-c:
		if !ok {
			return nil, fmt.Errorf("devtools %s: connection closed", method)
		}
		if strings.HasPrefix(string(res), `{"__error"`) {
			return nil, fmt.Errorf("devtools %s: %s", method, res)
		}
		return res, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("devtools %s: no answer in 30 s", method)
	}
}

// eval evaluates expr in the page (awaiting a promise) and decodes its
// JSON-able value into out.
func (tb *tab) eval(expr string, out any) {
	tb.t.Helper()
	res := tb.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var v struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &v); err != nil || v.Exception != nil {
		tb.t.Fatalf("evaluating %.80s: %v %s", expr, err, res)
	}
	if out != nil {
		if err := json.Unmarshal(v.Result.Value, out); err != nil {
			tb.t.Fatalf("evaluating %.80s: %v (%s)", expr, err, v.Result.Value)
		}
	}
}

// navigate loads url and waits until cond (a JavaScript expression) holds.
func (tb *tab) navigate(url, cond string) {
	tb.t.Helper()
	tb.call("Page.navigate", map[string]any{"url": url})
	tb.wait(cond)
}

// pageWait bounds how long a page may take to reach a state: a liveness
// bound, not a speed check. Under the whole suite's load on 2 cores a
// dashboard reloaded with its complete report once took over 30 s.
const pageWait = 90 * time.Second

// wait polls cond for up to pageWait.
func (tb *tab) wait(cond string) {
	tb.t.Helper()
	for deadline := time.Now().Add(pageWait); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		res, err := tb.send("Runtime.evaluate", map[string]any{"expression": "!!(" + cond + ")", "returnByValue": true})
		if err != nil {
			// A poll in flight while the page navigates loses its
			// context; the next poll asks the new document.
			if strings.Contains(err.Error(), "navigated or closed") || strings.Contains(err.Error(), "context") {
				continue
			}
			tb.t.Fatal(err)
		}
		var v struct {
			Result struct{ Value bool } `json:"result"`
		}
		if json.Unmarshal(res, &v) == nil && v.Result.Value {
			return
		}
	}
	tb.t.Fatalf("page: %s did not hold within %s", cond, pageWait)
}

// screenshot writes the whole page as a PNG.
func (tb *tab) screenshot(file string) {
	tb.t.Helper()
	res := tb.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true})
	var v struct{ Data string }
	if err := json.Unmarshal(res, &v); err != nil {
		tb.t.Fatal(err)
	}
	b, err := base64.StdEncoding.DecodeString(v.Data)
	if err != nil {
		tb.t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s", file)
}

// problems returns the console errors, exceptions and CSP violations seen.
func (tb *tab) problems() []string {
	tb.t.Helper()
	var v []string
	tb.eval(`window.__violations || []`, &v)
	tb.mu.Lock()
	defer tb.mu.Unlock()
	out := append([]string(nil), tb.errs...)
	for _, s := range v {
		out = append(out, "CSP violation: "+s)
	}
	return out
}

func itoa(n int) string { return fmt.Sprint(n) }

func sprintf(f string, a ...any) string { return fmt.Sprintf(f, a...) }
