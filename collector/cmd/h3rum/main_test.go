package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad flags, variables and certificate files stop serve with one line and
// exit status 2 before it creates, starts or listens on anything.
func TestServeBadInputExitsBeforeListening(t *testing.T) {
	tokens := t.TempDir()
	token := func(name, content string, mode os.FileMode) string {
		path := filepath.Join(tokens, name)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
		return path
	}
	const secret = "0123456789abcdef0123456789abcdef"
	good := token("good", secret+"\n", 0o600)
	readable := token("readable", secret+"\n", 0o644)
	short := token("short", "s3cret\n", 0o600)
	for _, tc := range []struct {
		name string
		args []string
		env  [2]string
		want string
	}{
		{"unknown flag", []string{"--bogus"}, [2]string{}, "flag provided but not defined"},
		{"missing certificate", []string{"--tls-cert", "/nonexistent.pem", "--tls-key", "/nonexistent.key"}, [2]string{}, "/nonexistent.pem"},
		{"bad address", []string{"--addr", "nonsense"}, [2]string{}, "nonsense"},
		{"bad log format", []string{"--log-format", "xml"}, [2]string{}, "--log-format"},
		{"bad environment", nil, [2]string{"H3RUM_BATCH_ROWS", "abc"}, "H3RUM_BATCH_ROWS"},
		{"negative retention", []string{"--retention", "-1"}, [2]string{}, "--retention"},
		{"negative flush interval", []string{"--flush-interval", "-1ms"}, [2]string{}, "--flush-interval"},
		{"rate limit zero", []string{"--rate-limit", "0"}, [2]string{}, "write -1"},
		{"commit delay zero", []string{"--commit-delay", "0s"}, [2]string{}, "write -1ns"},
		{"commit delay over a second", nil, [2]string{"H3RUM_COMMIT_DELAY", "2s"}, "--commit-delay"},
		{"short report token", []string{"--report-token", "s3cret"}, [2]string{}, "--report-token is 6 bytes"},
		{"short agent token", nil, [2]string{"H3RUM_AGENT_TOKEN", "0123456789abcdef0123456789abcde"}, "--agent-token is 31 bytes"},
		{"report token and its file", []string{"--report-token", secret, "--report-token-file", good}, [2]string{}, "give --report-token or --report-token-file, not both"},
		{"report token from the environment and a file", []string{"--report-token-file", good}, [2]string{"H3RUM_REPORT_TOKEN", secret}, "give --report-token or --report-token-file, not both (H3RUM_REPORT_TOKEN and H3RUM_REPORT_TOKEN_FILE count too)"},
		{"agent token and a file from the environment", []string{"--agent-token", secret}, [2]string{"H3RUM_AGENT_TOKEN_FILE", good}, "give --agent-token or --agent-token-file, not both"},
		{"token file others may read", []string{"--report-token-file", readable}, [2]string{}, "--report-token-file: refusing " + readable + ": others may read or write it (mode 0644)"},
		{"missing token file", []string{"--agent-token-file", "/nonexistent-token"}, [2]string{}, "--agent-token-file: open /nonexistent-token"},
		{"short token in a file", []string{"--agent-token-file", short}, [2]string{}, "the token in --agent-token-file " + short + " is 6 bytes"},
		{"open reports with a report token file", []string{"--open-reports", "--addr", "localhost:0", "--h2-addr", "localhost:0", "--report-token-file", good}, [2]string{}, "--open-reports answers without a token"},
		{"geo header without trusted proxies", []string{"--geo-header", "CF-IPCountry"}, [2]string{}, "--geo-header is believed only from --trusted-proxies"},
		{"client ip header without trusted proxies", []string{"--client-ip-header", "CF-Connecting-IP"}, [2]string{}, "--client-ip-header is read only from --trusted-proxies"},
		{"bad client ip header", []string{"--trusted-proxies", "10.0.0.0/8", "--client-ip-header", "X Bad"}, [2]string{}, "--client-ip-header"},
		{"bad trusted proxy", []string{"--trusted-proxies", "10.0.0.0/33"}, [2]string{}, "10.0.0.0/33"},
		{"negative report concurrency", []string{"--report-concurrency", "-1"}, [2]string{}, "--report-concurrency"},
		{"unknown role", []string{"--role", "edge"}, [2]string{}, `--role "edge"`},
		{"bad collector id", []string{"--collector-id", "Frankfurt.1"}, [2]string{}, `collector id "Frankfurt.1"`},
		{"ingest url without probe role", []string{"--ingest-url", "https://ingest.example"}, [2]string{}, "--ingest-url is for --role probe"},
		{"open reports with a report token", []string{"--open-reports", "--report-token", "0123456789abcdef0123456789abcdef"}, [2]string{}, "--open-reports answers without a token: give it or --report-token, not both"},
		{"open reports on a public listener", []string{"--open-reports", "--addr", "localhost:0", "--h2-addr", "0.0.0.0:0"}, [2]string{}, `--open-reports: listener "0.0.0.0:0" is not bound to loopback only`},
		{"open reports on the default listeners", []string{"--open-reports"}, [2]string{}, "--open-reports: listener"},
		{"open reports with trusted proxies", []string{"--open-reports", "--addr", "localhost:0", "--h2-addr", "[::1]:0", "--trusted-proxies", "127.0.0.1"}, [2]string{}, "--open-reports: proxies are trusted"},
		{"open reports from the environment, probe role", []string{"--role", "probe"}, [2]string{"H3RUM_OPEN_REPORTS", "true"}, "--open-reports: --role probe serves no reports"},
		{"ingest url not an origin", []string{"--role", "probe", "--ingest-url", "ingest.example/beacon"}, [2]string{}, "--ingest-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env[0] != "" {
				t.Setenv(tc.env[0], tc.env[1])
			}
			dataDir := filepath.Join(t.TempDir(), "var")
			var errOut bytes.Buffer
			err := run(context.Background(), append([]string{"serve", "--data-dir", dataDir}, tc.args...), io.Discard, &errOut)
			code := exitCode(err, &errOut)
			msg := strings.TrimSpace(errOut.String())
			if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and one line naming %q", code, msg, tc.want)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("serve touched --data-dir before failing: %v", err)
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "-h"}, io.Discard, &errOut)
	if code := exitCode(err, io.Discard); code != 0 || !strings.Contains(errOut.String(), "-ingest-concurrency") {
		t.Errorf("serve -h: exit %d, output %d bytes; want 0 and the flag list", code, errOut.Len())
	}
}

// A collector that cannot start its ClickHouse says why and exits 1; it
// does not crash.
func TestServeWithoutClickHouseBinaryFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var errOut bytes.Buffer
	err := run(context.Background(), []string{"serve", "--role", "ingest", "--addr", "localhost:0", "--h2-addr", "localhost:0",
		"--metrics-addr", "localhost:0", "--data-dir", t.TempDir()}, io.Discard, &errOut)
	if code := exitCode(err, &errOut); code != 1 || !strings.Contains(errOut.String(), "no clickhouse-server or clickhouse on PATH") {
		t.Errorf("exit %d, stderr %q; want 1 and the reason", code, errOut.String())
	}
}
