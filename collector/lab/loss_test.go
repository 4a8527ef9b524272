package lab

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLossModelStatistics draws a bounded number of packets from the loss
// model and checks its stationary loss rate and its mean run of losses
// against the configuration, within tolerances wide enough for the sample
// (a Gilbert run count over 400 000 packets at 5 % has a relative standard
// error of about 2 %; the tolerances are several of those) and narrow
// enough to catch a model off by a factor such as 1/(1-p).
func TestLossModelStatistics(t *testing.T) {
	const packets = 400_000
	for _, tc := range []struct {
		name           string
		lossPct, burst float64
	}{
		{"independent 1 %", 1, 0},
		{"independent 5 %", 5, 1},
		{"lossy region: 5 % in bursts of 3", 5, 3},
		{"far region: 1 % in bursts of 2", 1, 2},
		{"30 % in bursts of 10", 30, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newLossModel(tc.lossPct, tc.burst, rand.New(rand.NewPCG(1, 2)))
			var runs lossRuns
			var lost, bursts, longest uint64
			for range packets {
				l := m.lose()
				started, ended := runs.record(l)
				if started {
					bursts++
				}
				longest = max(longest, ended)
				if l {
					lost++
				}
			}
			rate := 100 * float64(lost) / packets
			if math.Abs(rate-tc.lossPct) > 0.1*tc.lossPct {
				t.Errorf("loss %.3f %%, configured %.1f %%", rate, tc.lossPct)
			}
			// Independent losses also come in runs: geometric with mean 1/(1-p).
			wantBurst := 1 / (1 - tc.lossPct/100)
			if tc.burst > 1 {
				wantBurst = tc.burst
			}
			mean := float64(lost) / float64(bursts)
			if math.Abs(mean-wantBurst) > 0.1*wantBurst {
				t.Errorf("mean run of losses %.3f packets, want %.3f", mean, wantBurst)
			}
			if tc.burst > 1 && longest < uint64(3*tc.burst) {
				t.Errorf("longest run %d: a geometric run of mean %.0f should reach %.0f in %d runs", longest, tc.burst, 3*tc.burst, bursts)
			}
			t.Logf("loss %.3f %%, %d runs, mean %.3f, longest %d", rate, bursts, mean, longest)
		})
	}
}

func TestLossRuns(t *testing.T) {
	var r lossRuns
	var got []uint64
	starts := 0
	for _, l := range []bool{false, true, true, true, false, true, false, false, true, true, false} {
		s, e := r.record(l)
		if s {
			starts++
		}
		if e > 0 {
			got = append(got, e)
		}
	}
	if starts != 3 || len(got) != 3 || got[0] != 3 || got[1] != 1 || got[2] != 2 {
		t.Errorf("runs %v from %d starts, want [3 1 2] from 3", got, starts)
	}
}
