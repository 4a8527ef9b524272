package origin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
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
	"github.com/h3rum/h3rum/ingest/access"
)

// quiet discards the log of loadOrCreateDevCert where a test does not read it.
var quiet = slog.New(slog.DiscardHandler)

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
	c1, d1, err := loadOrCreateDevCert(dir, now, quiet)
	if err != nil {
		t.Fatal(err)
	}
	// A year later the certificate is expired: a new one, same key.
	c2, d2, err := loadOrCreateDevCert(dir, now.Add(366*24*time.Hour), quiet)
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
	if _, _, err := loadOrCreateDevCert(dir, now, quiet); err == nil || !strings.Contains(err.Error(), "delete it") {
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

	c, d, err := loadOrCreateDevCert(dir, now, quiet)
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
	c2, d2, err := loadOrCreateDevCert(dir, now, quiet)
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
	c1, d1, err := loadOrCreateDevCert(dir, now, quiet)
	if err != nil {
		t.Fatal(err)
	}
	hosts := devHosts("h3.lab:8443", "h2.lab", "[198.18.0.1]:443", "")
	if want := []string{"h3.lab", "h2.lab", "198.18.0.1"}; !slices.Equal(hosts, want) {
		t.Fatalf("devHosts = %q, want %q", hosts, want)
	}
	c2, d2, err := loadOrCreateDevCert(dir, now, quiet, hosts...)
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
	c3, _, err := loadOrCreateDevCert(dir, now, quiet, hosts...)
	if err != nil || c3.Leaf.SerialNumber.Cmp(c2.Leaf.SerialNumber) != 0 {
		t.Errorf("the same hosts again re-issued the certificate: %v", err)
	}
}

// devCA reads the CA certificate and key loadOrCreateDevCert left in dir.
func devCA(t *testing.T, dir string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, devCAName))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("CA file holds no PEM block")
	}
	key, err := loadOrCreateDevKey(filepath.Join(dir, devCAKeyName))
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, block.Bytes), key
}

// signLeaf is what whoever copies the CA key can do: issue a server
// certificate for any names under the CA.
func signLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time, dns []string, ips ...net.IP) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: dns, IPAddresses: ips}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return mustParse(t, der)
}

// The development CA is name-constrained to what it serves and
// short-lived: a browser that imported it trusts its key for localhost,
// loopback and the origins' names, and for nothing else — not a
// certificate for www.google.com that the key signed.
func TestDevCANameConstrained(t *testing.T) {
	dir, now := t.TempDir(), time.Now()
	hosts := devHosts("h3.lab:8443", "198.18.0.1")
	c, _, err := loadOrCreateDevCert(dir, now, quiet, hosts...)
	if err != nil {
		t.Fatal(err)
	}
	ca, caKey := devCA(t, dir)
	if !ca.PermittedDNSDomainsCritical || len(ca.PermittedDNSDomains) == 0 || len(ca.PermittedIPRanges) == 0 {
		t.Errorf("CA constraints: critical %v, DNS %v, IP %v; want critical DNS and IP constraints",
			ca.PermittedDNSDomainsCritical, ca.PermittedDNSDomains, ca.PermittedIPRanges)
	}
	if life := ca.NotAfter.Sub(now); life > devCALifetime || life < devCALifetime-time.Minute {
		t.Errorf("CA valid for %v from now, want %v", life, devCALifetime)
	}
	if c.Leaf.NotAfter.After(ca.NotAfter) {
		t.Errorf("server certificate outlives its CA: %v after %v", c.Leaf.NotAfter, ca.NotAfter)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	verify := func(leaf *x509.Certificate, name string, usage x509.ExtKeyUsage) error {
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}})
		return err
	}
	// The certificate served verifies for every name it serves.
	for _, h := range append(slices.Clone(devCertHosts), hosts...) {
		if err := verify(c.Leaf, h, x509.ExtKeyUsageServerAuth); err != nil {
			t.Errorf("served certificate for %s: %v", h, err)
		}
	}
	// So does anything else the key signs within the names (the
	// constraint is what refuses the rest, not a broken signature)…
	for _, name := range []string{"localhost", "app.localhost", "h3.lab", "127.0.0.2", "198.18.0.1"} {
		var leaf *x509.Certificate
		if ip := net.ParseIP(name); ip != nil {
			leaf = signLeaf(t, ca, caKey, now, nil, ip)
		} else {
			leaf = signLeaf(t, ca, caKey, now, []string{name})
		}
		if err := verify(leaf, name, x509.ExtKeyUsageServerAuth); err != nil {
			t.Errorf("a certificate for %s signed by the CA: %v", name, err)
		}
	}
	// …and nothing outside them verifies.
	for _, tc := range []struct {
		name string
		leaf *x509.Certificate
	}{
		{"www.google.com", signLeaf(t, ca, caKey, now, []string{"www.google.com"})},
		{"h3.lab.evil.example", signLeaf(t, ca, caKey, now, []string{"h3.lab.evil.example"})},
		{"www.google.com", signLeaf(t, ca, caKey, now, []string{"localhost", "www.google.com"})},
		{"8.8.8.8", signLeaf(t, ca, caKey, now, nil, net.ParseIP("8.8.8.8"))},
		{"2001:db8::1", signLeaf(t, ca, caKey, now, nil, net.ParseIP("2001:db8::1"))},
	} {
		err := verify(tc.leaf, tc.name, x509.ExtKeyUsageServerAuth)
		if ie, ok := errors.AsType[x509.CertificateInvalidError](err); !ok || ie.Reason != x509.CANotAuthorizedForThisName {
			t.Errorf("a certificate for %s (SANs %v %v) signed by the CA: %v, want refused for the name", tc.name, tc.leaf.DNSNames, tc.leaf.IPAddresses, err)
		}
	}
	// The CA is for servers only: its key signs no code and no mail.
	if err := verify(signLeaf(t, ca, caKey, now, []string{"localhost"}), "localhost", x509.ExtKeyUsageCodeSigning); err == nil {
		t.Error("a code-signing use verified under the development CA")
	}
}

// writeOldDevCA writes, in dir, the CA key, a CA certificate made as tmpl
// says and a server certificate it signed, as an earlier release left
// them, and returns the CA and the server certificate's SPKI.
func writeOldDevCA(t *testing.T, dir string, tmpl *x509.Certificate, now time.Time) (*x509.Certificate, string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	caKey, err := loadOrCreateDevKey(filepath.Join(dir, devCAKeyName))
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, devCAName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	ca := mustParse(t, der)
	key, err := loadOrCreateDevKey(filepath.Join(dir, devKeyName))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := newDevCertDER(key, ca, caKey, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	chain := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf}), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	if err := os.WriteFile(filepath.Join(dir, devCertName), chain, 0o644); err != nil {
		t.Fatal(err)
	}
	return ca, SPKIHash(mustParse(t, leaf))
}

// A CA already in the data dir is replaced on start when it lacks the
// name constraints, lives too long, nears its end or permits other names,
// and the server certificate is re-issued under the new one with the same
// server key. The CA key is kept only when the old CA could sign for no
// more than the new one; otherwise the old CA, wherever it was imported,
// signs nothing from now on, and the log says to remove it.
func TestDevCAReplacedOnUpgrade(t *testing.T) {
	dns, ips := devCAConstraints(nil)
	ours := func(notBefore time.Time, life time.Duration, dns ...string) *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "h3rum development CA test"},
			NotBefore: notBefore, NotAfter: notBefore.Add(life), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
			PermittedDNSDomainsCritical: true, PermittedDNSDomains: dns, PermittedIPRanges: ips}
	}
	now := time.Now()
	for _, tc := range []struct {
		name    string
		old     *x509.Certificate
		hosts   []string
		sameKey bool
		log     string
	}{
		{name: "ten years, no name constraints", old: &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "h3rum development CA test"},
			NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour), KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
			BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true}, log: "replaced the development CA and its key"},
		{name: "constrained but a year long", old: ours(now.Add(-time.Hour), 365*24*time.Hour, dns...), sameKey: true, log: "re-issued the development CA with the same key"},
		{name: "near its end", old: ours(now.Add(-80*24*time.Hour), devCALifetime, dns...), sameKey: true, log: "re-issued the development CA with the same key"},
		{name: "expired", old: ours(now.Add(-100*24*time.Hour), devCALifetime, dns...), sameKey: true, log: "re-issued the development CA with the same key"},
		{name: "a new host", old: ours(now.Add(-time.Hour), devCALifetime, dns...), hosts: []string{"h3.lab"}, sameKey: true, log: "re-issued"},
		{name: "a host no longer served", old: ours(now.Add(-time.Hour), devCALifetime, "localhost", "old.lab"), log: "replaced the development CA and its key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			old, spki := writeOldDevCA(t, dir, tc.old, now)
			var logs strings.Builder
			c, d, err := loadOrCreateDevCert(dir, now, slog.New(slog.NewTextHandler(&logs, nil)), tc.hosts...)
			if err != nil {
				t.Fatal(err)
			}
			ca, _ := devCA(t, dir)
			if ca.SerialNumber.Cmp(old.SerialNumber) == 0 || ca.Equal(old) {
				t.Fatal("the old CA was kept")
			}
			dns, ips := devCAConstraints(tc.hosts)
			if _, key := devCA(t, dir); devCAProblem(ca, key, now, dns, ips) != "" {
				t.Errorf("new CA: %s", devCAProblem(ca, key, now, dns, ips))
			}
			if same := old.PublicKey.(*ecdsa.PublicKey).Equal(ca.PublicKey); same != tc.sameKey {
				t.Errorf("CA key kept: %v, want %v", same, tc.sameKey)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log %q, want a line with %q", logs.String(), tc.log)
			}
			// The server certificate served now is the new CA's, with the
			// server key a developer pinned.
			if len(c.Certificate) != 2 || !slices.Equal(c.Certificate[1], ca.Raw) {
				t.Error("the chain served does not end in the new CA")
			}
			if d.SPKI != spki {
				t.Errorf("server SPKI %s, was %s: the pin passed to Chromium broke", d.SPKI, spki)
			}
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			for _, h := range append(slices.Clone(devCertHosts), tc.hosts...) {
				if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now}); err != nil {
					t.Errorf("%s under the new CA: %v", h, err)
				}
			}
			if !tc.sameKey {
				oldRoots := x509.NewCertPool()
				oldRoots.AddCert(old)
				if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: oldRoots, DNSName: "localhost", CurrentTime: now}); err == nil {
					t.Error("the new server certificate verifies under the replaced CA")
				}
			}
			// Loaded again: nothing changes, nothing is logged.
			logs.Reset()
			c2, _, err := loadOrCreateDevCert(dir, now, slog.New(slog.NewTextHandler(&logs, nil)), tc.hosts...)
			if err != nil || c2.Leaf.SerialNumber.Cmp(c.Leaf.SerialNumber) != 0 || logs.Len() > 0 {
				t.Errorf("second start re-issued (%v) or logged %q", err, logs.String())
			}
		})
	}
}

// TestDevCertFilesPrivate: the development key, CA and certificate are
// used only when this user owns them and no one else may write them; a
// key another user planted is one that user knows.
func TestDevCertFilesPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user") // make test runs as root on CI
	}
	for _, name := range []string{devKeyName, devCAKeyName, devCAName, devCertName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if _, _, err := loadOrCreateDevCert(dir, time.Now(), slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			if err := os.Chown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			_, _, err := loadOrCreateDevCert(dir, time.Now(), slog.New(slog.DiscardHandler))
			if !errors.Is(err, access.ErrNotPrivate) || !strings.Contains(err.Error(), path) {
				t.Fatalf("%s owned by another user: %v, want a refusal naming it", name, err)
			}
			if err := os.Chown(path, 0, 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
			if _, _, err := loadOrCreateDevCert(dir, time.Now(), slog.New(slog.DiscardHandler)); !errors.Is(err, access.ErrNotPrivate) {
				t.Fatalf("%s writable by others: %v, want a refusal", name, err)
			}
		})
	}
}
