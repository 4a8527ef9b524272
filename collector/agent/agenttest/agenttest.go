// Package agenttest starts what the agent's tests measure: a real
// collector origin (collector/origin) on loopback, with its development
// certificate, its HTTP/3 reached over a path with a known round trip.
package agenttest

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/collector/internal/udprelay"
	"github.com/h3rum/h3rum/collector/origin"
)

// QUICRTT is the round trip of the path to the H3 origin: a relay holds
// every UDP datagram for half of it in each direction. Loopback alone
// answers in tens of microseconds, less than it takes the client to write a
// 0-RTT request after dialing, so its 0-RTT requests would often arrive
// after the handshake; and a known round trip lets tests check what a
// handshake costs in round trips. It is large against the CPU time of a
// handshake (milliseconds, more under the race detector), which a count of
// round trips would otherwise take for one.
const QUICRTT = 40 * time.Millisecond

// Origins are a started origin server's two test origins.
type Origins struct {
	// H3 is the H3 origin, https://localhost:port, whose UDP port is the
	// delaying relay's: use it over HTTP/3 only.
	H3 string
	// H2 is the H2 origin, https://localhost:port.
	H2     string
	Roots  *x509.CertPool // trusts the development certificate
	CAFile string         // the development CA, PEM (the agent's --ca)
	// Resolve maps localhost to the IPv4 loopback address, where the
	// origins and the relay listen.
	Resolve map[string]string
	Server  *origin.Server
}

// Start starts an origin server on free loopback ports with a
// development certificate in a temporary directory, and the relay in front
// of its UDP port, and stops both when the test ends.
func Start(t testing.TB) *Origins {
	t.Helper()
	s := &origin.Server{Addr: "localhost:0", H2Addr: "localhost:0", DataDir: t.TempDir(),
		Registerer: prometheus.NewRegistry(),
		Logger:     slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if err := s.Start(t.Context()); err != nil {
		t.Fatalf("starting the origins: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutting the origins down: %v", err)
		}
		if err := s.Wait(); err != nil {
			t.Errorf("origins: %v", err)
		}
	})
	d, ok := s.DevCert()
	if !ok {
		t.Fatal("the origin server has no development certificate")
	}
	pem, err := os.ReadFile(d.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	o := &Origins{Roots: x509.NewCertPool(), CAFile: d.CAFile, Server: s}
	if !o.Roots.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", d.CAFile)
	}
	h3, h2 := s.Addrs()
	relay := udprelay.Delay(t, h3, QUICRTT/2)
	o.H3 = fmt.Sprintf("https://localhost:%d", relay.Port())
	o.H2 = fmt.Sprintf("https://localhost:%d", h2.Port())
	o.Resolve = map[string]string{"localhost": relay.Addr().String()}
	return o
}
