package lab

import "math/rand/v2"

// lossModel decides which packets a path loses: each one independently, or
// in bursts with the two-state Gilbert model (the Gilbert-Elliott model with
// no loss in the good state and total loss in the bad one), whose mean loss
// is the configured share and whose mean run of losses is the burst length.
type lossModel struct {
	p           float64 // independent loss probability (burst ≤ 1)
	enter, exit float64 // good→bad and bad→good per packet (burst > 1)
	bursty, bad bool
	rng         *rand.Rand
}

func newLossModel(lossPct, burst float64, rng *rand.Rand) *lossModel {
	m := &lossModel{p: lossPct / 100, rng: rng}
	if burst > 1 && m.p > 0 {
		// Stationary P(bad) = enter/(enter+exit) = p; a bad run lasts 1/exit packets.
		m.bursty = true
		m.exit = 1 / burst
		m.enter = m.p * m.exit / (1 - m.p)
	}
	return m
}

// lose reports whether the next packet is lost.
func (m *lossModel) lose() bool {
	switch {
	case m.p == 0:
		return false
	case !m.bursty:
		return m.rng.Float64() < m.p
	case m.bad:
		m.bad = m.rng.Float64() >= m.exit
	default:
		m.bad = m.rng.Float64() < m.enter
	}
	return m.bad
}

// lossRuns counts the runs of consecutive packets a path lost, as the
// packets came (whatever their protocol): what the configured burst length
// is the mean of. Reader-only.
type lossRuns struct {
	inRun   bool
	current uint64
}

// record notes one packet's fate and returns whether it starts a run of
// losses and, when it ends one, that run's length (else 0).
func (r *lossRuns) record(lost bool) (started bool, ended uint64) {
	switch {
	case lost && !r.inRun:
		r.inRun, r.current = true, 1
		return true, 0
	case lost:
		r.current++
		return false, 0
	case r.inRun:
		r.inRun = false
		return false, r.current
	}
	return false, 0
}
