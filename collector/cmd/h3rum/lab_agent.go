package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/queries"
)

// runAgents runs `h3rum agent` (this binary) in every region's namespace,
// one region at a time, c.agentRuns runs each, reporting over the
// collector's WebSocket ingest with the lab's agent token and trusting the
// collector's local CA. It returns the runs the agents delivered (each
// acknowledged: in the collector's spool).
func (c *labConfig) runAgents(ctx context.Context, l *lab.Lab, dir, token string, out io.Writer) (delivered int) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(out, "  agents: %v\n", err)
		return 0
	}
	addr := lab.CollectorAddr.String()
	for _, r := range l.Regions {
		rctx, cancel := context.WithTimeout(ctx, time.Duration(c.agentRuns)*c.runTimeout)
		cmd := exec.CommandContext(rctx, exe, "agent",
			"--h3", fmt.Sprintf("https://%s:%d", labH3Host, labH3Port), "--h2", fmt.Sprintf("https://%s:%d", labH2Host, labH2Port),
			"--ingest", fmt.Sprintf("wss://%s:%d/ingest/ws", labH2Host, labH2Port),
			"--resolve", labH3Host+"="+addr, "--resolve", labH2Host+"="+addr,
			"--ca", filepath.Join(dir, "dev-ca.pem"), "--site", "lab",
			"--count", strconv.Itoa(c.agentRuns), "--interval", "1ms")
		cmd.Env = append(os.Environ(), "H3RUM_AGENT_TOKEN="+token)
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		// Forked on a thread inside the region's namespace, the agent
		// measures through the region's emulated path.
		err := r.Namespace.Do(cmd.Start)
		if err == nil {
			err = cmd.Wait()
		}
		cancel()
		if err != nil {
			fmt.Fprintf(out, "  agent in %s: %v: %s\n", r.Name, err, tailString(buf.String(), 3))
			continue
		}
		fmt.Fprintf(out, "  agent in %s: %d runs\n", r.Name, c.agentRuns)
		delivered += c.agentRuns
	}
	return delivered
}

// waitAgentRuns waits until the agent runs acknowledged since start are in
// ClickHouse (an acknowledgement means spooled; the insert follows within
// the flush interval), for at most 30 s.
func waitAgentRuns(ctx context.Context, conn driver.Conn, start time.Time, want int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT uniqExact(run_id) FROM samples WHERE source = 'agent' AND time >= ?", start).Scan(&n); err != nil {
			return fmt.Errorf("counting the agent's runs: %w", err)
		}
		if int(n) >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d acknowledged agent runs stored after 30 s", n, want)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// agentHandshakes are the handshakes the lab checks, with the round trips
// each should take on a path with round trip R: QUIC's full handshake and
// request 2R, QUIC 0-RTT 1R, TCP + TLS 1.3 and request 3R.
var agentHandshakes = []struct {
	proto, kind string
	trips       float64
}{{"h3", "full", 2}, {"h3", "0rtt", 1}, {"h2", "full", 3}}

// agentVerdict checks one region's agent runs: HTTP/3 availability (all
// where UDP passes below 3 % loss, none where it is blocked), and on a
// lossless path long enough to time (R ≥ 10 ms) the warm medians against R
// and the handshakes against their round trips, within the tolerance,
// after the request overhead the warm median shows beyond R. R is the
// injected round trip plus the emulator's own delay; the agent adds no
// browser to calibrate away.
func (c *labConfig) agentVerdict(g *queries.Group, r *lab.RegionLink, R float64, check func(bool, string, ...any), note func(string, ...any)) {
	if g == nil {
		check(false, "agent: no runs in the report")
		return
	}
	avail := -1.0
	if g.Availability != nil {
		avail = g.Availability.Share
	}
	switch {
	case r.BlockUDP:
		check(avail == 0, "agent HTTP/3 availability %.0f %% (want 0)", 100*avail)
	case lossPct(r) >= heavyLossPct:
		// The agent never falls back to TCP: under heavy loss a request
		// that timed out is loss, not a blocked path (1 run in 25 here).
		note("agent HTTP/3 availability %.0f %% (not checked under loss)", 100*avail)
	default:
		check(avail == 1, "agent HTTP/3 availability %.0f %%", 100*avail)
	}
	if R < 10 {
		note("agent: round trip too short to time handshakes against")
		return
	}
	lossy := lossPct(r) >= 1
	// over is each protocol's request overhead beyond the round trip, from
	// its warm median: what a handshake's request costs besides its round
	// trips (server, TLS and QUIC processing, a few ms here).
	over := map[string]float64{}
	for _, s := range []struct {
		name string
		st   *queries.Stats
	}{{"h2", g.H2}, {"h3", g.H3}} {
		if s.st == nil || lossy {
			continue
		}
		p50 := s.st.Percentiles[0].MS
		check(math.Abs(p50-R) <= c.tolerance*R, "agent %s warm p50 %.1f ms (want %.1f)", s.name, p50, R)
		over[s.name] = max(0, p50-R)
	}
	for _, want := range agentHandshakes {
		if r.BlockUDP && want.proto == "h3" {
			continue
		}
		var got *queries.Handshake
		for i := range g.Handshakes {
			if h := &g.Handshakes[i]; h.Proto == want.proto && h.Kind == want.kind {
				got = h
			}
		}
		label := want.proto + " " + want.kind
		if got == nil {
			check(false, "agent %s: none", label)
			continue
		}
		trips := got.Percentiles[0].MS / R
		if lossy {
			note("agent %s %.2fR (loss: not checked)", label, trips)
			continue
		}
		o := over[want.proto]
		trips = (got.Percentiles[0].MS - o) / R
		check(math.Abs(trips-want.trips) <= c.tolerance*want.trips, "agent %s %.2fR after %.1f ms of request overhead (want %.0fR)",
			label, trips, o, want.trips)
	}
}
