package store_test

import (
	"testing"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/beacontest"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/ingest/store/storetest"
)

func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		want, got beacon.Proto
		out       store.Outcome
		name      string
	}{
		{beacon.ProtoH2, beacon.ProtoH2, store.OutcomeH2, "h2"},
		{beacon.ProtoH3, beacon.ProtoH3, store.OutcomeH3, "h3"},
		{beacon.ProtoH3, beacon.ProtoH2, store.OutcomeWantedH3GotH2, "wanted_h3_got_h2"},
		{beacon.ProtoH3, beacon.ProtoH1, store.OutcomeWantedH3GotH2, "wanted_h3_got_h2"},
		{beacon.ProtoH2, beacon.ProtoH1, store.OutcomeOther, "other"},
		{beacon.ProtoH2, beacon.ProtoH3, store.OutcomeOther, "other"},
		{beacon.ProtoH3, beacon.ProtoUnknown, store.OutcomeOther, "other"},
	} {
		if got := store.OutcomeOf(tc.want, tc.got); got != tc.out || got.String() != tc.name {
			t.Errorf("OutcomeOf(%s, %s) = %v %q, want %v %q", tc.want, tc.got, got, got.String(), tc.out, tc.name)
		}
	}
}

// TestExclusionsOf plants each trap of the like-for-like rule in an
// otherwise clean run (2 H3 warm-ups, one H2 warm-up, 5+5 on the warm
// connections) and checks that exactly its reason is reported.
func TestExclusionsOf(t *testing.T) {
	// Samples of a clean run: 0, 1 warm-ups to H3; 2 the H2 warm-up;
	// 3–7 the H3 batch; 8–12 the H2 batch.
	for _, tc := range []struct {
		name   string
		plant  func(r *store.Run)
		warmup int
		want   store.Exclusions
	}{
		{"clean", func(*store.Run) {}, 2, 0},
		{"fallback", func(r *store.Run) { r.Report.Samples[4].Got = beacon.ProtoH2 }, 2, store.ExcludeFallback},
		{"cold h3 by connection id", func(r *store.Run) { r.Report.Samples[5].Server.ConnID = "new" }, 2, store.ExcludeCold},
		{"cold requests named", func(r *store.Run) {
			r.Report.Samples[5].Server.ConnID = "new"
			r.Report.Samples[11].Server.ConnID = "other"
			if got := store.ColdSeqs(r); len(got) != 2 || !got[5] || !got[11] {
				t.Errorf("ColdSeqs = %v, want seqs 5 and 11", got)
			}
		}, 2, store.ExcludeCold},
		{"cold h2 by connection id", func(r *store.Run) { r.Report.Samples[9].Server.ConnID = "new" }, 2, store.ExcludeCold},
		{"cold without Server-Timing: new connection", func(r *store.Run) {
			s := &r.Report.Samples[10]
			s.Server = beacon.ServerTiming{}
			s.Reused, s.Connect = false, 40
		}, 2, store.ExcludeCold},
		{"warm without Server-Timing: reused", func(r *store.Run) { r.Report.Samples[10].Server = beacon.ServerTiming{} }, 2, 0},
		{"failed warm-up", func(r *store.Run) { r.Report.Samples[1].Error = "timeout" }, 2, store.ExcludeWarmupFailed},
		{"no H2 warm-up", func(r *store.Run) { r.Report.Samples[2].Phase = beacon.PhaseParallel; r.Report.Params.Parallel = 4 },
			2, store.ExcludeWarmupFailed | store.ExcludeCold},
		{"short warm-up", func(*store.Run) {}, 1, store.ExcludeShortWarmup},
		{"page hidden", func(r *store.Run) { r.Report.Partial = true }, 2, store.ExcludePartial},
		{"batch short of the design", func(r *store.Run) { r.Report.Samples = r.Report.Samples[:12] }, 2, store.ExcludePartial},
		{"failed batch request", func(r *store.Run) { r.Report.Samples[6].Error = "timeout" }, 2, store.ExcludeFailed},
		{"bot", func(r *store.Run) { r.Bot = true }, 2, store.ExcludeBot},
		{"several", func(r *store.Run) { r.Bot = true; r.Report.Samples[4].Got = beacon.ProtoH2 }, 2,
			store.ExcludeBot | store.ExcludeFallback},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := storetest.RunOf(t, beacontest.Run{Warmup: tc.warmup})
			tc.plant(&run)
			if got := store.ExclusionsOf(&run); got != tc.want {
				t.Errorf("ExclusionsOf = %08b, want %08b", got, tc.want)
			}
			// The cold requests are named by seq exactly when the run is cold.
			if cold := store.ColdSeqs(&run); (len(cold) > 0) != (tc.want&store.ExcludeCold != 0) {
				t.Errorf("ColdSeqs = %v with exclusions %08b", cold, tc.want)
			}
		})
	}
	if len(store.ExclusionNames) != 8 {
		t.Errorf("%d exclusion names for 8 bits", len(store.ExclusionNames))
	}
}
