package main

import (
	"os"
	"strconv"
	"testing"
)

// TestMain runs the tests, or, told by the environment, the load generator
// process of BenchmarkProbeUnderIngestSplit.
func TestMain(m *testing.M) {
	if origin := os.Getenv(loadgenEnv); origin != "" {
		seconds, err := strconv.Atoi(os.Getenv(loadgenSecondsEnv))
		if err != nil || seconds <= 0 || seconds > 120 {
			os.Stderr.WriteString("load generator: " + loadgenSecondsEnv + " must be 1 to 120\n")
			os.Exit(2)
		}
		os.Exit(loadgen(origin, seconds))
	}
	os.Exit(m.Run())
}
