// Package stats computes a report's statistics from plain slices of runs:
// order-balanced percentiles, the cluster bootstrap's intervals, the
// sufficiency rule and the power rule.
package stats
