package store

import "github.com/h3rum/h3rum/beacon"

// RunFlags is what run_counts and run_fact_counts count of a run, computed
// once at insert and stored on the samples that carry them
// (samples.run_flags, 0 on every other): the views then count runs as
// those samples, one row a run, instead of the distinct run ids of every
// sample, which cost ClickHouse CPU on every insert.
// Each flag is one the runs table gives of the run's parallel requests
// (schema/runs_mv.sql), as the report's run counts read it.
type RunFlags uint32

const (
	RunCounted       RunFlags = 1 << iota // on the sample that carries the run's flags
	RunOutcomeOther                       // a request of outcome other (Outcome codes in order from here)
	RunOutcomeH2                          // … of outcome h2
	RunOutcomeH3                          // … of outcome h3
	RunOutcomeWanted                      // … of outcome wanted_h3_got_h2
	RunColdH2                             // a cold request to the H2 origin
	RunColdH3                             // a cold request to the H3 origin
	RunToH2                               // a request to the H2 origin
	RunToH3                               // a request to the H3 origin
	RunFailedH2                           // a failed request to the H2 origin
	RunFailedH3                           // a failed request to the H3 origin
	RunH3Short                            // a request to the H3 origin not served over h3, or failed
	// The first-contact flags, which run_fact_counts counts, are on the
	// run's first sample whatever its phase (run_facts holds runs cut short
	// in their warm-ups too), marked RunFacts.
	RunFacts    // on the sample that carries the first-contact flags
	RunH3Wanted // a request to the H3 origin (run_facts.h3_wanted)
	RunFirstH3  // … the first of which, seq 0, succeeded over h3 (first_known and first_h3)
	RunUpgraded // … succeeded over h1 or h2, and a later one to the H3 origin over h3
	RunNeverH3  // … succeeded over h1 or h2, and no later one over h3
)

// runFlagNames names the flags for the schema's templates (dialect.RunFlag).
var runFlagNames = map[string]RunFlags{
	"counted": RunCounted, "other": RunOutcomeOther, "h2": RunOutcomeH2, "h3": RunOutcomeH3,
	"wanted_h3_got_h2": RunOutcomeWanted, "cold_h2": RunColdH2, "cold_h3": RunColdH3,
	"to_h2": RunToH2, "to_h3": RunToH3, "failed_h2": RunFailedH2, "failed_h3": RunFailedH3,
	"h3_short": RunH3Short, "facts": RunFacts, "h3_wanted": RunH3Wanted, "first_h3": RunFirstH3,
	"upgraded": RunUpgraded, "never_h3": RunNeverH3,
}

// runFlagsOf returns run's flags and the index of the sample that carries
// them, its first parallel one; -1 when it has none (the runs table holds
// no such run, and run_counts does not count it).
func runFlagsOf(run *Run, cold seqSet) (RunFlags, int) {
	var f RunFlags
	at := -1
	for i := range run.Report.Samples {
		s := &run.Report.Samples[i]
		if s.Phase != beacon.PhaseParallel {
			continue
		}
		if at < 0 {
			at = i
		}
		f |= RunCounted | RunOutcomeOther<<uint(OutcomeOf(s.Want, s.Got))
		switch s.Want {
		case beacon.ProtoH2:
			f |= RunToH2
			if cold.has(s.Seq) {
				f |= RunColdH2
			}
			if s.Error != "" {
				f |= RunFailedH2
			}
		case beacon.ProtoH3:
			f |= RunToH3
			if cold.has(s.Seq) {
				f |= RunColdH3
			}
			if s.Error != "" {
				f |= RunFailedH3
			}
			if s.Error != "" || OutcomeOf(s.Want, s.Got) != OutcomeH3 {
				f |= RunH3Short
			}
		}
	}
	return f, at
}

// factFlagsOf returns run's first-contact flags, as run_facts_mv computes
// them from its samples (schema/run_facts_mv.sql), for its first sample;
// none for a run without samples.
func factFlagsOf(run *Run) RunFlags {
	if len(run.Report.Samples) == 0 {
		return 0
	}
	f := RunFacts
	var firstKnown, firstH3, laterH3 bool
	for i := range run.Report.Samples {
		s := &run.Report.Samples[i]
		if s.Want != beacon.ProtoH3 {
			continue
		}
		f |= RunH3Wanted
		ok := s.Error == ""
		switch {
		case storedSeq(s) == 0 && s.Phase == beacon.PhaseWarmup && ok &&
			(s.Got == beacon.ProtoH1 || s.Got == beacon.ProtoH2 || s.Got == beacon.ProtoH3):
			firstKnown = true
			firstH3 = firstH3 || s.Got == beacon.ProtoH3
		case storedSeq(s) > 0 && ok && s.Got == beacon.ProtoH3:
			laterH3 = true
		}
	}
	switch {
	case !firstKnown:
	case firstH3:
		f |= RunFirstH3
	case laterH3:
		f |= RunUpgraded
	default:
		f |= RunNeverH3
	}
	return f
}

// flagsOn is samples.run_flags of the row of s: the run's flags on the
// samples that carry them, 0 on every other (and on handshakes, which are
// another slice).
func (r *runRow) flagsOn(s *beacon.Sample) uint32 {
	var f RunFlags
	if len(r.Report.Samples) > 0 && s == &r.Report.Samples[0] {
		f = r.facts
	}
	if r.flagsAt >= 0 && s == &r.Report.Samples[r.flagsAt] {
		f |= r.flags
	}
	return uint32(f)
}
