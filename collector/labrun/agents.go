package labrun

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/h3rum/h3rum/collector/agent"
	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/render"
)

// agentPass runs the agents in every region, when AgentRuns asks for
// them, and reports their runs apart by continent. late is the emulator's
// own delay per region and direction while the agents ran (zero without
// agents).
func (r *run) agentPass(ctx context.Context) (rep *model.Report, late [][2]lab.Lateness, err error) {
	late = make([][2]lab.Lateness, len(r.lab.Regions))
	if r.AgentRuns == 0 {
		return nil, late, nil
	}
	start := time.Now().UTC().Add(-time.Second)
	before := make([][2]lab.Lateness, len(r.lab.Regions))
	for i, reg := range r.lab.Regions {
		up, down := reg.Stats()
		before[i] = [2]lab.Lateness{up.Late, down.Late}
	}
	delivered := r.runAgents(ctx)
	for i, reg := range r.lab.Regions {
		up, down := reg.Stats()
		late[i] = [2]lab.Lateness{up.Late.After(before[i][0]), down.Late.After(before[i][1])}
	}
	if err := waitAgentRuns(ctx, r.conn, start, delivered); err != nil {
		return nil, nil, err
	}
	rep, err = queries.Run(ctx, r.conn, model.Options{Since: start, Until: time.Now().UTC().Add(time.Second), By: "continent",
		Agent: true, MinRuns: 1})
	if err != nil {
		return nil, nil, fmt.Errorf("lab agent report: %w", err)
	}
	fmt.Fprintln(r.out, "\nthe agent's runs:")
	if err := render.Table(r.out, rep); err != nil {
		return nil, nil, err
	}
	return rep, late, nil
}

// runAgents runs `h3rum agent` in every region's namespace, one region at
// a time, AgentRuns runs each, reporting over the collector's WebSocket
// ingest with the lab's agent token and trusting the collector's local CA.
// It returns the runs the agents delivered (each acknowledged: in the
// collector's spool).
func (r *run) runAgents(ctx context.Context) (delivered int) {
	exe, err := r.bin()
	if err != nil {
		fmt.Fprintf(r.out, "  agents: %v\n", err)
		return 0
	}
	addr := lab.CollectorAddr.String()
	for _, reg := range r.lab.Regions {
		rctx, cancel := context.WithTimeout(ctx, time.Duration(r.AgentRuns)*r.RunTimeout)
		cmd := exec.CommandContext(rctx, exe, "agent",
			"--h3", fmt.Sprintf("https://%s:%d", h3Host, h3Port), "--h2", fmt.Sprintf("https://%s:%d", h2Host, h2Port),
			"--ingest", fmt.Sprintf("wss://%s:%d/ingest/ws", h2Host, h2Port),
			"--resolve", h3Host+"="+addr, "--resolve", h2Host+"="+addr,
			"--ca", filepath.Join(r.dir, "dev-ca.pem"), "--site", "lab",
			"--count", strconv.Itoa(r.AgentRuns), "--interval", "1ms", "--timeout", agentTimeout(reg.Region).String())
		cmd.Env = append(os.Environ(), "H3RUM_AGENT_TOKEN="+r.token)
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = &buf, &buf
		// Forked on a thread inside the region's namespace, the agent
		// measures through the region's emulated path.
		err := reg.Namespace.Do(cmd.Start)
		if err == nil {
			err = cmd.Wait()
		}
		cancel()
		if err != nil {
			fmt.Fprintf(r.out, "  agent in %s: %v: %s\n", reg.Name, err, tailString(buf.String(), 3))
			continue
		}
		fmt.Fprintf(r.out, "  agent in %s: %d runs\n", reg.Name, r.AgentRuns)
		delivered += r.AgentRuns
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
