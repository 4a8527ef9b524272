package main

// Each test here is an attack on the collector, tried as a hostile client
// would: the real serve, real TLS listeners on loopback, real ClickHouse.
// They pin what the README's security model promises.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/access"
)

// get sends one request with headers (Host sets the request's Host).
func get(t *testing.T, c *http.Client, url string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// wsDial opens a WebSocket to an https origin with the development
// certificate; it returns the handshake's status.
func wsDial(origin, path string, hdr http.Header) (*websocket.Conn, int, error) {
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.Dial("wss://"+strings.TrimPrefix(origin, "https://")+path, hdr)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	return conn, status, err
}

// With the H2 origin on a public address and no report token, the report
// endpoints are closed on both origins (and --open-reports would be
// refused: it needs every listener on loopback).
func TestHostileReportsClosedWhenAnyListenerIsPublic(t *testing.T) {
	ts := startServe(t, "--h2-addr", "0.0.0.0:0")
	c := insecureClient()
	for _, origin := range []string{ts.h3, ts.h2} {
		for _, path := range []string{"/api/report", "/dashboard"} {
			if code, _, body := get(t, c, origin+path); code != http.StatusForbidden {
				t.Errorf("%s%s without a token, public H2 origin: %d %q, want 403", origin, path, code, body)
			}
		}
		if conn, status, _ := wsDial(origin, "/api/live", nil); conn != nil || status != http.StatusForbidden {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("%s/api/live without a token: status %d, want 403 and no upgrade", origin, status)
		}
	}
}

// --open-reports, all on loopback: a local request is served, but one that
// names another host (DNS rebinding) or came through a proxy is not.
func TestHostileOpenModeRefusesRebindingAndProxies(t *testing.T) {
	ts := startServe(t, "--open-reports")
	c := insecureClient()
	for _, origin := range []string{ts.h3, ts.h2} {
		port := origin[strings.LastIndex(origin, ":")+1:]
		for _, tc := range []struct {
			name string
			hdr  []string
			want int
		}{
			{"local", nil, 200},
			{"rebinding host", []string{"Host", "rebind.attacker.example:" + port}, 403},
			{"via a proxy", []string{"X-Forwarded-For", "203.0.113.5"}, 403},
			{"forwarded", []string{"Forwarded", "for=203.0.113.5"}, 403},
		} {
			if code, _, body := get(t, c, origin+"/api/report?since=1h", tc.hdr...); code != tc.want {
				t.Errorf("%s %s: %d %q, want %d", origin, tc.name, code, strings.TrimSpace(body), tc.want)
			}
		}
	}
}

// Behind a proxy that sends X-Forwarded-For, a client-sent Forwarded header
// neither dodges the rate limit nor chooses the stored geography; a CDN
// country header from a peer that is not a trusted proxy is not believed;
// and the rate limit refuses a flood before decoding it.
func TestHostileSpoofedForwardingAndGeo(t *testing.T) {
	ts := startServe(t, "--trusted-proxies", "127.0.0.1", "--rate-limit", "1", "--geo-header", "CF-IPCountry")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.h3, "https://"))
	viaProxy := "https://127.0.0.1:" + port // the trusted proxy's address
	direct := "https://[::1]:" + port       // an untrusted peer
	c := insecureClient()
	post := func(origin string, body []byte, hdr ...string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", origin+"/beacon", bytes.NewReader(body))
		req.Header.Set("User-Agent", browserUA)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST /beacon: %v", err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	codes := map[int]int{}
	for i := range 10 {
		_, body := syntheticReport("shop")
		codes[post(viaProxy, body, "X-Forwarded-For", "198.51.100.7", "Forwarded", "for=192.0.2."+strconv.Itoa(i))]++
	}
	if codes[204] != 1 || codes[429] != 9 {
		t.Errorf("10 reports from one client rotating Forwarded at --rate-limit 1: %v, want 1×204 9×429", codes)
	}

	believed, _ := syntheticReport("shop")
	forged, _ := syntheticReport("shop")
	if code := post(viaProxy, beacontest.Report(beacontest.Run{ID: believed, Site: "shop", Warmup: 2}), "X-Forwarded-For", "198.51.100.8", "CF-IPCountry", "JP"); code != 204 {
		t.Fatalf("report via the proxy with its country: %d", code)
	}
	if code := post(direct, beacontest.Report(beacontest.Run{ID: forged, Site: "shop", Warmup: 2}), "CF-IPCountry", "KP"); code != 204 {
		t.Fatalf("direct report with a forged country: %d", code)
	}
	conn := ts.conn(t)
	country := func(id string) string {
		var c string
		waitFor(t, 20*time.Second, "the run in ClickHouse", func() (bool, error) {
			err := conn.QueryRow(context.Background(), "SELECT any(country) FROM samples WHERE run_id = toUUID(?) GROUP BY run_id", uuidString(id)).Scan(&c)
			return err == nil, err
		})
		return c
	}
	if got := country(believed); got != "JP" {
		t.Errorf("country from the trusted proxy's header: %q, want JP", got)
	}
	if got := country(forged); got == "KP" {
		t.Errorf("a direct client's CF-IPCountry: KP was stored")
	}

	// 50 malformed 30 KB bodies from one client: one is decoded, the rest
	// are refused by the rate limit first.
	junk := bytes.Repeat([]byte("["), 30<<10)
	codes = map[int]int{}
	for range 50 {
		codes[post(viaProxy, junk, "X-Forwarded-For", "198.51.100.9")]++
	}
	if codes[400] != 1 || codes[429] != 49 {
		t.Errorf("50 malformed reports from one client at --rate-limit 1: %v, want 1×400 49×429", codes)
	}
}

// A report whose body trickles in is cut at --body-timeout, over HTTP/1.1
// and HTTP/2, and the connection does not stay open.
func TestHostileSlowBodyIsCut(t *testing.T) {
	ts := startServe(t, "--body-timeout", "500ms")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.h3, "https://"))

	t.Run("http/1.1", func(t *testing.T) {
		conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		fmt.Fprintf(conn, "POST /beacon HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n\r\n{\"v\":1,")
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("slow body still open after %v (response %v, %v)", el, resp, err)
		}
		if err == nil && resp.StatusCode < 400 {
			t.Errorf("slow body answered %d", resp.StatusCode)
		}
	})

	t.Run("http/2", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		go pw.Write([]byte(`{"v":1,`)) // then nothing more
		req, _ := http.NewRequest("POST", ts.h3+"/beacon", pr)
		req.ContentLength = 20
		c := insecureClient()
		c.Timeout = 10 * time.Second
		start := time.Now()
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("slow HTTP/2 body still open after %v (%v)", el, err)
		}
		if err == nil && (resp.ProtoMajor != 2 || resp.StatusCode < 400) {
			t.Errorf("slow HTTP/2 body: %s %d, want an HTTP/2 error status or a reset", resp.Proto, resp.StatusCode)
		}
	})
}

// The agent WebSocket is rate-limited per connection and wrong agent tokens
// are throttled per address; /metrics is not on the public origins; CORS
// never grants credentials; oversized reports are refused.
func TestHostileAgentsMetricsCORSAndSize(t *testing.T) {
	const token = "agent-0123456789abcdef0123456789abcdef"
	ts := startServe(t, "--agent-token", token, "--agent-rate-limit", "2", "--allow-origins", "https://shop.example")
	c := insecureClient()

	t.Run("websocket rate", func(t *testing.T) {
		conn, status, err := wsDial(ts.h3, "/ingest/ws", http.Header{"Authorization": {"Bearer " + token}})
		if err != nil {
			t.Fatalf("agent dial: %d %v", status, err)
		}
		defer conn.Close()
		for i := range 6 {
			_, body := syntheticReport("shop")
			conn.WriteMessage(websocket.TextMessage, []byte(`{"id":"m`+strconv.Itoa(i)+`","report":`+string(body)+`}`))
		}
		limited := 0
		conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		for range 6 {
			var ack struct {
				ID, Reason string
				OK         bool
			}
			if err := conn.ReadJSON(&ack); err != nil {
				t.Fatal(err)
			}
			if !ack.OK && ack.Reason == "rate_limited" {
				limited++
			}
		}
		if limited != 4 {
			t.Errorf("6 reports at once at --agent-rate-limit 2: %d rate limited, want 4", limited)
		}
	})

	t.Run("wrong tokens", func(t *testing.T) {
		for range access.FailureBurst {
			if _, status, _ := wsDial(ts.h3, "/ingest/ws", http.Header{"Authorization": {"Bearer guess-0123456789abcdef0123456789"}}); status != 401 {
				t.Fatalf("wrong agent token: %d, want 401", status)
			}
		}
		if _, status, _ := wsDial(ts.h3, "/ingest/ws", http.Header{"Authorization": {"Bearer " + token}}); status != 429 {
			t.Errorf("right token after %d wrong ones: %d, want 429", access.FailureBurst, status)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		for _, origin := range []string{ts.h3, ts.h2} {
			if code, _, body := get(t, c, origin+"/metrics"); code != 404 || strings.Contains(body, "h3rum_") {
				t.Errorf("%s/metrics: %d, want 404", origin, code)
			}
		}
		m := ts.srv.MetricsAddrPort()
		if !m.Addr().IsLoopback() {
			t.Errorf("metrics listen on %v, want loopback", m)
		}
		code, _, body := get(t, http.DefaultClient, "http://"+m.String()+"/metrics")
		if code != 200 || !strings.Contains(body, "h3rum_ingest_rejected_total") {
			t.Errorf("metrics listener: %d, %d bytes, want 200 with h3rum metrics", code, len(body))
		}
	})

	t.Run("cors", func(t *testing.T) {
		for _, tc := range []struct{ method, path string }{
			{"POST", "/beacon"}, {"OPTIONS", "/beacon"}, {"GET", "/probe"}, {"OPTIONS", "/probe"},
		} {
			// A fresh request each time: the transport may still be sending
			// the previous one's body when its answer arrives.
			send := func(origin string) *http.Response {
				_, body := syntheticReport("shop")
				req, _ := http.NewRequest(tc.method, ts.h3+tc.path, bytes.NewReader(body))
				req.Header.Set("Origin", origin)
				req.Header.Set("Access-Control-Request-Method", "POST")
				req.Header.Set("Cookie", "session=1")
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp
			}
			resp := send("https://shop.example")
			if resp.Header.Get("Access-Control-Allow-Origin") != "https://shop.example" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Errorf("%s %s: Allow-Origin %q, Allow-Credentials %q; want the page's origin and no credentials",
					tc.method, tc.path, resp.Header.Get("Access-Control-Allow-Origin"), resp.Header.Get("Access-Control-Allow-Credentials"))
			}
			resp = send("https://evil.example")
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("%s %s from another origin: Allow-Origin %q, want none", tc.method, tc.path, got)
			}
		}
	})

	t.Run("size", func(t *testing.T) {
		req, _ := http.NewRequest("POST", ts.h3+"/beacon", bytes.NewReader(bytes.Repeat([]byte(" "), 1<<20)))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.HasPrefix(string(b), "too_large: ") {
			t.Errorf("1 MiB report: %d %q, want 413 too_large", resp.StatusCode, b)
		}
	})
}

// The configured script's query is written into a script the collector
// serves from its own origin: whatever a client puts there must be refused
// with the reason or end up as one JSON object in it, never as code.
func TestHostileScriptQuery(t *testing.T) {
	ts := startServe(t, "--role", "probe", "--clickhouse", "clickhouse://127.0.0.1:1/none")
	c := insecureClient()
	const ok = "h3=https://h3.example.com&h2=https://h2.example.com"
	for _, tc := range []struct {
		name, query string
		status      int
		reason      string
	}{
		{"quote out of an origin", `h3=https://h3.example.com%22%3Balert(1)%2F%2F&h2=https://h2.example.com`, 400, "parameter h3="},
		{"script URL as an origin", "h3=javascript:alert(1)&h2=https://h2.example.com", 400, "want an origin"},
		{"markup in the site", ok + "&site=%3C%2Fscript%3E", 400, "parameter site="},
		{"line separator in the site", ok + "&site=a%E2%80%A8b", 400, "parameter site="},
		{"repeated parameter", ok + "&site=a&site=b", 400, "site given 2 times"},
		{"unknown parameter", ok + "&onload=alert(1)", 400, `unknown parameter "onload"`},
		{"long query", ok + "&site=" + strings.Repeat("a", 4<<10), 414, "h3rum.js: query longer than 1024 bytes"},
		// The server's header limit answers before the handler does.
		{"huge query", ok + "&site=" + strings.Repeat("a", 64<<10), 431, "request header fields too large"},
	} {
		code, hdr, body := get(t, c, ts.h3+"/h3rum.js?"+tc.query)
		if code != tc.status || (code != 431 && !strings.HasPrefix(body, "h3rum.js: ")) || !strings.Contains(body, tc.reason) ||
			strings.Count(body, "\n") != 1 || strings.HasPrefix(hdr.Get("Content-Type"), "text/javascript") {
			t.Errorf("%s: %d %q (%s), want %d and one line with %q", tc.name, code, trimBody(body), hdr.Get("Content-Type"), tc.status, tc.reason)
		}
	}
	// A valid one: the script, with the configuration as one object.
	code, hdr, body := get(t, c, ts.h3+"/h3rum.js?"+ok+"&site=shop&sample=0.5")
	if code != 200 || hdr.Get("Content-Type") != "text/javascript; charset=utf-8" || hdr.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(body, `{"h2":"https://h2.example.com","h3":"https://h3.example.com","sample":"0.5","site":"shop"}`) {
		t.Errorf("configured script: %d %s, body %q", code, hdr.Get("Content-Type"), trimBody(body))
	}
}
