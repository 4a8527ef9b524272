package origin

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/h3rum/h3rum/beacon/chromium"
)

func TestDevCertPersists(t *testing.T) {
	dir := t.TempDir()
	var spkis []string
	for i := range 2 {
		s := &Server{DataDir: dir}
		ts := startServer(t, s)
		d, ok := s.DevCert()
		if !ok {
			t.Fatal("no development certificate in use")
		}
		if !strings.Contains(d.ChromiumFlags(), "--ignore-certificate-errors-spki-list="+d.SPKI+" ") ||
			!strings.HasSuffix(d.ChromiumFlags(), "--origin-to-force-quic-on=localhost:1") {
			t.Errorf("Chromium flags %q", d.ChromiumFlags())
		}
		// The certificate served is the one described, on both origins
		// and both transports.
		resp, _ := do(t, ts.tcpClient(t, false, nil), "GET", ts.h2+"/probe", nil)
		if got := SPKIHash(resp.TLS.PeerCertificates[0]); got != d.SPKI {
			t.Errorf("run %d: served SPKI %s, described %s", i, got, d.SPKI)
		}
		c, _ := ts.h3Client(t, nil)
		resp, _ = do(t, c, "GET", ts.h3+"/probe", nil)
		if got := SPKIHash(resp.TLS.PeerCertificates[0]); got != d.SPKI {
			t.Errorf("run %d over h3: served SPKI %s, described %s", i, got, d.SPKI)
		}
		if fi, err := os.Stat(d.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
		}
		spkis = append(spkis, d.SPKI)
		ctx := t.Context()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if spkis[0] != spkis[1] {
		t.Errorf("SPKI changed across restarts: %s then %s", spkis[0], spkis[1])
	}
}

func TestDevCertRenewedWithSameKey(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	c1, d1, err := loadOrCreateDevCert(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	// A year later the certificate is expired: a new one, same key.
	c2, d2, err := loadOrCreateDevCert(dir, now.Add(366*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if c1.Leaf.SerialNumber.Cmp(c2.Leaf.SerialNumber) == 0 {
		t.Error("expired certificate was not re-issued")
	}
	if d1.SPKI != d2.SPKI {
		t.Error("re-issued certificate has a new key")
	}
	if err := os.WriteFile(d1.KeyFile, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadOrCreateDevCert(dir, now); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("corrupt key: %v, want an error that says what to do", err)
	}
}

// The development certificate is a server certificate (not a CA) signed
// by the local CA in CAFile, valid for every development host; a
// self-signed CA certificate an older release left is re-issued under the
// CA with the same key, so the SPKI a developer passed to Chromium holds.
func TestDevCertSignedByLocalCA(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	// What an older release left: the server key, and a self-signed CA
	// certificate made with it.
	key, err := loadOrCreateDevKey(filepath.Join(dir, devKeyName))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(300 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	old, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, devCertName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: old}), 0o644); err != nil {
		t.Fatal(err)
	}
	oldSPKI := SPKIHash(mustParse(t, old))

	c, d, err := loadOrCreateDevCert(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Leaf.IsCA || d.SPKI != oldSPKI {
		t.Errorf("re-issued certificate: CA %v, SPKI %s (was %s); want a server certificate with the same key", c.Leaf.IsCA, d.SPKI, oldSPKI)
	}
	caPEM, err := os.ReadFile(d.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA file holds no certificate")
	}
	for _, host := range devCertHosts {
		if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now}); err != nil {
			t.Errorf("%s: does not verify against the local CA: %v", host, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, devCAKeyName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("CA key: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	// Loaded again: the same CA and certificate.
	c2, d2, err := loadOrCreateDevCert(dir, now)
	if err != nil || c2.Leaf.SerialNumber.Cmp(c.Leaf.SerialNumber) != 0 || d2 != d {
		t.Errorf("second load re-issued: %v", err)
	}
}

func mustParse(t *testing.T, der []byte) *x509.Certificate {
	t.Helper()
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeCert writes a fresh certificate for names to dir/name.crt and
// dir/name.key, replacing them atomically.
func writeCert(t *testing.T, dir, name string, names ...string) (certFile, keyFile string, serial *big.Int) {
	t.Helper()
	c, err := chromium.NewCert(names...)
	if err != nil {
		t.Fatal(err)
	}
	if certFile, keyFile, err = c.WriteFiles(dir, name); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, c.Leaf.SerialNumber
}

func TestCertFilesReload(t *testing.T) {
	dir := t.TempDir()
	h3Cert, h3Key, serial1 := writeCert(t, dir, "h3", "h3.test")
	h2Cert, h2Key, serialH2 := writeCert(t, dir, "h2", "h2.test")
	s := &Server{CertFile: h3Cert, KeyFile: h3Key, H2CertFile: h2Cert, H2KeyFile: h2Key}
	ts := startServer(t, s)
	if _, ok := s.DevCert(); ok {
		t.Error("DevCert reports a development certificate while files are configured")
	}

	// The test checks which certificate is served, not the chain.
	insecure := &tls.Config{InsecureSkipVerify: true}
	served := func(t *testing.T, base string, h3 bool) *big.Int {
		t.Helper()
		var rt http.RoundTripper = &http.Transport{TLSClientConfig: insecure, ForceAttemptHTTP2: true}
		if h3 {
			rt = &http3.Transport{TLSClientConfig: insecure}
		}
		defer func() {
			if c, ok := rt.(interface{ Close() error }); ok {
				c.Close()
			} else {
				rt.(*http.Transport).CloseIdleConnections()
			}
		}()
		resp, _ := do(t, &http.Client{Transport: rt, Timeout: 10 * time.Second}, "GET", base+"/probe", nil)
		return resp.TLS.PeerCertificates[0].SerialNumber
	}
	if got := served(t, ts.h3, false); got.Cmp(serial1) != 0 {
		t.Errorf("h3 origin serves serial %v, want %v", got, serial1)
	}
	if got := served(t, ts.h2, false); got.Cmp(serialH2) != 0 {
		t.Errorf("h2 origin serves serial %v, want its own %v", got, serialH2)
	}

	_, _, serial2 := writeCert(t, dir, "h3", "h3.test")
	if got := served(t, ts.h3, false); got.Cmp(serial2) != 0 {
		t.Errorf("after replacing the files, TCP serves serial %v, want %v", got, serial2)
	}
	if got := served(t, ts.h3, true); got.Cmp(serial2) != 0 {
		t.Errorf("after replacing the files, QUIC serves serial %v, want %v", got, serial2)
	}

	// A broken pair keeps the previous certificate in service.
	if err := os.WriteFile(h3Cert, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := served(t, ts.h3, false); got.Cmp(serial2) != 0 {
		t.Errorf("after breaking the files, serves serial %v, want the previous %v", got, serial2)
	}
}

// TestDevCertCoversOriginHosts: the origins' configured names join the
// certificate, re-issued with the same key when a name is new, so a
// client trusting the local CA (h3rum agent --ca) verifies them too.
func TestDevCertCoversOriginHosts(t *testing.T) {
	dir, now := t.TempDir(), time.Now()
	c1, d1, err := loadOrCreateDevCert(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	hosts := devHosts("h3.lab:8443", "h2.lab", "[198.18.0.1]:443", "")
	if want := []string{"h3.lab", "h2.lab", "198.18.0.1"}; !slices.Equal(hosts, want) {
		t.Fatalf("devHosts = %q, want %q", hosts, want)
	}
	c2, d2, err := loadOrCreateDevCert(dir, now, hosts...)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Leaf.SerialNumber.Cmp(c1.Leaf.SerialNumber) == 0 || d2.SPKI != d1.SPKI {
		t.Errorf("new hosts: serial %v (was %v), SPKI %s (was %s); want a new certificate with the same key", c2.Leaf.SerialNumber, c1.Leaf.SerialNumber, d2.SPKI, d1.SPKI)
	}
	caPEM, err := os.ReadFile(d2.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	for _, h := range append(hosts, devCertHosts...) {
		if _, err := c2.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now}); err != nil {
			t.Errorf("%s: %v", h, err)
		}
	}
	if _, err := c2.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.lab", CurrentTime: now}); err == nil {
		t.Error("the certificate verifies for a host it was not asked to cover")
	}
	c3, _, err := loadOrCreateDevCert(dir, now, hosts...)
	if err != nil || c3.Leaf.SerialNumber.Cmp(c2.Leaf.SerialNumber) != 0 {
		t.Errorf("the same hosts again re-issued the certificate: %v", err)
	}
}
