// Command benchprobe measures what h3rum's /probe costs against a bare
// server: it loads /probe on loopback over HTTP/2 and HTTP/3, with
// keep-alive and with one request per fresh connection, in rounds of one
// run of each server, each round in an order rotated by one: a bare
// net/http TLS server plus a bare http3.Server (204, no
// headers), the same bare servers sending the headers /probe sends,
// Debian's caddy answering 204 (a well-kept server as the peer), and
// h3rum's origin.Server. Each server runs in its
// own child process, so its CPU time per request is read from /proc without
// the load generator's. Every run is bounded by -duration.
//
//	go run ./collector/cmd/benchprobe [-duration 3s] [-rounds 4]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
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
	fs.IntVar(&c.rounds, "rounds", 4, "runs of each server per scenario, each round in an order rotated by one")
	fs.IntVar(&c.conns, "conns", 4, "keep-alive connections per run")
	fs.IntVar(&c.concurrency, "concurrency", 32, "requests in flight in keep-alive runs, spread over -conns")
	fs.IntVar(&c.newConnConc, "newconn-concurrency", 8, "connections being set up at once in new-connection runs")
	fs.StringVar(&c.scenarios, "scenarios", "h2,h3,h2-newconn,h3-newconn", "comma-separated scenarios to run")
	fs.StringVar(&c.servers, "servers", "bare,headers,caddy,h3rum", "servers to compare, in the order runs alternate: bare (204, no headers), headers (bare plus the headers /probe sends), caddy (Debian's caddy answering 204 over HTTP/1.1, 2 and 3), h3rum")
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
