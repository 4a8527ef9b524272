package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/collector/origin"
)

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
	origin.TuneGC()
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
			b = append(b, ",age;dur=812.417,resumed;desc=0,early;desc=0"...)
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
		s := &origin.Server{
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
	case "caddy":
		addr, pid, stop, err := serveCaddy(certFile, keyFile)
		if err != nil {
			return err
		}
		defer stop()
		// The load's CPU is Caddy's own process's, not this wrapper's.
		fmt.Fprintf(stdout, "READY tcp=%s udp=%s pid=%d\n", addr, addr, pid)
		io.Copy(io.Discard, os.Stdin)
		return nil
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

// caddyfile answers /probe with 204 over HTTP/1.1, HTTP/2 and HTTP/3 (on
// the same port), with the given certificate: the probe's peer among
// well-kept servers.
const caddyfile = `{
	admin off
	auto_https off
	log {
		level ERROR
	}
	servers {
		protocols h1 h2 h3
	}
}
:%d {
	bind 127.0.0.1
	tls %s %s
	respond /probe 204
}
`

// serveCaddy starts Debian's caddy on a free loopback port and returns its
// address and pid once it answers, and how to stop it.
func serveCaddy(certFile, keyFile string) (addr string, pid int, stop func(), err error) {
	bin, err := exec.LookPath("caddy")
	if err != nil {
		return "", 0, nil, errors.New("no caddy to compare with: install it (Debian: apt-get install caddy; make bench does)")
	}
	dir, err := os.MkdirTemp("", "benchprobe-caddy")
	if err != nil {
		return "", 0, nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return "", 0, nil, err
	}
	cfg := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, caddyfile, port, certFile, keyFile), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", 0, nil, err
	}
	cmd := exec.Command(bin, "run", "--config", cfg, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", 0, nil, fmt.Errorf("starting caddy: %w", err)
	}
	stop = func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for deadline := time.Now().Add(15 * time.Second); ; {
		resp, err := c.Get("https://" + addr + "/probe")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusNoContent {
				return addr, cmd.Process.Pid, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", 0, nil, fmt.Errorf("caddy did not answer on %s within 15 s (%v)", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePort returns a loopback port free for TCP and UDP just now.
func freePort() (int, error) {
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			pc.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port for TCP and UDP")
}
