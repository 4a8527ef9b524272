package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// nelUploadBody is an upload as Chromium sends it, n 404 reports about
// origin and one report of another type.
func nelUploadBody(origin string, n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		fmt.Fprintf(&b, `{"age":%d,"body":{"elapsed_time":7,"method":"GET","phase":"application","protocol":"h2","referrer":"",`+
			`"sampling_fraction":1.0,"server_ip":"127.0.0.1","status_code":404,"type":"http.error"},"type":"network-error",`+
			`"url":"%s/hostile?n=%d","user_agent":"UA"},`, i, origin, i)
	}
	b.WriteString(`{"age":0,"body":{"id":"x"},"type":"deprecation","url":"https://shop.example/","user_agent":"UA"}]`)
	return []byte(b.String())
}

// POST /reports is public: attacks on it as a hostile client would try
// them — huge, slow, mistyped and malformed bodies, floods behind spoofed
// forwarding headers, reports about other sites — each answered with a
// status and a one-line reason, and nothing stored that should not be.
func TestHostileReports(t *testing.T) {
	ts := startServe(t, "--trusted-proxies", "127.0.0.1", "--rate-limit", "1", "--body-timeout", "500ms", "--nel-hosts", "localhost")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.h3, "https://"))
	viaProxy := "https://127.0.0.1:" + port // the trusted proxy's address
	direct := "https://[::1]:" + port       // an untrusted peer
	c := insecureClient()
	var client int
	// post sends an upload as a fresh client behind the proxy unless hdr
	// says otherwise, and returns the status and the body.
	post := func(base string, body io.Reader, length int64, hdr ...string) (int, string) {
		t.Helper()
		client++
		req, _ := http.NewRequest("POST", base+"/reports", body)
		req.ContentLength = length
		req.Header.Set("Content-Type", "application/reports+json")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", client))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("POST /reports: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	valid := nelUploadBody(ts.h3, 2)
	huge := bytes.Repeat([]byte(" "), 1<<20)
	for _, tc := range []struct {
		name   string
		body   []byte
		length int64 // -1: chunked, no Content-Length
		hdr    []string
		status int
		reason string
	}{
		{"huge body", huge, int64(len(huge)), nil, 413, "too_large"},
		{"huge chunked body", huge, -1, nil, 413, "too_large"},
		{"wrong content type", valid, int64(len(valid)), []string{"Content-Type", "text/plain"}, 415, "content_type"},
		{"bad json", []byte(`[{"type":"network-error",`), 25, nil, 400, "decode_json"},
		{"deep json", bytes.Repeat([]byte("["), 30<<10), 30 << 10, nil, 400, "decode_json"},
		{"too many reports", nelUploadBody(ts.h3, 101), int64(len(nelUploadBody(ts.h3, 101))), nil, 400, "decode_too_many"},
		{"wrong field type", bytes.Replace(valid, []byte(`"status_code":404`), []byte(`"status_code":"404"`), 1), -1, nil, 400, "decode_field"},
		{"another site's origin", valid, int64(len(valid)), []string{"Origin", "https://evil.example"}, 403, "origin_not_allowed"},
	} {
		code, body := post(viaProxy, bytes.NewReader(tc.body), tc.length, tc.hdr...)
		if code != tc.status || !strings.HasPrefix(body, tc.reason+": ") || strings.Count(body, "\n") != 1 {
			t.Errorf("%s: %d %q, want %d and one line starting %q", tc.name, code, body, tc.status, tc.reason)
		}
	}

	// A flood from one address, rotating Forwarded and X-Real-IP, which are
	// never believed: one upload gets through, the rest are refused before
	// their bodies are read. The same from an untrusted peer forging
	// X-Forwarded-For.
	for _, base := range []string{viaProxy, direct} {
		codes := map[int]int{}
		for i := range 20 {
			code, _ := post(base, bytes.NewReader(valid), int64(len(valid)), "X-Forwarded-For", "198.51.100.250",
				"Forwarded", fmt.Sprintf("for=192.0.2.%d", i), "X-Real-IP", fmt.Sprintf("192.0.2.%d", i))
			codes[code]++
		}
		if codes[204] != 1 || codes[429] != 19 {
			t.Errorf("20 uploads from one client via %s at --rate-limit 1: %v, want 1×204 19×429", base, codes)
		}
	}

	// A body that trickles in is cut at --body-timeout.
	conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fmt.Fprintf(conn, "POST /reports HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/reports+json\r\nX-Forwarded-For: 198.51.100.251\r\nContent-Length: 400\r\n\r\n[{\"age\":")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	conn.Close()
	if el := time.Since(start); el > 5*time.Second || err == nil && resp.StatusCode < 400 {
		t.Errorf("slow upload: answered after %v (%v, %v), want cut within seconds with an error status", el, resp, err)
	}

	// Reports about hosts this collector does not serve are dropped: an
	// upload of only those is acknowledged and stores nothing; the two
	// accepted uploads above (one per flood) stored two reports each.
	if code, body := post(viaProxy, bytes.NewReader(nelUploadBody("https://evil.example", 3)), -1); code != 204 {
		t.Errorf("upload about another host: %d %q, want 204", code, body)
	}
	if code, _ := post(viaProxy, bytes.NewReader(valid), -1); code != 204 {
		t.Fatalf("valid upload: %d", code)
	}
	ch := ts.conn(t)
	waitFor(t, 20*time.Second, "the accepted uploads in ClickHouse", func() (bool, error) {
		var n uint64
		err := ch.QueryRow(context.Background(), "SELECT count() FROM nel_reports").Scan(&n)
		return n == 6, err
	})
	var other uint64
	if err := ch.QueryRow(context.Background(), "SELECT count() FROM nel_reports WHERE origin != ?", ts.h3).Scan(&other); err != nil || other != 0 {
		t.Errorf("%d rows about other origins (%v)", other, err)
	}
	time.Sleep(500 * time.Millisecond) // the batcher's next flush would add any stray row
	var n uint64
	if err := ch.QueryRow(context.Background(), "SELECT count() FROM nel_reports").Scan(&n); err != nil || n != 6 {
		t.Errorf("%d NEL rows, want 6 (%v)", n, err)
	}
}
