package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/collector/agent"
	"github.com/h3rum/h3rum/collector/agent/agenttest"
	"github.com/h3rum/h3rum/collector/internal/udprelay"
)

// --dry-run prints one message per run, each a JSON line the WebSocket
// ingest would take.
func TestAgentDryRun(t *testing.T) {
	o := agenttest.Start(t)
	var out, errOut bytes.Buffer
	err := runAgent(t.Context(), []string{"--h3", o.H3, "--h2", o.H2, "--ca", o.CAFile, "--resolve", "localhost=" + o.Resolve["localhost"],
		"--site", "lab", "--count", "3", "--concurrency", "2", "--interval", "10ms", "--parallel", "2", "--warmup", "0", "--dry-run"},
		&out, &errOut)
	if code := exitCode(err, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	ids := map[string]bool{}
	for i, line := range lines {
		var msg beacon.WSMessage
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("line %d: %v\n%s", i, err, line)
		}
		rep, err := beacon.Decode(msg.Report)
		if err != nil {
			t.Fatalf("line %d: the report does not decode: %v", i, err)
		}
		hs, err := beacon.DecodeHandshakes(msg.Handshakes)
		if err != nil || len(hs) != 5 {
			t.Fatalf("line %d: %d handshakes, %v", i, len(hs), err)
		}
		if msg.Source != "agent" || ids[msg.ID] || rep.Site != "lab" || rep.BeaconVersion != agent.BeaconVersion ||
			rep.Params.Parallel != 2 || rep.Params.Warmup != 0 || len(rep.Samples) != 5 {
			t.Errorf("line %d: id %s, source %q, report %+v", i, msg.ID, msg.Source, rep)
		}
		ids[msg.ID] = true
		for _, s := range append(rep.Samples, hs...) {
			if s.Error != "" || s.Got != s.Want {
				t.Errorf("line %d: sample %+v", i, s)
			}
		}
	}
}

// Bad flags stop the agent with one line and exit status 2, before it
// measures or connects to anything.
func TestAgentBadFlags(t *testing.T) {
	ok := []string{"--h3", "https://h3.lab", "--h2", "https://h2.lab", "--dry-run"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", append(ok, "--bogus"), "flag provided but not defined"},
		{"no origins", []string{"--dry-run"}, "--h3 and --h2 are required"},
		{"http origin", []string{"--h3", "http://h3.lab", "--h2", "https://h2.lab", "--dry-run"}, "--h3"},
		{"origin with a path", []string{"--h3", "https://h3.lab", "--h2", "https://h2.lab/probe", "--dry-run"}, "--h2"},
		{"no ingest", ok[:4], "--ingest is required"},
		{"http ingest", append(ok[:4:4], "--ingest", "https://collector/ingest/ws", "--token", "t"), "ws:// or wss://"},
		{"no token", append(ok[:4:4], "--ingest", "wss://collector/ingest/ws"), "token"},
		{"negative count", append(ok, "--count", "-1"), "--count"},
		{"zero interval", append(ok, "--interval", "0s"), "--interval"},
		{"zero concurrency", append(ok, "--concurrency", "0"), "--concurrency"},
		{"parallel 21", append(ok, "--parallel", "21"), "--parallel"},
		{"warmup 11", append(ok, "--warmup", "11"), "--warmup"},
		{"negative bytes", append(ok, "--bytes", "-1"), "--bytes"},
		{"bad order", append(ok, "--order", "h1first"), "--order"},
		{"bad site", append(ok, "--site", "my shop"), "--site"},
		{"resolve without ip", append(ok, "--resolve", "h3.lab"), "want host=ip"},
		{"resolve to a name", append(ok, "--resolve", "h3.lab=h3.example"), "not an IP address"},
		{"missing ca", append(ok, "--ca", "/nonexistent/ca.pem"), "/nonexistent/ca.pem"},
		{"bad log level", append(ok, "--log-level", "loud"), "--log-level"},
		{"token and token file", append(ok, "--token", strings.Repeat("t", 32), "--token-file", tokenFile(t, 0o600)), "not both"},
		{"token file others may read", append(ok, "--token-file", tokenFile(t, 0o644)), "others may read"},
		{"missing token file", append(ok, "--token-file", "/nonexistent/token"), "/nonexistent/token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("H3RUM_AGENT_TOKEN", "")
			var out, errOut bytes.Buffer
			err := runAgent(context.Background(), tc.args, &out, &errOut)
			code := exitCode(err, &errOut)
			msg := strings.TrimSpace(errOut.String())
			if code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) || out.Len() > 0 {
				t.Errorf("exit %d, stderr %q, stdout %d bytes; want 2 and one line naming %q", code, msg, out.Len(), tc.want)
			}
		})
	}
}

// -h lists the flags and exits 0.
func TestAgentHelp(t *testing.T) {
	var errOut bytes.Buffer
	err := runAgent(context.Background(), []string{"-h"}, io.Discard, &errOut)
	if code := exitCode(err, io.Discard); code != 0 || !strings.Contains(errOut.String(), "-dry-run") {
		t.Errorf("-h: exit %d, output %q", code, errOut.String())
	}
}

// TestAgentEndToEnd: `h3rum agent` measures the real serve over HTTP/3 and
// HTTP/2, trusting its local CA, and delivers through the WebSocket ingest
// with the agent token; the runs land in ClickHouse as the agent's, with
// their handshakes, and `report --agent` shows them while the browser
// report does not.
func TestAgentEndToEnd(t *testing.T) {
	token := strings.Repeat("a", 40)
	ts := startServe(t, "--agent-token", token)
	const runs = 3
	var out, errOut bytes.Buffer
	// The token from a file, as the README asks: off the command line.
	tokFile := filepath.Join(t.TempDir(), "agent-token")
	if err := os.WriteFile(tokFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("H3RUM_AGENT_TOKEN", "")
	t.Setenv("H3RUM_AGENT_TOKEN_FILE", tokFile)
	// HTTP/3 through a relay with a round trip: on bare loopback a 0-RTT
	// request leaves after the handshake has ended, and quic-go's client
	// races on an early connection whose handshake ends while it opens
	// the request stream.
	h3, _ := ts.srv.Addrs()
	relay := udprelay.Delay(t, h3, agenttest.QUICRTT/2)
	args := []string{"--h3", fmt.Sprintf("https://localhost:%d", relay.Port()), "--h2", ts.h2, "--ca", filepath.Join(ts.dataDir, "dev-ca.pem"),
		"--resolve", "localhost=" + relay.Addr().String(),
		"--ingest", "wss" + strings.TrimPrefix(ts.h2, "https") + "/ingest/ws", "--count", strconv.Itoa(runs), "--interval", "10ms"}
	if code := exitCode(runAgent(t.Context(), args, &out, &errOut), &errOut); code != 0 {
		t.Fatalf("agent: exit %d: %s", code, errOut.String())
	}
	conn := ts.conn(t)
	// Every run acknowledged is stored: 2 warm-ups + 1 + 2×5, and its five
	// handshakes (0-RTT may arrive too late on loopback to count as early
	// data, but every step is a new connection).
	waitFor(t, 20*time.Second, "the agent's rows in ClickHouse", func() (bool, error) {
		var n uint64
		err := conn.QueryRow(context.Background(), "SELECT count() FROM samples WHERE source = 'agent'").Scan(&n)
		return n == runs*(13+5), err
	})
	for q, want := range map[string]uint64{
		"SELECT uniqExact(run_id) FROM samples WHERE source = 'agent' AND browser = 'Agent' AND bot = 0": runs,
		"SELECT count() FROM samples WHERE phase = 'handshake' AND reused = 0 AND error = ''":            runs * 5,
		"SELECT count() FROM samples WHERE phase = 'handshake' AND srv_resumed = 1":                      runs * 3,
		"SELECT count() FROM samples WHERE phase = 'parallel' AND got = want AND error = ''":             runs * 10,
		"SELECT count() FROM samples_rollup":                                                             0,
	} {
		var n uint64
		if err := conn.QueryRow(context.Background(), q).Scan(&n); err != nil || n != want {
			t.Errorf("%s = %d (%v), want %d", q, n, err, want)
		}
	}
	report := func(extra ...string) string {
		out.Reset()
		errOut.Reset()
		err := run(context.Background(), append([]string{"report", "--data-dir", ts.dataDir, "--since", "1h", "--by", "none"}, extra...), &out, &errOut)
		if err != nil {
			t.Fatalf("report %v: %v\n%s", extra, err, errOut.String())
		}
		return out.String()
	}
	agentTable := report("--agent")
	for _, want := range []string{"h3 full", "h3 resumed", "h2 full", "h2 resumed"} {
		if !strings.Contains(agentTable, want) {
			t.Errorf("report --agent lacks %q:\n%s", want, agentTable)
		}
	}
	var rep struct {
		Groups []struct {
			H2 *struct {
				Runs int `json:"runs"`
			} `json:"h2"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(report("--agent", "--format", "json")), &rep); err != nil || len(rep.Groups) != 1 || rep.Groups[0].H2 == nil || rep.Groups[0].H2.Runs != runs {
		t.Errorf("report --agent: %v %+v, want %d runs", err, rep, runs)
	}
	if browsers := report("--format", "json"); strings.Contains(browsers, `"runs": `+strconv.Itoa(runs)) || strings.Contains(browsers, `"kind"`) {
		t.Errorf("the browser report shows the agent's runs:\n%s", browsers)
	}
	// A wrong token is refused before anything is measured twice: exit 1
	// with the reason.
	t.Setenv("H3RUM_AGENT_TOKEN", strings.Repeat("b", 40))
	errOut.Reset()
	if code := exitCode(runAgent(t.Context(), args, io.Discard, &errOut), &errOut); code == 0 {
		t.Errorf("agent with a wrong token: exit 0")
	}
}

// tokenFile writes an agent token to a file of the given mode.
func tokenFile(t *testing.T, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent-token")
	if err := os.WriteFile(p, []byte(strings.Repeat("k", 32)+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return p
}
