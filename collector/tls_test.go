package collector

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
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

// writeCert writes a fresh self-signed certificate for names to
// dir/name.crt and dir/name.key, replacing them atomically.
func writeCert(t *testing.T, dir, name string, names ...string) (certFile, keyFile string, serial *big.Int) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ = rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		DNSNames:     names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := writeFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, serial
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

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	cert, key, _ := writeCert(t, dir, "ok", "ok.test")
	notADir := filepath.Join(dir, "file")
	os.WriteFile(notADir, nil, 0o644)
	for _, tc := range []struct {
		name string
		s    *Server
		want string // "" = valid
	}{
		{"defaults", &Server{}, ""},
		{"full", &Server{Addr: "localhost:0", H2Addr: ":8444", H3Host: "h3.example.com", H2Host: "h2.example.com",
			CertFile: cert, KeyFile: key, AllowOrigins: []string{"https://a.example"}, AltSvcPort: 443}, ""},
		{"addr without port", &Server{Addr: "localhost"}, `addr: "localhost": want host:port`},
		{"port out of range", &Server{H2Addr: ":70000"}, "h2 addr: \":70000\": port must be a number from 0 to 65535"},
		{"same port", &Server{Addr: ":9000", H2Addr: "127.0.0.1:9000"}, "use the same TCP port"},
		{"same host names", &Server{H3Host: "x.example", H2Host: "X.example"}, "need different host names"},
		{"host with port", &Server{H3Host: "x.example:443"}, `h3 host "x.example:443": want a host name without port`},
		{"cert without key", &Server{CertFile: cert}, "h3 origin TLS: give both"},
		{"unreadable cert", &Server{CertFile: filepath.Join(dir, "missing.crt"), KeyFile: key}, "h3 origin TLS: loading certificate"},
		{"mismatched h2 pair", &Server{H2CertFile: key, H2KeyFile: cert}, "h2 origin TLS: loading certificate"},
		{"star with others", &Server{AllowOrigins: []string{"*", "https://a.example"}}, `"*" must be the only entry`},
		{"origin with path", &Server{AllowOrigins: []string{"https://a.example/page"}}, "want scheme://host[:port]"},
		{"negative bytes", &Server{MaxProbeBytes: -1}, "max probe bytes -1"},
		{"huge bytes", &Server{MaxProbeBytes: 1 << 30}, "max probe bytes"},
		{"negative max age", &Server{AltSvcMaxAge: -time.Second}, "alt-svc max age"},
		{"bad alt-svc port", &Server{AltSvcPort: 65536}, "alt-svc port 65536"},
		{"acme bad domain", &Server{ACMEDomains: []string{"localhost"}}, `acme domain "localhost"`},
		{"acme host not covered", &Server{ACMEDomains: []string{"h3.example.com"}, H3Host: "h3.example.com", H2Host: "h2.example.com"},
			`h2 host "h2.example.com" is not among the acme domains`},
		{"acme email without domains", &Server{ACMEEmail: "a@example.com"}, "without acme domains"},
		{"data dir is a file", &Server{DataDir: notADir}, "is not a directory"},
		{"negative timeout", &Server{ShutdownTimeout: -1}, "shutdown timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("Validate accepted it, want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Errorf("Validate: %v\nwant it to contain %q", err, tc.want)
			}
		})
	}

	// Several problems are reported together, and Start refuses to listen.
	s := &Server{Addr: "nope", MaxProbeBytes: -5}
	err := s.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "addr:") || !strings.Contains(err.Error(), "max probe bytes") {
		t.Errorf("Start with bad config: %v", err)
	}
	if h3, h2 := s.Addrs(); h3.IsValid() || h2.IsValid() {
		t.Errorf("bad config bound %v %v", h3, h2)
	}
}
