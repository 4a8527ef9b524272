// Package stats computes a report's statistics from plain slices of runs:
// order-balanced percentiles, the cluster bootstrap's intervals, the
// sufficiency rule, the power rule and the trend's rank intervals.
package stats
