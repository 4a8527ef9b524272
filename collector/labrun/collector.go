package labrun

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/h3rum/h3rum/beacon/chromium"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/ingest/store/local"
)

// The lab's host names, resolved for the browsers and the agents to the
// collector, and the collector's ports in its namespace.
const (
	h3Host, h2Host = "h3.lab", "h2.lab"
	h3Port, h2Port = 8443, 8444
)

// writeGeoIP writes a GeoIP database in the GeoLite2-City layout that
// maps each region's prefix to its country and continent, so that regions
// come out of the collector's normal GeoIP path.
func writeGeoIP(path string, regions []*lab.RegionLink) error {
	tree, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 28, IncludeReservedNetworks: true})
	if err != nil {
		return fmt.Errorf("lab GeoIP: %w", err)
	}
	for _, r := range regions {
		_, n, err := net.ParseCIDR(r.Prefix.String())
		if err != nil {
			return fmt.Errorf("lab GeoIP: %w", err)
		}
		rec := mmdbtype.Map{
			"country":   mmdbtype.Map{"iso_code": mmdbtype.String(r.Country)},
			"continent": mmdbtype.Map{"code": mmdbtype.String(r.Continent)},
		}
		if err := tree.Insert(n, rec); err != nil {
			return fmt.Errorf("lab GeoIP: region %s: %w", r.Name, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("lab GeoIP: %w", err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("lab GeoIP: %w", err)
	}
	return f.Close()
}

// startCollector starts `h3rum serve` in the collector's namespace, with
// its own managed ClickHouse there, and returns a func that stops both.
func (r *run) startCollector(ctx context.Context, geo string) (stop func(), err error) {
	exe, err := r.bin()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(r.dir, "serve.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "serve",
		"--addr", fmt.Sprintf(":%d", h3Port), "--h2-addr", fmt.Sprintf(":%d", h2Port),
		"--h3-host", h3Host, "--h2-host", h2Host, "--data-dir", r.dir, "--geoip-db", geo,
		"--rate-limit", "-1", "--metrics-addr", "", "--flush-interval", "200ms", "--agent-token", r.token)
	cmd.Stdout, cmd.Stderr = logf, logf
	// No Pdeathsig: it follows the forking thread, here one of the
	// runtime's, not this process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child forked on a thread inside the namespace lives there.
	if err := r.lab.Collector.Do(cmd.Start); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting the lab collector: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	return func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}, nil
}

// dialIn dials addr from inside ns: the socket belongs to the namespace
// for its whole life, whichever goroutine uses it.
func dialIn(ctx context.Context, ns lab.Namespace, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := ns.Do(func() error {
		var d net.Dialer
		var err error
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// waitCollector waits for the collector to answer /healthz on the H3
// origin and returns the SPKI hash of its development certificate.
func (r *run) waitCollector(ctx context.Context) (string, error) {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialIn(ctx, r.lab.Collector, network, addr)
		},
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the lab's own development certificate
	}}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://%s:%d/healthz", lab.CollectorAddr, h3Port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		req.Host = h3Host
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(r.dir, "serve.log"))
			return "", fmt.Errorf("the lab collector did not answer within 90 s (%v); its log:\n%s", err, tailString(string(log), 20))
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "dev-cert.pem"))
	if err != nil {
		return "", fmt.Errorf("reading the lab collector's certificate: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return "", errors.New("the lab collector's certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("the lab collector's certificate: %w", err)
	}
	return chromium.SPKIHash(cert), nil
}

// openStore connects to the collector's ClickHouse, which listens on the
// collector namespace's loopback.
func (r *run) openStore(ctx context.Context) (driver.Conn, error) {
	dsn, err := local.ReadDSN(filepath.Join(r.dir, "clickhouse"))
	if err != nil {
		return nil, err
	}
	opts, err := clickhouse.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	opts.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
		return dialIn(ctx, r.lab.Collector, "tcp", addr)
	}
	conn, err := clickhouse.Open(opts)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("reaching the lab's ClickHouse: %w", err)
	}
	return conn, nil
}
