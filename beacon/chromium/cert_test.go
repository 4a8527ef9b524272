package chromium

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"slices"
	"testing"
)

func TestNewCert(t *testing.T) {
	c, err := NewCert()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		if err := c.Leaf.VerifyHostname(h); err != nil {
			t.Errorf("default certificate: %v", err)
		}
	}
	if c.SPKI != SPKIHash(c.TLS.Leaf) || c.Leaf != c.TLS.Leaf {
		t.Error("SPKI or Leaf do not describe the certificate in TLS")
	}
	if _, err := c.Leaf.Verify(x509.VerifyOptions{Roots: c.Pool(), DNSName: "localhost"}); err != nil {
		t.Errorf("Pool does not trust the certificate: %v", err)
	}

	c2, err := NewCert("h3.test", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if c2.Leaf.Subject.CommonName != "h3.test" || !slices.Equal(c2.Leaf.DNSNames, []string{"h3.test"}) ||
		len(c2.Leaf.IPAddresses) != 1 || !c2.Leaf.IPAddresses[0].Equal(net.ParseIP("192.0.2.1")) {
		t.Errorf("names: CN %q, DNS %q, IP %v", c2.Leaf.Subject.CommonName, c2.Leaf.DNSNames, c2.Leaf.IPAddresses)
	}
	if c.Leaf.SerialNumber.Cmp(c2.Leaf.SerialNumber) == 0 || c.SPKI == c2.SPKI {
		t.Error("two calls made the same serial or key")
	}

	dir := t.TempDir()
	certFile, keyFile, err := c2.WriteFiles(dir, "h3")
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if SPKIHash(loaded.Leaf) != c2.SPKI {
		t.Error("the files hold another certificate")
	}
	// Writing again replaces the pair.
	if _, _, err := c.WriteFiles(dir, "h3"); err != nil {
		t.Fatal(err)
	}
	if loaded, err = tls.LoadX509KeyPair(certFile, keyFile); err != nil || SPKIHash(loaded.Leaf) != c.SPKI {
		t.Errorf("after rewriting: %v", err)
	}
}
