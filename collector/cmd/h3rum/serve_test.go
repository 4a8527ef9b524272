package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/collector/origin"
	"github.com/h3rum/h3rum/collector/serve"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/local"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

// testServe runs `serve` in-process with args (on loopback, free ports,
// a fresh data dir and its own ClickHouse unless args say otherwise) and
// returns once it listens. Cleanup stops it and checks it exited cleanly.
type testServe struct {
	cfg     *serveFlags
	srv     *origin.Server
	local   *local.Server // the managed ClickHouse, if any
	dataDir string
	h3, h2  string // https://localhost:port
}

func startServe(t testing.TB, args ...string) *testServe {
	t.Helper()
	dataDir := t.TempDir()
	base := []string{"--addr", "localhost:0", "--h2-addr", "localhost:0", "--data-dir", dataDir,
		"--flush-interval", "200ms", "--rate-limit", "-1", "--shutdown-timeout", "5s", "--metrics-addr", "localhost:0"}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c serveFlags
	c.register(fs)
	if err := cli.Parse(fs, append(base, args...), io.Discard); err != nil {
		t.Fatalf("flags: %v", err)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	ready := make(chan *serve.Started, 1)
	c.Ready = func(s *serve.Started) { ready <- s }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c.Logger = log
	go func() { done <- serve.Run(ctx, &c.Config) }()
	ts := &testServe{cfg: &c, dataDir: dataDir}
	select {
	case s := <-ready:
		ts.srv, ts.local = s.Origin, s.Local
	case err := <-done:
		cancel()
		t.Fatalf("serve exited before it was ready: %v", err)
	case <-time.After(90 * time.Second):
		cancel()
		t.Fatal("serve not ready within 90 s")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop within 60 s")
		}
	})
	h3, h2 := ts.srv.Addrs()
	ts.h3 = fmt.Sprintf("https://localhost:%d", h3.Port())
	ts.h2 = fmt.Sprintf("https://localhost:%d", h2.Port())
	return ts
}

// testWriter sends log lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// conn opens the ClickHouse server this serve manages.
func (ts *testServe) conn(t *testing.T) driver.Conn {
	t.Helper()
	return openLocal(t, ts.dataDir)
}

func openLocal(t *testing.T, dataDir string) driver.Conn {
	t.Helper()
	conn, err := store.OpenLocal(context.Background(), filepath.Join(dataDir, "clickhouse"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// insecureClient speaks HTTP/2 to the development certificate.
func insecureClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
		ForceAttemptHTTP2: true,
		MaxConnsPerHost:   16,
	}}
}

// syntheticReport is a complete, valid report (2+1 warm-up, 5+5
// parallel) for load tests, with a fresh run id.
func syntheticReport(site string) (id string, body []byte) {
	var b [16]byte
	rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	return id, beacontest.Report(beacontest.Run{ID: id, Site: site, Warmup: 2})
}

// browserUA is a desktop Chrome's User-Agent: reports with it are not bots.
const browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"

func postBeacon(ctx context.Context, c *http.Client, origin string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", origin+"/beacon", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("User-Agent", browserUA)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitFor polls cond every 100 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v (last error: %v)", what, d, last)
}

func TestServeBeaconReachesClickHouse(t *testing.T) {
	ts := startServe(t)
	c := insecureClient()
	id, body := syntheticReport("shop")
	code, err := postBeacon(context.Background(), c, ts.h3, body)
	if err != nil || code != http.StatusNoContent {
		t.Fatalf("POST /beacon = %d, %v; want 204", code, err)
	}
	conn := ts.conn(t)
	var n uint64
	waitFor(t, 20*time.Second, "13 rows in ClickHouse", func() (bool, error) {
		err := conn.QueryRow(context.Background(),
			"SELECT count() FROM samples WHERE run_id = toUUID(?)", uuidString(id)).Scan(&n)
		return n == 13, err
	})
	// Bad input is refused with a reason and nothing is stored for it.
	for _, tc := range []struct {
		body string
		code int
	}{
		{`{"v":2}`, http.StatusBadRequest},
		{`not json`, http.StatusBadRequest},
	} {
		code, err := postBeacon(context.Background(), c, ts.h3, []byte(tc.body))
		if err != nil || code != tc.code {
			t.Errorf("POST /beacon %q = %d, %v; want %d", tc.body, code, err, tc.code)
		}
	}
}

func uuidString(hexID string) string {
	return hexID[0:8] + "-" + hexID[8:12] + "-" + hexID[12:16] + "-" + hexID[16:20] + "-" + hexID[20:32]
}

func TestReportCommandAgainstServe(t *testing.T) {
	ts := startServe(t)
	c := insecureClient()
	const runs = 3
	for range runs {
		if code, err := postBeacon(context.Background(), c, ts.h3, mustReport("shop")); err != nil || code != 204 {
			t.Fatalf("POST /beacon = %d, %v", code, err)
		}
	}
	conn := ts.conn(t)
	// The runs table's rows, written by its view in the same insert, are
	// committed just after the samples': wait for both, as the report
	// reads both.
	waitFor(t, 20*time.Second, "rows in ClickHouse", func() (bool, error) {
		var n, r uint64
		err := conn.QueryRow(context.Background(), "SELECT (SELECT count() FROM samples), (SELECT count() FROM runs)").Scan(&n, &r)
		return n == 13*runs && r == runs, err
	})
	// `report` finds the server `serve` manages through --data-dir.
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"report", "--data-dir", ts.dataDir, "--since", "1h", "--by", "none", "--format", "json", "--raw"}, &out, &errOut)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, errOut.String())
	}
	type stats struct {
		Runs    int `json:"runs"`
		Samples int `json:"samples"`
	}
	var rep struct {
		Groups []struct {
			H2 *stats `json:"h2"`
			H3 *stats `json:"h3"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out.String())
	}
	want := stats{Runs: runs, Samples: 5 * runs}
	if len(rep.Groups) != 1 || rep.Groups[0].H2 == nil || rep.Groups[0].H3 == nil ||
		*rep.Groups[0].H2 != want || *rep.Groups[0].H3 != want {
		t.Errorf("report groups: want one group with h2 and h3 each %+v\n%s", want, out.String())
	}
	// The table names both protocols; bad flags exit 2 with one line.
	out.Reset()
	if err := run(context.Background(), []string{"report", "--data-dir", ts.dataDir, "--since", "1h"}, &out, &errOut); err != nil {
		t.Fatalf("report table: %v", err)
	}
	if !strings.Contains(out.String(), "h3") || !strings.Contains(out.String(), "h2") {
		t.Errorf("table lacks protocols:\n%s", out.String())
	}
	for _, args := range [][]string{{"--by", "planet"}, {"--since", "soon"}, {"--since", "1h", "--until", "2h"}, {"--format", "xml"}} {
		errOut.Reset()
		err := run(context.Background(), append([]string{"report", "--data-dir", ts.dataDir}, args...), io.Discard, &errOut)
		if code := exitCode(err, &errOut); code != 2 || strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
			t.Errorf("report %v: exit %d, stderr %q; want 2 and one line", args, code, errOut.String())
		}
	}
}

func mustReport(site string) []byte {
	_, b := syntheticReport(site)
	return b
}

// TestLiveFeedAndReportAPI: a run accepted by /beacon is streamed to a
// WebSocket client of /api/live and counted by /api/report, both served by
// the same origins (open without a token: --open-reports on loopback).
func TestLiveFeedAndReportAPI(t *testing.T) {
	ts := startServe(t, "--open-reports")
	d := websocket.Dialer{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, HandshakeTimeout: 5 * time.Second}
	wsURL := "wss" + strings.TrimPrefix(ts.h3, "https") + "/api/live"
	ws, resp, err := d.Dial(wsURL, http.Header{"Origin": {ts.h3}})
	if err != nil {
		t.Fatalf("dialing %s: %v (%v)", wsURL, err, resp)
	}
	defer ws.Close()

	id, body := syntheticReport("shop")
	if code, err := postBeacon(context.Background(), insecureClient(), ts.h3, body); err != nil || code != 204 {
		t.Fatalf("POST /beacon = %d, %v", code, err)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatalf("reading the live feed: %v", err)
	}
	// beacontest's parallel batches (2 warm-ups) have medians 35.5 ms (h3) and 40.5 ms (h2).
	var live struct {
		Site string  `json:"site"`
		H2   float64 `json:"h2_median_ms"`
		H3   float64 `json:"h3_median_ms"`
	}
	if err := json.Unmarshal(msg, &live); err != nil || live.Site != "shop" || live.H2 != 40.5 || live.H3 != 35.5 {
		t.Errorf("live message for run %s: %s (%v); want site shop, medians h2 40.5, h3 35.5", id, msg, err)
	}

	c := insecureClient()
	waitFor(t, 20*time.Second, "the run in /api/report", func() (bool, error) {
		resp, err := c.Get(ts.h3 + "/api/report?since=1h&by=none&source=raw")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		var rep struct {
			Groups []struct {
				Runs int `json:"runs"`
			} `json:"groups"`
		}
		if resp.StatusCode != 200 {
			return false, fmt.Errorf("status %d", resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			return false, err
		}
		return len(rep.Groups) == 1 && rep.Groups[0].Runs == 1, nil
	})
	resp, err = c.Get(ts.h3 + "/api/report?by=planet")
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /api/report?by=planet = %v, %v; want 400", resp.StatusCode, err)
	}
	resp, err = c.Get(ts.h3 + "/dashboard")
	if err != nil || resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("GET /dashboard = %v, %v", resp.StatusCode, err)
	}
}

// A report token closes the report routes to requests without it.
func TestReportTokenRequired(t *testing.T) {
	const token = "s3cret-0123456789abcdef0123456789"
	file := filepath.Join(t.TempDir(), "report-token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	// The flag, the way the README's examples and the deploy files give
	// it: as a file (its trailing newline is not part of the token).
	ts := startServe(t, "--report-token-file", file)
	c := insecureClient()
	for _, tc := range []struct {
		auth string
		want int
	}{{"", http.StatusUnauthorized}, {"Bearer wrong", http.StatusUnauthorized}, {"Bearer " + token, http.StatusOK}} {
		req, _ := http.NewRequest("GET", ts.h3+"/api/report?since=1h", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}

// A second serve on the same data dir is refused before it touches the
// first one's spool or ClickHouse, which keeps serving.
func TestSecondServeOnSameDataDirRefused(t *testing.T) {
	ts := startServe(t)
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--addr", "localhost:0", "--h2-addr", "localhost:0", "--data-dir", ts.dataDir}, io.Discard, &errOut)
	if err == nil || !strings.Contains(err.Error(), "another h3rum serve") {
		t.Fatalf("second serve: %v, want a refusal naming the other serve", err)
	}
	if code, err := postBeacon(context.Background(), insecureClient(), ts.h3, mustReport("shop")); err != nil || code != 204 {
		t.Errorf("first serve after the refused second: POST /beacon = %d, %v", code, err)
	}
}

// When the managed ClickHouse dies, serve keeps acknowledging reports into
// the spool, restarts it, says so on /healthz and /metrics, and drains the
// spool once it is back.
func TestServeRestartsLocalClickHouse(t *testing.T) {
	ts := startServe(t)
	c := insecureClient()
	local := ts.local
	if local == nil || !local.Up() {
		t.Fatal("serve runs no managed ClickHouse")
	}
	if err := syscall.Kill(local.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	id, body := syntheticReport("restart")
	if code, err := postBeacon(context.Background(), c, ts.h3, body); err != nil || code != http.StatusNoContent {
		t.Fatalf("POST /beacon with ClickHouse killed = %d, %v; want 204 (spooled)", code, err)
	}
	waitFor(t, 60*time.Second, "the managed ClickHouse restarted", func() (bool, error) {
		return local.Restarts() == 1 && local.Up(), nil
	})
	if code, _, b := get(t, c, ts.h3+"/healthz"); code != 200 || !strings.Contains(b, "clickhouse: up") {
		t.Errorf("/healthz after the restart: %d %q", code, b)
	}
	_, _, b := get(t, http.DefaultClient, "http://"+ts.srv.MetricsAddrPort().String()+"/metrics")
	if !strings.Contains(b, "h3rum_local_clickhouse_restarts_total 1") || !strings.Contains(b, "h3rum_local_clickhouse_up 1") {
		t.Errorf("metrics do not show the restart")
	}
	conn := ts.conn(t)
	waitFor(t, 60*time.Second, "the spooled report in ClickHouse", func() (bool, error) {
		var n uint64
		err := conn.QueryRow(context.Background(), "SELECT count() FROM samples WHERE run_id = toUUID(?)", uuidString(id)).Scan(&n)
		return n == 13, err
	})
}

// With --clickhouse naming a server that does not answer, serve starts
// anyway: the probe serves, reports are acknowledged into the spool,
// /healthz says so, and once the server answers the schema is migrated and
// the spool drained.
func TestServeStartsWithoutClickHouse(t *testing.T) {
	l := storetest.Private(t)
	dsn := l.DSNFor("late")
	if err := l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := startServe(t, "--clickhouse", dsn)
	c := insecureClient()
	if resp, err := c.Get(ts.h3 + "/probe"); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("probe without ClickHouse: %v %v", resp, err)
	}
	id, body := syntheticReport("late")
	if code, err := postBeacon(context.Background(), c, ts.h3, body); err != nil || code != http.StatusNoContent {
		t.Fatalf("POST /beacon without ClickHouse = %d, %v; want 204 (spooled)", code, err)
	}
	health := func() string {
		_, _, b := get(t, c, ts.h3+"/healthz")
		return b
	}
	if h := health(); !strings.Contains(h, "clickhouse: not ready") {
		t.Errorf("/healthz without ClickHouse: %q", h)
	}
	if err := l.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	conn, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	waitFor(t, 60*time.Second, "the spooled report in ClickHouse", func() (bool, error) {
		var n uint64
		err := conn.QueryRow(context.Background(), "SELECT count() FROM samples WHERE run_id = toUUID(?)", uuidString(id)).Scan(&n)
		return n == 13, err
	})
	if h := health(); !strings.Contains(h, "clickhouse: up") {
		t.Errorf("/healthz once ClickHouse answers: %q", h)
	}
}

// --role probe serves the origins, /probe and the script without any
// ClickHouse; --role ingest takes reports without serving /probe.
func TestServeRoles(t *testing.T) {
	c := insecureClient()
	status := func(method, url string, body []byte) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, url, bytes.NewReader(body))
		req.Header.Set("User-Agent", browserUA)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	// Fixed ports, so that the demo page is configured.
	probe := startServe(t, "--role", "probe", "--ingest-url", "https://ingest.example", "--clickhouse", "clickhouse://127.0.0.1:1/none",
		"--addr", "localhost:"+freePort(t), "--h2-addr", "localhost:"+freePort(t))
	if probe.local != nil {
		t.Error("--role probe started a ClickHouse")
	}
	_, report := syntheticReport("shop")
	for _, tc := range []struct {
		method, path string
		body         []byte
		want         int
		has          string
	}{
		{"GET", "/probe", nil, 204, ""},
		{"GET", "/h3rum.js", nil, 200, ""},
		{"GET", "/demo", nil, 200, `endpoint=https%3A%2F%2Fingest.example`},
		{"POST", "/beacon", report, 404, "--role probe"},
		{"GET", "/api/report", nil, 404, ""},
		{"GET", "/healthz", nil, 200, "ok"},
	} {
		for _, origin := range []string{probe.h3, probe.h2} {
			if tc.path == "/demo" && origin == probe.h2 {
				continue
			}
			if code, body := status(tc.method, origin+tc.path, tc.body); code != tc.want || !strings.Contains(body, tc.has) {
				t.Errorf("probe role %s %s%s: %d %q, want %d containing %q", tc.method, origin, tc.path, code, trimBody(body), tc.want, tc.has)
			}
		}
	}

	ingest := startServe(t, "--role", "ingest")
	id, report := syntheticReport("shop")
	if code, body := status("GET", ingest.h3+"/probe", nil); code != 404 {
		t.Errorf("ingest role /probe: %d %q, want 404", code, trimBody(body))
	}
	if code, body := status("POST", ingest.h3+"/beacon", report); code != 204 {
		t.Fatalf("ingest role POST /beacon: %d %q", code, body)
	}
	conn := ingest.conn(t)
	waitFor(t, 20*time.Second, "the report in ClickHouse", func() (bool, error) {
		var n uint64
		err := conn.QueryRow(context.Background(), "SELECT count() FROM samples WHERE run_id = toUUID(?)", uuidString(id)).Scan(&n)
		return n == 13, err
	})
}

// freePort returns a port free on loopback for TCP and UDP just now.
func freePort(t *testing.T) string {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			pc.Close()
			return strconv.Itoa(port)
		}
	}
	t.Fatal("no free port")
	return ""
}

func trimBody(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// Each token is one setting with four sources: the flag, its H3RUM_*
// variable, and a file named by the -file flag or its variable.
func TestTokenSources(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report-token", "agent-token"} {
		for _, src := range []struct {
			how  string
			args []string
			env  [2]string
		}{
			{"flag", []string{"--" + name, secret}, [2]string{}},
			{"environment", nil, [2]string{cli.EnvName(name), secret}},
			{"file flag", []string{"--" + name + "-file", file}, [2]string{}},
			{"file from the environment", nil, [2]string{cli.EnvName(name + "-file"), file}},
		} {
			t.Run(name+" "+src.how, func(t *testing.T) {
				if src.env[0] != "" {
					t.Setenv(src.env[0], src.env[1])
				}
				fs := flag.NewFlagSet("serve", flag.ContinueOnError)
				var c serveFlags
				c.register(fs)
				if err := cli.Parse(fs, append([]string{"--addr", "localhost:0", "--h2-addr", "localhost:0"}, src.args...), io.Discard); err != nil {
					t.Fatal(err)
				}
				if err := c.validate(); err != nil {
					t.Fatal(err)
				}
				got := map[string]string{"report-token": c.Queries.Token, "agent-token": c.Ingest.AgentToken}[name]
				if got != secret {
					t.Errorf("--%s from the %s = %q, want %q", name, src.how, got, secret)
				}
			})
		}
	}
}
