// Command benchprobe measures what h3rum's /probe costs against a bare
// server: it loads /probe on loopback over HTTP/2 and HTTP/3, with
// keep-alive and with one request per fresh connection, alternating runs
// against a bare net/http TLS server plus a bare http3.Server (204, no
// headers), the same bare servers sending the headers /probe sends, and
// h3rum's collector.Server. Each server runs in its
// own child process, so its CPU time per request is read from /proc without
// the load generator's. Every run is bounded by -duration.
//
//	go run ./collector/benchprobe [-duration 3s] [-rounds 3]
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/h3rum/h3rum/collector"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go/http3"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchprobe:", err)
		os.Exit(1)
	}
}

type config struct {
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	conns       int
	concurrency int
	newConnConc int
	scenarios   string
	cpus        string
	profile     string
	servers     string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("benchprobe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.DurationVar(&c.duration, "duration", 3*time.Second, "length of each measured run")
	fs.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "unmeasured load before each scenario, per server")
	fs.IntVar(&c.rounds, "rounds", 3, "bare/h3rum pairs of runs per scenario")
	fs.IntVar(&c.conns, "conns", 4, "keep-alive connections per run")
	fs.IntVar(&c.concurrency, "concurrency", 32, "requests in flight in keep-alive runs, spread over -conns")
	fs.IntVar(&c.newConnConc, "newconn-concurrency", 8, "connections being set up at once in new-connection runs")
	fs.StringVar(&c.scenarios, "scenarios", "h2,h3,h2-newconn,h3-newconn", "comma-separated scenarios to run")
	fs.StringVar(&c.servers, "servers", "bare,headers,h3rum", "servers to compare, in the order runs alternate: bare (204, no headers), headers (bare plus the headers /probe sends), h3rum")
	fs.StringVar(&c.cpus, "server-cpus", "", "taskset CPU list for the server processes, e.g. 1 (default: no pinning)")
	child := fs.String("child", "", "internal: serve as the bare or h3rum child")
	certFile := fs.String("cert", "", "internal: certificate file for the child")
	keyFile := fs.String("key", "", "internal: key file for the child")
	fs.StringVar(&c.profile, "profile", "", "write each server's CPU profile to this directory (bare.pprof, h3rum.pprof)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *child != "" {
		return serveChild(*child, *certFile, *keyFile, c.profile, stdout)
	}
	if c.duration <= 0 || c.duration > 5*time.Minute || c.rounds < 1 || c.rounds > 50 ||
		c.conns < 1 || c.concurrency < 1 || c.newConnConc < 1 || c.concurrency > 4096 {
		return errors.New("flags out of range: want 0 < duration <= 5m, 1 <= rounds <= 50, conns, concurrency >= 1")
	}
	return bench(ctx, c, stdout)
}

// child is a server process under test.
type child struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.Closer
	tcp, udp string // where to send HTTP/2 and HTTP/3 load
}

func startChild(ctx context.Context, name, cert, key string, c config) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{exe, "-child", name, "-cert", cert, "-key", key, "-profile", c.profile}
	if c.cpus != "" {
		args = append([]string{"taskset", "-c", c.cpus}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s server: %w", name, err)
	}
	ch := &child{name: name, cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		ch.stop()
		return nil, fmt.Errorf("%s server did not start: %w", name, err)
	}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "tcp="); ok {
			ch.tcp = v
		}
		if v, ok := strings.CutPrefix(f, "udp="); ok {
			ch.udp = v
		}
	}
	if ch.tcp == "" || ch.udp == "" {
		ch.stop()
		return nil, fmt.Errorf("%s server said %q", name, line)
	}
	return ch, nil
}

// stop closes the child's stdin, which makes it exit, and waits.
func (c *child) stop() {
	c.stdin.Close()
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		c.cmd.Process.Kill()
		<-done
	}
}

// cpuTime is the child's user+system CPU time so far, from /proc.
func (c *child) cpuTime() (time.Duration, error) {
	pid := c.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the parenthesised command name; utime and stime are
	// fields 14 and 15 of the whole line, in clock ticks (100 per second).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// serveBaseline serves h on loopback over TCP (HTTP/1.1, HTTP/2) and UDP
// (HTTP/3) with plain net/http and http3 servers: the baselines h3rum is
// compared with.
func serveBaseline(h http.Handler, cert tls.Certificate) (tcpAddr, udpAddr string, shutdown func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", "", nil, err
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return "", "", nil, err
	}
	hs := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	h3 := &http3.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go hs.ServeTLS(ln, "", "")
	go h3.Serve(pc)
	return ln.Addr().String(), pc.LocalAddr().String(), func(ctx context.Context) error {
		return errors.Join(hs.Shutdown(ctx), h3.Shutdown(ctx), pc.Close())
	}, nil
}

// serveChild runs one server under test until stdin closes.
func serveChild(kind, certFile, keyFile, profile string, stdout io.Writer) error {
	// Every server under test runs with the GC settings h3rum's main uses,
	// so the ratios compare handlers, not collector settings.
	collector.TuneGC()
	if profile != "" {
		f, err := os.Create(filepath.Join(profile, kind+".pprof"))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var tcpAddr, udpAddr string
	var shutdown func(context.Context) error
	switch kind {
	case "bare":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
		if tcpAddr, udpAddr, shutdown, err = serveBaseline(h, cert); err != nil {
			return err
		}
	case "headers":
		// A bare server that sends what /probe sends, header for header,
		// with a Server-Timing value of the same shape that differs on
		// every response. It separates the cost of the headers in HPACK
		// and QPACK (which the issue requires) from the cost of h3rum's code.
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return err
		}
		var seq atomic.Uint64
		noStore, star, clear := []string{"no-store"}, []string{"*"}, []string{"clear"}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hd := w.Header()
			proto := "h3"
			if r.ProtoMajor < 3 {
				hd["Alt-Svc"] = clear
				proto = "h2"
			}
			hd["Cache-Control"] = noStore
			hd["Access-Control-Allow-Origin"] = star
			hd["Timing-Allow-Origin"] = star
			b := make([]byte, 0, 192)
			b = append(b, "proto;desc="...)
			b = append(b, proto...)
			b = append(b, ",app;dur=0.001,rtt;dur=0.052,minrtt;dur=0.009,rttvar;dur=0.065,lost;desc=0,cid;desc=c38a33d8-2,creq;desc="...)
			b = strconv.AppendUint(b, seq.Add(1), 10)
			b = append(b, ",resumed;desc=0,early;desc=0"...)
			hd["Server-Timing"] = []string{string(b)}
			w.WriteHeader(http.StatusNoContent)
		})
		if tcpAddr, udpAddr, shutdown, err = serveBaseline(h, cert); err != nil {
			return err
		}
	case "h3rum":
		dir, err := os.MkdirTemp("", "benchprobe-h3rum")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s := &collector.Server{
			Addr: "127.0.0.1:0", H2Addr: "127.0.0.1:0",
			CertFile: certFile, KeyFile: keyFile, H2CertFile: certFile, H2KeyFile: keyFile,
			DataDir:    dir,
			Registerer: prometheus.NewRegistry(),
			Logger:     slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		}
		if err := s.Start(context.Background()); err != nil {
			return err
		}
		h3, h2 := s.Addrs()
		// HTTP/2 load goes to the H2 origin and HTTP/3 load to the H3
		// origin, as the beacon does.
		tcpAddr, udpAddr = h2.String(), h3.String()
		shutdown = s.Shutdown
	default:
		return fmt.Errorf("unknown child %q", kind)
	}
	fmt.Fprintf(stdout, "READY tcp=%s udp=%s\n", tcpAddr, udpAddr)
	io.Copy(io.Discard, os.Stdin) // until the parent closes it or dies
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shutdown(ctx)
	return nil
}

// result is one measured run.
type result struct {
	server   string
	reqs     int
	errs     int
	elapsed  time.Duration
	cpu      time.Duration
	lat      []time.Duration // client-side, per request
	app      []time.Duration // server handling time from Server-Timing (h3rum only)
	firstErr error
}

func (r result) rate() float64 { return float64(r.reqs) / r.elapsed.Seconds() }
func (r result) cpuPerReq() time.Duration {
	if r.reqs == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.reqs)
}

func bench(ctx context.Context, c config, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "benchprobe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	certFile, keyFile, err := writeCert(dir)
	if err != nil {
		return err
	}
	pem, _ := os.ReadFile(certFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)

	var servers []*child
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range strings.Split(c.servers, ",") {
		ch, err := startChild(ctx, name, certFile, keyFile, c)
		if err != nil {
			return err
		}
		servers = append(servers, ch)
	}

	fmt.Fprintf(stdout, "benchprobe: %d rounds of %v per server and scenario, keep-alive: %d requests in flight over %d connections, new-connection: %d at once; GOMAXPROCS client=%d\n",
		c.rounds, c.duration, c.concurrency, c.conns, c.newConnConc, runtimeProcs())
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tserver\trun\treq/s\tp50\tp99\tCPU/req\tapp p50\tapp p99\terrors\t")
	var summary []string
	for _, sc := range strings.Split(c.scenarios, ",") {
		sc = strings.TrimSpace(sc)
		load, err := scenario(sc, c, pool)
		if err != nil {
			return err
		}
		for _, s := range servers { // warm up both
			if _, err := load(ctx, s, c.warmup); err != nil {
				return err
			}
		}
		byServer := map[string][]result{}
		for round := 1; round <= c.rounds; round++ {
			for _, s := range servers { // bare, h3rum, bare, h3rum …
				if ctx.Err() != nil {
					return ctx.Err()
				}
				r, err := load(ctx, s, c.duration)
				if err != nil {
					return err
				}
				byServer[s.name] = append(byServer[s.name], r)
				fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%d\t\n", sc, s.name, round, r.rate(),
					fmtDur(pct(r.lat, 50)), fmtDur(pct(r.lat, 99)), fmtDur(r.cpuPerReq()),
					fmtDur(pct(r.app, 50)), fmtDur(pct(r.app, 99)), r.errs)
				if r.firstErr != nil {
					fmt.Fprintf(tw, "\t\t\tfirst error: %v\t\t\t\t\t\t\t\n", r.firstErr)
				}
			}
		}
		th := total(byServer["h3rum"])
		for _, base := range []string{"bare", "headers"} {
			tb := total(byServer[base])
			if tb.reqs == 0 || th.reqs == 0 {
				continue
			}
			summary = append(summary, fmt.Sprintf("%-12s h3rum/%-7s req/s %.3f  CPU/req %.3f  (%s %.0f req/s %s/req, h3rum %.0f req/s %s/req; h3rum app p99 %s)",
				sc, base+":", th.rate()/tb.rate(), float64(th.cpuPerReq())/float64(tb.cpuPerReq()),
				base, tb.rate(), fmtDur(tb.cpuPerReq()), th.rate(), fmtDur(th.cpuPerReq()), fmtDur(pct(th.app, 99))))
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	for _, s := range summary {
		fmt.Fprintln(stdout, s)
	}
	fmt.Fprintln(stdout, "targets: req/s >= 0.95, CPU/req <= 1.05 (keep-alive), new-connection rate >= 0.95, h3rum app p99 < 100µs")
	return nil
}

// total merges the runs of one server.
func total(rs []result) result {
	var t result
	for _, r := range rs {
		t.reqs += r.reqs
		t.errs += r.errs
		t.elapsed += r.elapsed
		t.cpu += r.cpu
		t.lat = append(t.lat, r.lat...)
		t.app = append(t.app, r.app...)
	}
	return t
}

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

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return -1
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func fmtDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// writeCert writes the ECDSA P-256 certificate both servers use.
func writeCert(dir string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", "", err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}
