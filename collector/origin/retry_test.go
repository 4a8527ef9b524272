package origin

import (
	"testing"

	"github.com/quic-go/quic-go"
)

// TestServerTimingMarksRetry: once an address holds half its connection
// cap, its new QUIC connections answer a Retry first; the probe's
// Server-Timing on such a connection says so (retry;desc=1), and on a
// connection that paid none it has no retry metric.
func TestServerTimingMarksRetry(t *testing.T) {
	ts := startServer(t, &Server{MaxConnsPerAddr: 6})
	c1, _ := ts.h3Client(t, nil)
	resp, _ := do(t, c1, "GET", ts.h3+"/probe", nil)
	if st := parseServerTiming(t, resp.Header.Get("Server-Timing")); st["retry"] != "" {
		t.Errorf("a connection that paid no Retry: retry=%q", st["retry"])
	}
	var held []*quic.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.CloseWithError(0, "")
		}
	})
	for range 2 { // with c1's, 3 of 6: the address is crowded
		c, err := ts.quicDial(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	c2, _ := ts.h3Client(t, nil)
	resp, _ = do(t, c2, "GET", ts.h3+"/probe", nil)
	if st := parseServerTiming(t, resp.Header.Get("Server-Timing")); st["retry"] != "1" {
		t.Errorf("a connection after a Retry: retry=%q, want 1 (%v)", st["retry"], st)
	}
	if got := metric(t, ts.reg, "h3rum_collector_quic_retries_total", "origin", "h3", "reason", "crowded_addr"); got < 1 {
		t.Errorf("Retries counted %v, want at least 1", got)
	}
}
