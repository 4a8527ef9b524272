package queries

import (
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/stats"
)

// Every figure of the headline weighs the two batch orders equally (the
// crossover's estimator, stats/order.go); the query code averages the
// per-order quantiles ClickHouse returns with the same balance.

// Batch order indices of the per-order arrays (stats.H2First, H3First).
const (
	orderH2First = stats.H2First
	orderH3First = stats.H3First
)

// orderIndex maps a batch order name to its index (ok false for "").
func orderIndex(name string) (int, bool) {
	switch name {
	case model.OrderNames()[orderH2First]:
		return orderH2First, true
	case model.OrderNames()[orderH3First]:
		return orderH3First, true
	}
	return 0, false
}

// balance is stats.Balance: the mean of the two orders' values, or the one
// order's.
func balance(v *[2][]float64, ok [2]bool, out []float64) bool { return stats.Balance(v, ok, out) }
