package origin

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/h3rum/h3rum/ingest/access"
)

// DevCert describes the development certificate the server uses when
// neither certificate files nor ACME are configured: a server certificate
// for localhost, 127.0.0.1, ::1 and the origins' host names, signed by a
// small local CA of its own (the way mkcert works). Chromium can trust the
// server certificate by its SPKI alone (ChromiumFlags); Firefox, curl or a
// system store trust the CA file once it is imported. The CA is
// name-constrained to the names it serves and short-lived
// (loadOrCreateDevCA), so that importing it trusts its key for nothing
// else.
type DevCert struct {
	CertFile string // PEM server certificate, in DataDir
	KeyFile  string // PEM private key, in DataDir; kept across restarts so SPKI stays the same
	CAFile   string // PEM certificate of the local CA that signed CertFile, in DataDir
	// SPKI is the base64 SHA-256 of the certificate's SubjectPublicKeyInfo,
	// the value Chromium's --ignore-certificate-errors-spki-list takes.
	SPKI string
}

// ChromiumFlags returns the command-line flags that make Chromium trust the
// development certificate for HTTP/2 and HTTP/3. The dummy
// --origin-to-force-quic-on entry is what makes Chromium accept the
// certificate over QUIC at all, while HTTP/3 is still discovered through
// Alt-Svc; it applies to URLs whose host is localhost.
func (d DevCert) ChromiumFlags() string {
	return "--ignore-certificate-errors-spki-list=" + d.SPKI + " --origin-to-force-quic-on=localhost:1"
}

// SPKIHash returns the base64 SHA-256 of a certificate's
// SubjectPublicKeyInfo, as used by Chromium's
// --ignore-certificate-errors-spki-list and by HPKP-style pins.
func SPKIHash(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Names of the development certificate files in DataDir.
const (
	devCertName  = "dev-cert.pem"
	devKeyName   = "dev-key.pem"
	devCAName    = "dev-ca.pem"
	devCAKeyName = "dev-ca-key.pem"
)

// devCertHosts are the names the development certificate covers.
var devCertHosts = []string{"localhost", "127.0.0.1", "::1"}

// Lifetime of the development CA. Its key sits in the data directory;
// whoever copies it can sign for every name the CA permits, for as long
// as a browser or tool that imported the CA accepts it. Ninety days, the
// lifetime of a public web certificate, bounds that for the verifiers that
// check a root's validity (Go, OpenSSL and so curl), and asks a developer
// to import the file again once a quarter. It is re-issued once fewer than
// devCARenew remain, so a fresh file is there a month before the imported
// one expires.
const (
	devCALifetime = 90 * 24 * time.Hour
	devCARenew    = 30 * 24 * time.Hour
	// devBackdate covers clocks a little behind this one.
	devBackdate = time.Hour
)

// loadOrCreateDevCert returns the development certificate kept in dir,
// creating dir, the keys, the local CA and the certificate as needed. The
// server key is never replaced, so the SPKI a developer passed to Chromium
// stays valid; the certificate is re-issued with the same key when it is
// close to expiry, when it is not signed by the current local CA (a
// self-signed one an older release made, or a CA since re-issued), and
// when it does not cover every host: devCertHosts and the origins' own
// names (--h3-host, --h2-host), so that clients trusting the CA, such as
// `h3rum agent --ca`, verify them.
func loadOrCreateDevCert(dir string, now time.Time, logger *slog.Logger, hosts ...string) (*tls.Certificate, DevCert, error) {
	d := DevCert{CertFile: filepath.Join(dir, devCertName), KeyFile: filepath.Join(dir, devKeyName), CAFile: filepath.Join(dir, devCAName)}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, d, fmt.Errorf("creating data directory for the development certificate: %w", err)
	}
	ca, caKey, err := loadOrCreateDevCA(dir, now, logger, hosts)
	if err != nil {
		return nil, d, err
	}
	key, err := loadOrCreateDevKey(d.KeyFile)
	if err != nil {
		return nil, d, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, d, fmt.Errorf("encoding development key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})

	if certPEM, err := access.ReadPrivate(d.CertFile); err == nil {
		if c, err := tls.X509KeyPair(certPEM, keyPEM); err == nil && devCertUsable(&c, ca, now, hosts) {
			d.SPKI = SPKIHash(c.Leaf)
			return &c, d, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, d, fmt.Errorf("reading development certificate: %w", err)
	}

	der, err := newDevCertDER(key, ca, caKey, now, hosts)
	if err != nil {
		return nil, d, err
	}
	// The chain: the server certificate, then the CA that signed it.
	certPEM := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})...)
	if err := writeFileAtomic(d.CertFile, certPEM, 0o644); err != nil {
		return nil, d, fmt.Errorf("writing development certificate: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, d, fmt.Errorf("loading new development certificate: %w", err)
	}
	d.SPKI = SPKIHash(c.Leaf)
	return &c, d, nil
}

// devCAConstraints are the names the development CA may sign for, as the
// x509 name constraints it carries: localhost and the origins' host
// names (with their subdomains, as DNS constraints go), loopback, and the
// origins' IP addresses. Everything else — www.google.com, 8.8.8.8 — is
// outside them, and a verifier refuses a certificate for it that the CA's
// key signed.
func devCAConstraints(hosts []string) (dns []string, ips []*net.IPNet) {
	dns = []string{"localhost"}
	ips = []*net.IPNet{
		{IP: net.IPv4(127, 0, 0, 0).To4(), Mask: net.CIDRMask(8, 32)},
		{IP: net.IPv6loopback, Mask: net.CIDRMask(128, 128)},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			n := &net.IPNet{IP: ip, Mask: net.CIDRMask(128, 128)}
			if v4 := ip.To4(); v4 != nil {
				n = &net.IPNet{IP: v4, Mask: net.CIDRMask(32, 32)}
			}
			if !slices.ContainsFunc(ips, func(p *net.IPNet) bool { return p.Contains(ip) }) {
				ips = append(ips, n)
			}
		} else if h = strings.ToLower(h); !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	return dns, ips
}

// devCAProblem says why a stored CA certificate cannot stay, or "" when it
// can: it must be a CA for key, valid now and for more than devCARenew, no
// longer-lived than devCALifetime, for server authentication only and
// constrained, critically, to exactly the names dns and ips.
func devCAProblem(c *x509.Certificate, key *ecdsa.PrivateKey, now time.Time, dns []string, ips []*net.IPNet) string {
	switch {
	case !c.IsCA || !key.PublicKey.Equal(c.PublicKey):
		return "not a CA certificate for the CA key"
	case c.NotAfter.Sub(c.NotBefore) > devCALifetime+devBackdate:
		return fmt.Sprintf("valid for %d days, longer than %d", int(c.NotAfter.Sub(c.NotBefore).Hours()/24), int(devCALifetime.Hours()/24))
	case now.Before(c.NotBefore) || !now.Add(devCARenew).Before(c.NotAfter):
		return fmt.Sprintf("expires %s", c.NotAfter.Format(time.DateOnly))
	case !c.PermittedDNSDomainsCritical || len(c.PermittedDNSDomains) == 0 && len(c.PermittedIPRanges) == 0:
		return "no name constraints"
	case !sameSet(c.PermittedDNSDomains, dns) || !sameSet(ipStrings(c.PermittedIPRanges), ipStrings(ips)):
		return fmt.Sprintf("constrained to %v %v, the server names are %v %v", c.PermittedDNSDomains, c.PermittedIPRanges, dns, ips)
	case !slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) || len(c.UnknownExtKeyUsage) > 0:
		return "not limited to server authentication"
	case len(c.ExcludedDNSDomains)+len(c.ExcludedIPRanges)+len(c.PermittedEmailAddresses)+len(c.ExcludedEmailAddresses)+
		len(c.PermittedURIDomains)+len(c.ExcludedURIDomains) > 0:
		return "name constraints other than the server names"
	}
	return ""
}

// devCAWithin reports whether c, a CA certificate for the same key,
// permitted nothing beyond dns and ips: then the key may stay, since
// whatever trusts the old certificate trusts the key for no name the new
// one does not cover.
func devCAWithin(c *x509.Certificate, dns []string, ips []*net.IPNet) bool {
	if !c.PermittedDNSDomainsCritical || len(c.PermittedDNSDomains) == 0 || len(c.PermittedIPRanges) == 0 ||
		!slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		return false
	}
	for _, d := range c.PermittedDNSDomains {
		if !slices.Contains(dns, strings.ToLower(d)) {
			return false
		}
	}
	want := ipStrings(ips)
	for _, r := range ipStrings(c.PermittedIPRanges) {
		if !slices.Contains(want, r) {
			return false
		}
	}
	return true
}

func ipStrings(ns []*net.IPNet) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.String()
	}
	return out
}

func sameSet(a, b []string) bool {
	norm := func(s []string) []string {
		s = slices.Clone(s)
		for i := range s {
			s[i] = strings.ToLower(s[i])
		}
		slices.Sort(s)
		return slices.Compact(s)
	}
	return slices.Equal(norm(a), norm(b))
}

// loadOrCreateDevCA returns the local CA kept in dir, creating its key and
// certificate as needed. A stored CA certificate that devCAProblem
// rejects — one an older release made without name constraints and valid
// for ten years, one constrained to other names, one that expires within
// devCARenew — is replaced, and the server certificate follows
// (devCertUsable). The key stays only when the old certificate already
// permitted nothing beyond the new one's names; otherwise a new key makes
// the old certificate, wherever it was imported, sign nothing from now on,
// and the log says to remove it there.
func loadOrCreateDevCA(dir string, now time.Time, logger *slog.Logger, hosts []string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	dns, ips := devCAConstraints(hosts)
	keyPath, path := filepath.Join(dir, devCAKeyName), filepath.Join(dir, devCAName)
	key, err := loadOrCreateDevKey(keyPath)
	if err != nil {
		return nil, nil, err
	}
	var old *x509.Certificate
	problem := "no CA certificate"
	if b, err := access.ReadPrivate(path); err == nil {
		problem = "not a PEM certificate"
		if block, _ := pem.Decode(b); block != nil {
			if old, err = x509.ParseCertificate(block.Bytes); err == nil {
				if problem = devCAProblem(old, key, now, dns, ips); problem == "" {
					return old, key, nil
				}
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("reading development CA: %w", err)
	}
	newKey := old == nil || !key.PublicKey.Equal(old.PublicKey) || !devCAWithin(old, dns, ips)
	if newKey {
		if key, err = newDevKey(keyPath); err != nil {
			return nil, nil, err
		}
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generating certificate serial: %w", err)
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:                serial,
		Subject:                     pkix.Name{Organization: []string{"h3rum development CA"}, CommonName: "h3rum development CA " + host},
		NotBefore:                   now.Add(-devBackdate),
		NotAfter:                    now.Add(devCALifetime),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		ExtKeyUsage:                 []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         dns,
		PermittedIPRanges:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating development CA: %w", err)
	}
	if err := writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, nil, fmt.Errorf("writing development CA: %w", err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing development CA: %w", err)
	}
	switch {
	case old != nil && newKey:
		logger.Warn("replaced the development CA and its key: remove the previous h3rum development CA from the browsers and trust stores "+
			"that imported it (its key can no longer sign), and import the new file", "ca", path, "reason", problem,
			"names", dns, "addresses", ipStrings(ips), "not_after", c.NotAfter)
	case old != nil:
		logger.Info("re-issued the development CA with the same key; import the file again where the previous one was imported",
			"ca", path, "reason", problem, "names", dns, "addresses", ipStrings(ips), "not_after", c.NotAfter)
	}
	return c, key, nil
}

func loadOrCreateDevKey(path string) (*ecdsa.PrivateKey, error) {
	// A key another user planted or may change would be one that user knows.
	b, err := access.ReadPrivate(path)
	if err == nil {
		block, _ := pem.Decode(b)
		if block == nil {
			return nil, fmt.Errorf("reading development key %q: no PEM block (delete it to create a new one)", path)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("parsing development key %q: %w (delete it to create a new one)", path, err)
		}
		ek, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("development key %q is %T, want ECDSA (delete it to create a new one)", path, k)
		}
		return ek, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading development key: %w", err)
	}
	return newDevKey(path)
}

// newDevKey generates a key and writes it to path, replacing any there.
func newDevKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating development key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding development key: %w", err)
	}
	if err := writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("writing development key: %w", err)
	}
	return key, nil
}

// devHosts are the origins' configured host names ("host" or
// "host:port"), without ports, for the development certificate.
func devHosts(names ...string) []string {
	var out []string
	for _, n := range names {
		if h, _, err := net.SplitHostPort(n); err == nil {
			n = h
		}
		if n = strings.Trim(n, "[]"); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// devCertUsable reports whether a stored development certificate chain is
// a server certificate followed by ca, verifying under ca alone for every
// development host a week from now (so neither it nor the CA is about to
// expire).
func devCertUsable(c *tls.Certificate, ca *x509.Certificate, now time.Time, hosts []string) bool {
	leaf := c.Leaf
	if leaf == nil || leaf.IsCA || now.Before(leaf.NotBefore) || len(c.Certificate) != 2 || !bytes.Equal(c.Certificate[1], ca.Raw) {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	for _, h := range append(devCertHosts[:len(devCertHosts):len(devCertHosts)], hosts...) {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now.Add(7 * 24 * time.Hour)}); err != nil {
			return false
		}
	}
	return true
}

// newDevCertDER issues the server certificate for key under ca, valid as
// long as ca is.
func newDevCertDER(key *ecdsa.PrivateKey, ca *x509.Certificate, caKey *ecdsa.PrivateKey, now time.Time, hosts []string) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"h3rum development"}, CommonName: "localhost"},
		NotBefore:             now.Add(-devBackdate),
		NotAfter:              ca.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "localhost" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating development certificate: %w", err)
	}
	return der, nil
}

func writeFileAtomic(path string, b []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, perm)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// fileCert serves a certificate from PEM files and reloads it when either
// file changes. The files are checked with stat(2) on every handshake: two
// stats cost a few microseconds against hundreds for a handshake, and this
// needs no watcher goroutine. A pair that fails to load (say, the
// certificate was replaced before the key) keeps the previous certificate
// in service and is logged once per change.
type fileCert struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu    sync.Mutex
	cert  *tls.Certificate
	stamp [2]fileStamp // of the pair in service, or of the last failed attempt
}

type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// newFileCert loads the pair once; an error here is a configuration error.
func newFileCert(certFile, keyFile string, logger *slog.Logger) (*fileCert, error) {
	fc := &fileCert{certFile: certFile, keyFile: keyFile, logger: logger}
	st, err := fc.stamps()
	if err != nil {
		return nil, err
	}
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading certificate %q with key %q: %w", certFile, keyFile, err)
	}
	fc.cert, fc.stamp = &c, st
	return fc, nil
}

func (fc *fileCert) stamps() ([2]fileStamp, error) {
	var st [2]fileStamp
	var err error
	if st[0], err = stampOf(fc.certFile); err != nil {
		return st, fmt.Errorf("reading certificate file: %w", err)
	}
	if st[1], err = stampOf(fc.keyFile); err != nil {
		return st, fmt.Errorf("reading key file: %w", err)
	}
	return st, nil
}

// GetCertificate is a tls.Config.GetCertificate.
func (fc *fileCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	st, err := fc.stamps()
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if err != nil || st == fc.stamp {
		return fc.cert, nil
	}
	fc.stamp = st
	c, err := tls.LoadX509KeyPair(fc.certFile, fc.keyFile)
	if err != nil {
		fc.logger.Warn("certificate files changed but do not load; keeping the previous certificate",
			"cert", fc.certFile, "key", fc.keyFile, "err", err)
		return fc.cert, nil
	}
	fc.logger.Info("reloaded certificate", "cert", fc.certFile, "not_after", c.Leaf.NotAfter)
	fc.cert = &c
	return fc.cert, nil
}

// tlsVersionName is for logs and the echo endpoint.
func tlsVersionName(v uint16) string {
	if n := tls.VersionName(v); n != "" {
		return n
	}
	return fmt.Sprintf("0x%04x", v)
}

// alpnProto maps a negotiated ALPN protocol to a protocol label; ok is false
// for protocols that do not carry HTTP (the ACME TLS-ALPN challenge).
func alpnProto(p string) (string, bool) {
	switch p {
	case "h3":
		return protoH3, true
	case "h2":
		return protoH2, true
	case "", "http/1.1":
		return protoH1, true
	}
	return "", false
}

// certificates returns the GetCertificate functions of the two origins,
// and whether ACME is in use.
func (s *Server) certificates() (h3, h2 func(*tls.ClientHelloInfo) (*tls.Certificate, error), acme bool, err error) {
	switch {
	case s.CertFile != "":
		fc, err := newFileCert(s.CertFile, s.KeyFile, s.logger)
		if err != nil {
			return nil, nil, false, fmt.Errorf("h3 origin TLS: %w", err)
		}
		h3 = fc.GetCertificate
	case len(s.ACMEDomains) > 0:
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			Cache:      autocert.DirCache(s.acmeCache()),
			HostPolicy: autocert.HostWhitelist(s.ACMEDomains...),
			Email:      s.ACMEEmail,
		}
		h3, acme = m.GetCertificate, true
		s.logger.Info("TLS certificates from ACME", "domains", s.ACMEDomains, "cache", s.acmeCache())
	default:
		cert, dev, err := loadOrCreateDevCert(s.dataDir(), time.Now(), s.logger, devHosts(s.H3Host, s.H2Host)...)
		if err != nil {
			return nil, nil, false, err
		}
		s.dev = &dev
		h3 = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert, nil }
		s.logger.Info("using the development certificate", "cert", dev.CertFile, "ca", dev.CAFile, "spki", dev.SPKI)
	}
	h2 = h3
	if s.H2CertFile != "" {
		fc, err := newFileCert(s.H2CertFile, s.H2KeyFile, s.logger)
		if err != nil {
			return nil, nil, false, fmt.Errorf("h2 origin TLS: %w", err)
		}
		h2 = fc.GetCertificate
	}
	return h3, h2, acme, nil
}
