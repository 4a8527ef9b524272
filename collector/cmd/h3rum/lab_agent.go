package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/collector/agent"
	"github.com/h3rum/h3rum/collector/lab"
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
			"--count", strconv.Itoa(c.agentRuns), "--interval", "1ms", "--timeout", agentTimeout(r.Region).String())
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

// agentTimeout is the agent's request timeout in region r: the script's,
// but 3 s where UDP is blocked. There every QUIC attempt times out by
// design (two warm-ups, the batch, the QUIC handshake: four timeouts a
// run, 40 s at 10 s) and nothing is timed but the TCP handshake.
func agentTimeout(r lab.Region) time.Duration {
	if r.BlockUDP {
		return 3 * time.Second
	}
	return agent.DefaultTimeout
}
