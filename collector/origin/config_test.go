package origin

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
		{"negative body timeout", &Server{BodyTimeout: -time.Second}, "body timeout -1s"},
		{"negative write timeout", &Server{WriteTimeout: -time.Second}, "write timeout -1s"},
		{"no cap", &Server{MaxConnsPerAddr: -1, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, ""},
		{"invalid trusted proxy", &Server{TrustedProxies: []netip.Prefix{{}}}, "trusted proxies"},
		{"metrics addr", &Server{MetricsAddr: "127.0.0.1:9090"}, ""},
		{"metrics addr without port", &Server{MetricsAddr: "127.0.0.1"}, `metrics addr: "127.0.0.1": want host:port`},
		{"metrics on the h3 port", &Server{Addr: ":9000", MetricsAddr: "127.0.0.1:9000"}, "metrics addr \"127.0.0.1:9000\" and addr \":9000\" use the same TCP port"},
		{"metrics on the h2 port", &Server{H2Addr: "localhost:9001", MetricsAddr: ":9001"}, "and h2 addr"},
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
