package origin

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// BenchmarkProbeRequest measures whole /probe requests over real loopback
// connections, client included, one at a time on a kept-alive connection:
// a GET answered 204 (the measured hot path), a 1000-byte download, and a
// 64 KiB download, over HTTP/1.1, HTTP/2 and HTTP/3. Compare runs with
// -count and a median; the client's share of each request is the same
// before and after a server change.
func BenchmarkProbeRequest(b *testing.B) {
	ts := startServer(b, &Server{})
	h3tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.pool}}
	b.Cleanup(func() { h3tr.Close() })
	h1tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.pool},
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	h2tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.pool}, ForceAttemptHTTP2: true}
	b.Cleanup(h1tr.CloseIdleConnections)
	b.Cleanup(h2tr.CloseIdleConnections)
	for _, p := range []struct {
		name string
		rt   http.RoundTripper
		base string
	}{{"h1", h1tr, ts.h2}, {"h2", h2tr, ts.h2}, {"h3", h3tr, ts.h3}} {
		c := &http.Client{Transport: p.rt, Timeout: 10 * time.Second}
		for _, q := range []struct{ name, query string }{
			{"204", ""}, {"1000B", "?bytes=1000"}, {"64KiB", "?bytes=65536"},
		} {
			b.Run(p.name+"/"+q.name, func(b *testing.B) {
				url := p.base + "/probe" + q.query
				get := func() {
					resp, err := c.Get(url)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 != 2 {
						b.Fatal(resp.Status)
					}
				}
				get() // connect outside the measurement
				b.ReportAllocs()
				for b.Loop() {
					get()
				}
			})
		}
	}
}
