package agent

import (
	"crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"
)

// Resolve maps host names to IP addresses, like curl --resolve. As a
// flag.Value it takes host=ip, repeatedly or comma-separated (for an
// environment variable).
type Resolve map[string]string

func (r Resolve) String() string {
	var s []string
	for h, ip := range r {
		s = append(s, h+"="+ip)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// Set adds the host=ip pairs of v.
func (r Resolve) Set(v string) error {
	for _, e := range strings.Split(v, ",") {
		host, ip, ok := strings.Cut(strings.TrimSpace(e), "=")
		if !ok || host == "" {
			return fmt.Errorf("%q: want host=ip", e)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return fmt.Errorf("%q: %q is not an IP address", e, ip)
		}
		r[host] = a.String()
	}
	return nil
}

// LoadRoots returns the root certificates of the PEM file at path, for
// Config.Roots and Sender.Roots: a collector's dev-ca.pem, say.
func LoadRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent: CA file: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("agent: CA file %q holds no PEM certificate", path)
	}
	return roots, nil
}
