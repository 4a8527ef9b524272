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
