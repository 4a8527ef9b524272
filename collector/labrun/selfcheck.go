package labrun

import (
	"fmt"
	"strings"

	"github.com/h3rum/h3rum/collector/lab"
	"github.com/h3rum/h3rum/queries/model"
)

// verdicts runs the lab package's self-check over the passes and prints
// it, with the emulator's packet counts per region; it returns whether
// every check passed.
func (r *run) verdicts(passes []*pass, agentRep *model.Report, agentLate [][2]lab.Lateness) bool {
	obs := make([]lab.Observed, len(r.lab.Regions))
	fmt.Fprintln(r.out, "\nthe packets' fate per region and direction (loss model's own counters; udp = QUIC, the rest TCP):")
	for i, reg := range r.lab.Regions {
		up, down := reg.Stats()
		obs[i] = lab.Observed{Region: reg.Region, UpStats: up, DownStats: down, AgentUp: agentLate[i][0], AgentDown: agentLate[i][1]}
		for _, d := range []struct {
			name string
			p    lab.Path
			st   lab.Stats
		}{{"up", reg.Up, up}, {"down", reg.Down, down}} {
			if d.p.LossPct == 0 && d.st.Blocked == 0 {
				continue
			}
			fmt.Fprintln(r.out, packetLine(reg.Name, d.name, d.p, d.st))
		}
	}
	ps := make([]lab.Pass, len(passes))
	for i, p := range passes {
		planned := map[string]int{}
		for _, reg := range r.lab.Regions {
			planned[reg.Name] = runsOf(reg, p.engine, p.runs)
		}
		ps[i] = lab.Pass{Engine: p.engine.name, Timed: i == 0, Planned: planned, Failed: p.failed, Report: p.rep}
	}
	res := lab.SelfCheck{Tolerance: r.Tolerance}.Judge(obs, ps, agentRep)
	fmt.Fprintln(r.out)
	res.Write(r.out, obs)
	failed := 0
	for _, p := range passes {
		for _, n := range p.failed {
			failed += n
		}
	}
	if failed > 0 {
		fmt.Fprintf(r.out, "failed visits: %d (counted above; a region fails only with too few stored runs to check)\n", failed)
	}
	return res.OK()
}

// packetLine is one direction's packet counts in region: QUIC's and TCP's
// losses, the runs of losses against the configured model, the queue's
// drops and the blocked packets.
func packetLine(region, dir string, p lab.Path, st lab.Stats) string {
	tcpIn, tcpLost := st.In-st.UDPIn, st.Lost-st.UDPLost
	return fmt.Sprintf("  %-12s %-4s udp lost %d/%d (%.2f %%), tcp lost %d/%d (%.2f %%); %d runs of losses, mean %.2f (configured %g %% in runs of %.1f), longest %d; queue full %d, blocked %d",
		region, dir, st.UDPLost, st.UDPIn, pct(st.UDPLost, st.UDPIn), tcpLost, tcpIn, pct(tcpLost, tcpIn),
		st.Bursts, st.MeanBurst(), p.LossPct, max(1, p.LossBurst), st.LongestBurst, st.QueueFull, st.Blocked)
}

// pct is n as a percentage of of; 0 when of is 0.
func pct(n, of uint64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

// tailString is the last n lines of s, without surrounding blank space.
func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
