package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go/http3"
)

type loadFunc func(ctx context.Context, s *child, d time.Duration) (result, error)

// scenario returns the load of one scenario.
func scenario(name string, c config, pool *x509.CertPool) (loadFunc, error) {
	tlsConf := func() *tls.Config { return &tls.Config{RootCAs: pool, ServerName: "localhost"} }
	switch name {
	case "h2", "h3":
		h3 := name == "h3"
		return func(ctx context.Context, s *child, d time.Duration) (result, error) {
			var rts []http.RoundTripper
			var closers []func()
			for range c.conns {
				if h3 {
					tr := &http3.Transport{TLSClientConfig: tlsConf()}
					rts, closers = append(rts, tr), append(closers, func() { tr.Close() })
				} else {
					tr := &http.Transport{TLSClientConfig: tlsConf(), ForceAttemptHTTP2: true, MaxConnsPerHost: 1}
					rts, closers = append(rts, tr), append(closers, tr.CloseIdleConnections)
				}
			}
			defer func() {
				for _, f := range closers {
					f()
				}
			}()
			url := "https://" + s.tcp + "/probe"
			if h3 {
				url = "https://" + s.udp + "/probe"
			}
			// Open the connections before the clock starts.
			for _, rt := range rts {
				if err := get(ctx, &http.Client{Transport: rt}, url, nil); err != nil {
					return result{}, fmt.Errorf("%s %s: %w", name, s.name, err)
				}
			}
			return measure(ctx, s, d, c.concurrency, func(i int) func(context.Context, *[]time.Duration) error {
				client := &http.Client{Transport: rts[i%len(rts)]}
				return func(ctx context.Context, app *[]time.Duration) error { return get(ctx, client, url, appOf(s, app)) }
			})
		}, nil
	case "h2-newconn", "h3-newconn":
		h3 := name == "h3-newconn"
		return func(ctx context.Context, s *child, d time.Duration) (result, error) {
			url := "https://" + s.tcp + "/probe"
			if h3 {
				url = "https://" + s.udp + "/probe"
			}
			return measure(ctx, s, d, c.newConnConc, func(int) func(context.Context, *[]time.Duration) error {
				return func(ctx context.Context, app *[]time.Duration) error {
					if h3 {
						tr := &http3.Transport{TLSClientConfig: tlsConf()}
						defer tr.Close()
						return get(ctx, &http.Client{Transport: tr}, url, appOf(s, app))
					}
					tr := &http.Transport{TLSClientConfig: tlsConf(), ForceAttemptHTTP2: true, DisableKeepAlives: true}
					defer tr.CloseIdleConnections()
					return get(ctx, &http.Client{Transport: tr}, url, appOf(s, app))
				}
			})
		}, nil
	}
	return nil, fmt.Errorf("unknown scenario %q (want h2, h3, h2-newconn, h3-newconn)", name)
}

// measure runs conc workers for d, each repeating its request, and reads
// the server's CPU time around the run.
func measure(ctx context.Context, s *child, d time.Duration, conc int, worker func(i int) func(context.Context, *[]time.Duration) error) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, d+10*time.Second) // a hung request cannot outlive the run by much
	defer cancel()
	type acc struct {
		lat, app []time.Duration
		errs     int
		first    error
	}
	accs := make([]acc, conc)
	cpu0, err := s.cpuTime()
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range conc {
		do := worker(i)
		a := &accs[i]
		a.lat = make([]time.Duration, 0, 1<<14)
		wg.Go(func() {
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := do(ctx, &a.app); err != nil {
					a.errs++
					if a.first == nil {
						a.first = err
					}
					if ctx.Err() != nil {
						return
					}
					continue
				}
				a.lat = append(a.lat, time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1, err := s.cpuTime()
	if err != nil {
		return result{}, err
	}
	r := result{server: s.name, elapsed: elapsed, cpu: cpu1 - cpu0}
	for _, a := range accs {
		r.reqs += len(a.lat)
		r.errs += a.errs
		r.lat = append(r.lat, a.lat...)
		r.app = append(r.app, a.app...)
		if r.firstErr == nil {
			r.firstErr = a.first
		}
	}
	if r.reqs == 0 {
		return r, fmt.Errorf("no request to the %s server succeeded: %v", s.name, r.firstErr)
	}
	return r, nil
}

// get sends GET and checks for 204; with app, it records the server's
// handling time from Server-Timing.
func get(ctx context.Context, c *http.Client, url string, app *[]time.Duration) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if app != nil {
		if d, ok := appDur(resp.Header.Get("Server-Timing")); ok {
			*app = append(*app, d)
		}
	}
	return nil
}

// appOf returns where to record server handling times: only h3rum
// measures them (the headers server sends a constant).
func appOf(s *child, app *[]time.Duration) *[]time.Duration {
	if s.name != "h3rum" {
		return nil
	}
	return app
}

// appDur finds app;dur=<ms> in a Server-Timing value.
func appDur(st string) (time.Duration, bool) {
	_, v, ok := strings.Cut(st, "app;dur=")
	if !ok {
		return 0, false
	}
	if i := strings.IndexByte(v, ','); i >= 0 {
		v = v[:i]
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ms * float64(time.Millisecond)), true
}
