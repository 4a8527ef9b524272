package origin

import (
	"os"
	"runtime/debug"
)

// TuneGC sets the garbage collector's defaults for a process that serves
// probes, unless the GOGC or GOMEMLIMIT environment variables are set. A
// program calls it once, first thing in main.
//
// A probe server's live heap is small while every request allocates a
// little, so at the default GOGC the collector's assists land in request
// handling and inflate the probe's tail; the soft memory limit bounds the
// heap when ingest batches grow it.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(256 << 20)
	}
}
