//go:build unix

package webkit_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/beacon/webkit"
)

// tlsOrigin serves h over HTTP/1.1 and HTTP/2 with a fresh self-signed
// certificate for localhost and returns its origin and certificate file.
func tlsOrigin(t *testing.T, h http.Handler) (origin, certFile string) {
	t.Helper()
	c, err := chromium.NewCert()
	if err != nil {
		t.Fatal(err)
	}
	certFile, _, err = c.WriteFiles(t.TempDir(), "origin")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{c.TLS}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	return fmt.Sprintf("https://localhost:%d", ln.Addr().(*net.TCPAddr).Port), certFile
}

func skipWithout(t *testing.T) {
	t.Helper()
	if _, _, err := webkit.Find(webkit.Options{}); err != nil {
		t.Skipf("WebKitGTK is not installed (make deps installs it): %v", err)
	}
}

// TestCertificatePinned checks that a session trusts exactly the
// certificate it was given for a host: the page loads over HTTP/2 with it,
// and fails without it.
func TestCertificatePinned(t *testing.T) {
	skipWithout(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><title>%s</title>", r.Proto)
	})
	origin, certFile := tlsOrigin(t, mux)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	b, err := webkit.Start(ctx, origin+"/", webkit.Options{Certificates: []webkit.Certificate{{Host: "localhost", File: certFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var title string
	if err := b.Execute(ctx, "return document.title", &title); err != nil {
		t.Fatal(err)
	}
	if title != "HTTP/2.0" {
		t.Errorf("page title %q, want HTTP/2.0 (the server's r.Proto)\n%s", title, b.Output())
	}
	if err := b.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	// Another host's allowance does not cover localhost.
	b, err = webkit.Start(ctx, "", webkit.Options{Certificates: []webkit.Certificate{{Host: "example.test", File: certFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	err = b.Navigate(ctx, origin+"/")
	var got string
	b.Execute(ctx, "return document.title", &got)
	if err == nil && got == "HTTP/2.0" {
		t.Errorf("the page loaded with no certificate allowed for its host")
	}
	t.Logf("without an allowance: %v, title %q", err, got)
}
