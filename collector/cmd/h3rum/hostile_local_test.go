package main

// Attacks by a user or program on the collector's own machine: a
// pass-through proxy in front of a loopback-only collector, and (below)
// other local users against the managed ClickHouse and the data dir.

import (
	"net/http"
	"strings"
	"testing"
)

// A collector on loopback without a report token and without
// --open-reports does not answer its reports to a loopback peer that says
// Host: localhost, which is all a same-host pass-through proxy (HAProxy in
// TCP mode, ssh -L) relays from anyone: open mode is never inferred from
// where a request comes from. The refusal says how to open them.
func TestHostileLoopbackPeerWithoutOpenReportsIsRefused(t *testing.T) {
	ts := startServe(t)
	c := insecureClient()
	for _, origin := range []string{ts.h3, ts.h2} {
		port := origin[strings.LastIndex(origin, ":")+1:]
		for _, path := range []string{"/api/report?since=1h", "/dashboard"} {
			for _, host := range []string{"localhost", "localhost:" + port, "127.0.0.1:" + port} {
				code, _, body := get(t, c, origin+path, "Host", host)
				if code != http.StatusForbidden || !strings.Contains(body, "--open-reports") || strings.Count(strings.TrimSpace(body), "\n") != 0 {
					t.Errorf("%s%s, Host %s, no token, no --open-reports: %d %q; want 403 saying how to open them", origin, path, host, code, strings.TrimSpace(body))
				}
			}
		}
		if conn, status, _ := wsDial(origin, "/api/live", http.Header{"Host": {"localhost"}}); conn != nil || status != http.StatusForbidden {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("%s/api/live without --open-reports: status %d, want 403 and no upgrade", origin, status)
		}
	}
}
