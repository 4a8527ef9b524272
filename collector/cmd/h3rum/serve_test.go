package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/collector"
	"github.com/h3rum/h3rum/ingest"
)

// testServe runs `serve` in-process with args (on loopback, free ports,
// a fresh data dir and its own ClickHouse unless args say otherwise) and
// returns once it listens. Cleanup stops it and checks it exited cleanly.
type testServe struct {
	srv     *collector.Server
	dataDir string
	h3, h2  string // https://localhost:port
}

func startServe(t *testing.T, args ...string) *testServe {
	t.Helper()
	dataDir := t.TempDir()
	base := []string{"--addr", "localhost:0", "--h2-addr", "localhost:0", "--data-dir", dataDir,
		"--flush-interval", "200ms", "--rate-limit", "0", "--shutdown-timeout", "5s"}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c serveConfig
	c.register(fs)
	if err := parseFlags(fs, append(base, args...), io.Discard); err != nil {
		t.Fatalf("flags: %v", err)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	ready := make(chan *collector.Server, 1)
	c.ready = func(s *collector.Server) { ready <- s }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { done <- serve(ctx, &c, nil, log, io.Discard) }()
	ts := &testServe{dataDir: dataDir}
	select {
	case ts.srv = <-ready:
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
type testWriter struct{ t *testing.T }

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
	dsn, err := ingest.ReadLocalDSN(filepath.Join(dataDir, "clickhouse"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ingest.Open(context.Background(), dsn)
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

// syntheticReport is a complete, valid v1 report (2+1 warm-up, 5+5
// parallel) for load tests, with a fresh run id.
func syntheticReport(site string) (id string, body []byte) {
	var b [16]byte
	rand.Read(b[:])
	id = hex.EncodeToString(b[:])
	var s []string
	add := func(q int, ph, w string) {
		s = append(s, fmt.Sprintf(`{"q":%d,"ph":"%s","w":"%s","g":"%s","st":%d,"d":%d.5,"dns":0,"con":0,"tls":0,"tf":3.2,"dl":0.1,"r":true,"ts":120,"sv":{"proto":"%s","app":0.02,"rtt":1.1,"cid":"c%d","creq":%d,"resumed":0,"early":0}}`,
			q, ph, w, w, q*10, 20+q, w, q%3, q+1))
	}
	add(0, "w", "h3")
	add(1, "w", "h3")
	add(2, "w", "h2")
	for q := 3; q < 8; q++ {
		add(q, "p", "h3")
	}
	for q := 8; q < 13; q++ {
		add(q, "p", "h2")
	}
	body = fmt.Appendf(nil, `{"v":1,"id":"%s","site":"%s","o":"https://shop.example","bv":"1.0.0","p":false,"mt":0.5,"par":{"n":5,"w":2,"b":0,"ord":"h3first","trg":"load"},"c":{"br":[["Chromium","156"]],"pf":"Linux","mb":false,"et":"4g","rtt":50,"dl":10,"wd":false},"s":[%s]}`,
		id, site, strings.Join(s, ","))
	return id, body
}

func postBeacon(ctx context.Context, c *http.Client, origin string, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", origin+"/beacon", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "text/plain")
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

var errNotYet = errors.New("not yet")
