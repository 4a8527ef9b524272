package queries

import (
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/stats"
)

// splitRun splits one run's samples as the per-run query sends them
// (stats.SplitRun), by the store's outcome codes.
func splitRun(d []float32, oc, par []uint8) stats.Run {
	return stats.SplitRun(d, oc, par, kindOf)
}

// kindOf is what an outcome code is to the statistics.
func kindOf(oc uint8) stats.Kind {
	switch store.Outcome(oc) {
	case store.OutcomeH2:
		return stats.KindH2
	case store.OutcomeH3:
		return stats.KindH3
	case store.OutcomeWantedH3GotH2:
		return stats.KindFallback
	}
	return stats.KindOther
}

// PairTieMS is the paired difference below which (in absolute value) a
// run is a tie (stats.PairTieMS).
const PairTieMS = stats.PairTieMS
