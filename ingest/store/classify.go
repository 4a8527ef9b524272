package store

import (
	"maps"
	"slices"

	"github.com/h3rum/h3rum/beacon"
)

// Outcome is how a sample's request went, protocol-wise: the classification
// every report and the live feed use. It is computed here, at ingest, and
// stored in the samples column outcome (Enum8, the same numbers).
type Outcome int8

// Outcomes. The numbers are the Enum8 values of the outcome column.
const (
	OutcomeOther         Outcome = 0 // anything else: h1 to the H2 origin, unknown protocol, …
	OutcomeH2            Outcome = 1 // sent to the H2 origin, served over h2
	OutcomeH3            Outcome = 2 // sent to the H3 origin, served over h3
	OutcomeWantedH3GotH2 Outcome = 3 // sent to the H3 origin, served over TCP (h2 or h1): a fallback
)

// String is the outcome's name in the outcome column and in reports.
func (o Outcome) String() string {
	switch o {
	case OutcomeH2:
		return "h2"
	case OutcomeH3:
		return "h3"
	case OutcomeWantedH3GotH2:
		return "wanted_h3_got_h2"
	}
	return "other"
}

// OutcomeOf classifies a request sent to the origin for want that was
// served over got.
func OutcomeOf(want, got beacon.Proto) Outcome {
	switch {
	case want == beacon.ProtoH2 && got == beacon.ProtoH2:
		return OutcomeH2
	case want == beacon.ProtoH3 && got == beacon.ProtoH3:
		return OutcomeH3
	case want == beacon.ProtoH3 && (got == beacon.ProtoH2 || got == beacon.ProtoH1):
		return OutcomeWantedH3GotH2
	}
	return OutcomeOther
}

// Exclusions are the reasons a run is left out of the like-for-like
// headline, which compares HTTP/3 with HTTP/2 only on complete pairs: both
// parallel batches complete, every request on its intended protocol and on
// a connection the warm-up opened. A run may have several; 0 means none. They
// are computed once, here at ingest, and stored with every sample of the run
// (column exclusions) so that every query reads the same rule.
type Exclusions uint8

// Exclusion reasons, as bits of the exclusions column.
const (
	// ExcludeFallback: a request of the H3 batch was served over TCP
	// (h2/h1): UDP blocked or QUIC broken on this network.
	ExcludeFallback Exclusions = 1 << iota
	// ExcludeCold: a batch request used a connection the warm-up of its
	// origin did not use (by the server's connection id, or where that is
	// not visible, a connection the browser had to set up), so it paid for a
	// handshake or won a TCP-vs-QUIC race.
	ExcludeCold
	// ExcludeWarmupFailed: a warm-up request failed, or the H2 warm-up is
	// missing.
	ExcludeWarmupFailed
	// ExcludeShortWarmup: fewer than 2 sequential warm-ups to the H3 origin
	// (data-warmup < 2): the first is always TCP, so no QUIC connection was
	// verified warm.
	ExcludeShortWarmup
	// ExcludePartial: the page was hidden or closed mid-run, or a batch
	// holds fewer requests than the run's design.
	ExcludePartial
	// ExcludeFailed: a batch request failed or timed out.
	ExcludeFailed
	// ExcludeBot: a headless or automated browser.
	ExcludeBot
	// ExcludeUnchecked: stored before these checks existed; the checks
	// need the whole run and cannot be made on old rows.
	ExcludeUnchecked
)

// ExclusionNames names each reason bit, in bit order, as reports show it.
var ExclusionNames = [...]string{"fallback", "cold", "warmup_failed", "short_warmup", "partial", "failed", "bot", "unchecked"}

// ExclusionsOf checks run against the like-for-like rules.
func ExclusionsOf(run *Run) Exclusions {
	x, _ := classifyRun(run)
	return x
}

// ColdSeqs returns the seq numbers of run's batch requests that used a
// connection their origin's warm-up did not (the cold rule of
// ExcludeCold), for the samples column cold.
func ColdSeqs(run *Run) map[int]bool {
	_, cold := classifyRun(run)
	return cold.all()
}

// classifyRun applies the like-for-like rules to run: its exclusions, and
// which batch requests were cold. It runs for every run inserted, so it
// keeps to the stack: a report has at most a few warm-up connections.
func classifyRun(run *Run) (Exclusions, seqSet) {
	var x Exclusions
	var cold seqSet
	if run.Bot {
		x |= ExcludeBot
	}
	rep := run.Report
	if rep == nil {
		return x | ExcludePartial, cold
	}
	if rep.Partial {
		x |= ExcludePartial
	}
	if rep.Params.Warmup < 2 {
		x |= ExcludeShortWarmup
	}
	// The connection ids each origin's warm-up used.
	warmH2, warmH3 := make([]string, 0, 4), make([]string, 0, beacon.MaxWarmup)
	warm := func(want beacon.Proto, id string) bool {
		switch want {
		case beacon.ProtoH2:
			return slices.Contains(warmH2, id)
		case beacon.ProtoH3:
			return slices.Contains(warmH3, id)
		}
		return false
	}
	h2Warmup := false
	for i := range rep.Samples {
		s := &rep.Samples[i]
		if s.Phase != beacon.PhaseWarmup {
			continue
		}
		if s.Error != "" {
			x |= ExcludeWarmupFailed
		}
		if s.Want == beacon.ProtoH2 {
			h2Warmup = true
		}
		if s.Server.Present && s.Server.ConnID != "" && !warm(s.Want, s.Server.ConnID) {
			switch s.Want {
			case beacon.ProtoH2:
				warmH2 = append(warmH2, s.Server.ConnID)
			case beacon.ProtoH3:
				warmH3 = append(warmH3, s.Server.ConnID)
			}
		}
	}
	if !h2Warmup {
		x |= ExcludeWarmupFailed
	}
	var batchH2, batchH3 int
	for i := range rep.Samples {
		s := &rep.Samples[i]
		if s.Phase != beacon.PhaseParallel {
			continue
		}
		switch s.Want {
		case beacon.ProtoH2:
			batchH2++
		case beacon.ProtoH3:
			batchH3++
		}
		switch {
		case s.Error != "":
			x |= ExcludeFailed
			continue
		case s.Want == beacon.ProtoH3 && s.Got != beacon.ProtoH3:
			x |= ExcludeFallback
		}
		if (s.Server.Present && s.Server.ConnID != "" && !warm(s.Want, s.Server.ConnID)) ||
			((!s.Server.Present || s.Server.ConnID == "") && (!s.Reused || s.Connect > 0)) {
			x |= ExcludeCold
			cold.add(s.Seq)
		}
	}
	if n := rep.Params.Parallel; batchH2 < n || batchH3 < n {
		x |= ExcludePartial
	}
	return x, cold
}

// seqSet is a set of sample seq numbers: a bit each for those below 64
// (every seq a report can carry, beacon.MaxSamples), a map for others.
type seqSet struct {
	bits  uint64
	other map[int]bool
}

func (s *seqSet) add(seq int) {
	if seq >= 0 && seq < 64 {
		s.bits |= 1 << seq
		return
	}
	if s.other == nil {
		s.other = map[int]bool{}
	}
	s.other[seq] = true
}

func (s *seqSet) has(seq int) bool {
	if seq >= 0 && seq < 64 {
		return s.bits&(1<<seq) != 0
	}
	return s.other[seq]
}

// all returns the set as a map, nil when it is empty.
func (s *seqSet) all() map[int]bool {
	if s.bits == 0 && len(s.other) == 0 {
		return nil
	}
	m := maps.Clone(s.other)
	if m == nil {
		m = map[int]bool{}
	}
	for seq := range 64 {
		if s.bits&(1<<seq) != 0 {
			m[seq] = true
		}
	}
	return m
}
