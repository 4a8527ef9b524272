package store

import "github.com/h3rum/h3rum/beacon"

// RunFlags is what run_counts counts of a run, computed once at insert and
// stored on one of its parallel samples (samples.run_flags, 0 on every
// other): run_counts_mv then counts runs as those samples, one row a run,
// instead of the distinct run ids of every sample (which took a third more
// of ClickHouse's CPU per inserted sample than all the other views).
// Each flag is one the runs table gives of the run's parallel requests
// (schema/runs_mv.sql), as the report's run counts read it.
type RunFlags uint16

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
)

// runFlagNames names the flags for the schema's templates (dialect.RunFlag).
var runFlagNames = map[string]RunFlags{
	"counted": RunCounted, "other": RunOutcomeOther, "h2": RunOutcomeH2, "h3": RunOutcomeH3,
	"wanted_h3_got_h2": RunOutcomeWanted, "cold_h2": RunColdH2, "cold_h3": RunColdH3,
	"to_h2": RunToH2, "to_h3": RunToH3, "failed_h2": RunFailedH2, "failed_h3": RunFailedH3,
	"h3_short": RunH3Short,
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

// flagsOn is samples.run_flags of the row of s: the run's flags on the
// sample that carries them, 0 on every other (and on handshakes, which are
// another slice).
func (r *runRow) flagsOn(s *beacon.Sample) uint16 {
	if r.flagsAt < 0 || s != &r.Report.Samples[r.flagsAt] {
		return 0
	}
	return uint16(r.flags)
}
