package main

// Attacks by a user or program on the collector's own machine: a
// pass-through proxy in front of a loopback-only collector, and (below)
// other local users against the managed ClickHouse and the data dir.

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A collector on loopback without a report token and without
// --open-reports does not answer its reports to a loopback peer that says
// Host: localhost, which is all a same-host pass-through proxy (HAProxy in
// TCP mode, ssh -L) relays from anyone: open mode is never inferred from
// where a request comes from. The refusal says how to open them.
func TestHostileLoopbackPeerWithoutOpenReportsIsRefused(t *testing.T) {
	ts := startServe(t)
	c := insecureClient()
	for _, origin := range []string{ts.h3, ts.h2} {
		port := origin[strings.LastIndex(origin, ":")+1:]
		for _, path := range []string{"/api/report?since=1h", "/dashboard"} {
			for _, host := range []string{"localhost", "localhost:" + port, "127.0.0.1:" + port} {
				code, _, body := get(t, c, origin+path, "Host", host)
				if code != http.StatusForbidden || !strings.Contains(body, "--open-reports") || strings.Count(strings.TrimSpace(body), "\n") != 0 {
					t.Errorf("%s%s, Host %s, no token, no --open-reports: %d %q; want 403 saying how to open them", origin, path, host, code, strings.TrimSpace(body))
				}
			}
		}
		if conn, status, _ := wsDial(origin, "/api/live", http.Header{"Host": {"localhost"}}); conn != nil || status != http.StatusForbidden {
			if conn != nil {
				conn.Close()
			}
			t.Errorf("%s/api/live without --open-reports: status %d, want 403 and no upgrade", origin, status)
		}
	}
}

// A data dir, or a file in it, that another user owns or may write is
// refused before it is used, with the path and what is wrong: serve does
// not lock, start ClickHouse or listen, and report does not connect to the
// address a planted file names (nor send it anything).
func TestHostileDataDirNotPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's files needs root")
	}
	const nobody = 65534
	// The server a planted address file points report at.
	trap, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer trap.Close()
	var trapped atomic.Int64
	go func() {
		for {
			c, err := trap.Accept()
			if err != nil {
				return
			}
			trapped.Add(1)
			c.Close()
		}
	}()
	serveArgs := []string{"serve", "--addr", "localhost:0", "--h2-addr", "localhost:0", "--metrics-addr", ""}
	for _, tc := range []struct {
		name  string
		args  []string
		plant func(t *testing.T, dataDir string)
		path  string // under the data dir
		want  string
	}{
		{"serve: a data dir of another user", serveArgs, func(t *testing.T, d string) { chown(t, d, nobody) }, "", "owned by uid 65534"},
		{"serve: a data dir others may write", serveArgs, func(t *testing.T, d string) { os.Chmod(d, 0o777) }, "", "its group and others may write it (mode 0777)"},
		{"serve: a planted lock", serveArgs, func(t *testing.T, d string) { plant(t, filepath.Join(d, "serve.lock"), "", nobody) }, "serve.lock", "owned by uid 65534"},
		{"serve: a spool others may write", serveArgs, func(t *testing.T, d string) {
			os.Mkdir(filepath.Join(d, "spool"), 0o750)
			os.Chmod(filepath.Join(d, "spool"), 0o757)
		}, "spool", "others may write it (mode 0757)"},
		{"serve: a planted ClickHouse password", serveArgs, func(t *testing.T, d string) {
			os.Mkdir(filepath.Join(d, "clickhouse"), 0o750)
			plant(t, filepath.Join(d, "clickhouse", "password"), "known-to-the-planter\n", nobody)
		}, "clickhouse/password", "owned by uid 65534"},
		{"report: a planted address", []string{"report"}, func(t *testing.T, d string) {
			os.Mkdir(filepath.Join(d, "clickhouse"), 0o750)
			plant(t, filepath.Join(d, "clickhouse", "address"), "clickhouse://default:x@"+trap.Addr().String()+"/h3rum\n", nobody)
		}, "clickhouse/address", "owned by uid 65534"},
		{"migrate: a data dir of another user", []string{"migrate"}, func(t *testing.T, d string) { chown(t, d, nobody) }, "", "owned by uid 65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "var")
			if err := os.Mkdir(dataDir, 0o750); err != nil {
				t.Fatal(err)
			}
			tc.plant(t, dataDir)
			var errOut bytes.Buffer
			err := run(context.Background(), append(tc.args, "--data-dir", dataDir), io.Discard, &errOut)
			code := exitCode(err, &errOut)
			path := filepath.Join(dataDir, tc.path)
			msg := strings.TrimSpace(errOut.String())
			if code != 1 || !strings.Contains(msg, "refusing "+path+": ") || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, stderr %q; want 1 and a refusal of %s saying %q", code, msg, path, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dataDir, "clickhouse", "config.xml")); err == nil {
				t.Error("the managed ClickHouse was configured and started")
			}
		})
	}
	if n := trapped.Load(); n != 0 {
		t.Errorf("report connected %d times to the address a planted file named", n)
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func plant(t *testing.T, path, content string, uid int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	chown(t, path, uid)
}
