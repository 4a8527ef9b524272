package main

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/beacontest"
)

// What the collector believes, tried as a hostile client would through the
// real serve: proxies by one list for the origin and ingest, the agent
// token from its header only, report options within their range, and a
// report the decoder refuses counted by the field at fault.
func TestHostileTrustAndRanges(t *testing.T) {
	const (
		agentToken  = "agent-0123456789abcdef0123456789abcdef"
		reportToken = "report-0123456789abcdef0123456789abcdef"
	)
	// 127.0.0.1, written as the IPv4-mapped prefix a dual-stack
	// configuration might use.
	ts := startServe(t, "--trusted-proxies", "::ffff:127.0.0.0/104", "--rate-limit", "1", "--max-conns-per-addr", "2",
		"--agent-token", agentToken, "--report-token", reportToken)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.h3, "https://"))
	viaProxy := "https://127.0.0.1:" + port
	c := insecureClient()
	post := func(body []byte, hdr ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", viaProxy+"/beacon", bytes.NewReader(body))
		req.Header.Set("User-Agent", browserUA)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST /beacon: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	t.Run("one list of trusted proxies", func(t *testing.T) {
		// The origin does not cap the proxy's connections…
		for i := range 4 {
			conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
			if err != nil {
				t.Fatalf("connection %d from the trusted proxy at --max-conns-per-addr 2: %v", i+1, err)
			}
			defer conn.Close()
		}
		// …and ingest limits the clients behind it one by one.
		var codes []int
		for _, xff := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.1"} {
			_, body := syntheticReport("shop")
			code, _ := post(body, "X-Forwarded-For", xff)
			codes = append(codes, code)
		}
		if codes[0] != 204 || codes[1] != 204 || codes[2] != 429 {
			t.Errorf("two clients, then the first again, via the proxy at --rate-limit 1: %v, want [204 204 429]", codes)
		}
	})

	t.Run("agent token in the URL", func(t *testing.T) {
		conn, status, _ := wsDial(viaProxy, "/ingest/ws?token="+agentToken, nil)
		if conn != nil {
			conn.Close()
		}
		if status != http.StatusUnauthorized {
			t.Errorf("/ingest/ws?token=<the agent token>: %d, want 401 and no upgrade", status)
		}
		conn, status, err := wsDial(viaProxy, "/ingest/ws", http.Header{"Authorization": {"Bearer " + agentToken}})
		if err != nil {
			t.Fatalf("the agent token in its header: %d %v", status, err)
		}
		conn.Close()
	})

	t.Run("effect-ms out of range", func(t *testing.T) {
		for _, v := range []string{"1e-300", "10001", "NaN"} {
			code, _, body := get(t, c, viaProxy+"/api/report?effect-ms="+v, "Authorization", "Bearer "+reportToken)
			if code != http.StatusBadRequest || !strings.Contains(body, "effect-ms") {
				t.Errorf("/api/report?effect-ms=%s: %d %q, want 400 naming effect-ms", v, code, body)
			}
		}
	})

	t.Run("refusals by field", func(t *testing.T) {
		report := beacontest.Report(beacontest.Run{ID: "0123456789abcdef0123456789abcdef", Site: "shop", Warmup: 2})
		negative := regexp.MustCompile(`"d":[0-9.]+`).ReplaceAll(report, []byte(`"d":-2981.9`))
		if code, body := post(negative, "X-Forwarded-For", "198.51.100.3"); code != 400 || !strings.Contains(body, "-2981.9") {
			t.Fatalf("a report with headless Chromium's negative duration: %d %q, want 400", code, body)
		}
		m := ts.srv.MetricsAddrPort()
		deadline := time.Now().Add(5 * time.Second)
		for {
			_, _, body := get(t, http.DefaultClient, "http://"+m.String()+"/metrics")
			if strings.Contains(body, `h3rum_ingest_rejected_fields_total{field="s.d"} 1`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("metrics without h3rum_ingest_rejected_fields_total{field=\"s.d\"} 1:\n%s", grepLines(body, "rejected_fields"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			b.WriteString(l)
		}
	}
	return b.String()
}
