package chromium

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// SPKIHash is the value --ignore-certificate-errors-spki-list takes for cert.
func SPKIHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Cert is a self-signed certificate for loopback test servers. Chromium
// started with its SPKI in Options.SPKI trusts it over HTTP/2 and HTTP/3;
// Go clients trust it through Pool.
type Cert struct {
	TLS  tls.Certificate   // the chain and private key, with Leaf set
	Leaf *x509.Certificate // the parsed certificate
	SPKI string            // SPKIHash(Leaf), for Options.SPKI
}

// NewCert makes a fresh ECDSA P-256 certificate for names, each a host name
// or an IP address, the first also being the subject's common name; without
// names it covers localhost, 127.0.0.1 and ::1. It is valid from an hour ago
// for a day, for server authentication, and has a random serial number, so
// every call makes a different certificate.
func NewCert(names ...string) (*Cert, error) {
	if len(names) == 0 {
		names = []string{"localhost", "127.0.0.1", "::1"}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating test key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating test certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating test certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing test certificate: %w", err)
	}
	return &Cert{
		TLS:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf: leaf,
		SPKI: SPKIHash(leaf),
	}, nil
}

// Pool returns a certificate pool that trusts c alone, for a Go client's
// tls.Config.RootCAs.
func (c *Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Leaf)
	return p
}

// WriteFiles writes c as PEM to dir/name.crt and its key to dir/name.key
// (mode 0600), for servers that load certificate files. It writes the key
// first and replaces each file atomically (a reloading server never reads a
// half-written one), and returns the two paths.
func (c *Cert) WriteFiles(dir, name string) (certFile, keyFile string, err error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.TLS.PrivateKey)
	if err != nil {
		return "", "", fmt.Errorf("encoding test key: %w", err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := replaceFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", err
	}
	if err := replaceFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.TLS.Certificate[0]}), 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// replaceFile writes b to a temporary file beside path and renames it over
// path.
func replaceFile(path string, b []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
