package beacon

import (
	"math/bits"
	"strconv"
	"strings"
)

// ScriptDefine is the wire's vocabulary as the script's build receives it:
// esbuild replaces each identifier in src/ with its value, a JSON literal,
// and folds it like a constant written there (go generate ./beacon), so
// the script holds no copy of a limit, default or name of this package.
//
//	__H3RUM_WIRE_VERSION__         Version, the report's "v"
//	__H3RUM_REQUEST_TIMEOUT_MS__   RequestTimeoutMS, when a probe request is aborted
//	__H3RUM_MAX_DURATION_MS__      MaxDurationMS, the most any time on the wire may be
//	__H3RUM_MAX_MAIN_THREAD_MS__   MaxMainThread, the most a report's mt may be
//	__H3RUM_<PARAM>_DEFAULT__      an integer parameter's default and range
//	__H3RUM_<PARAM>_MIN__          (ScriptParams: PARALLEL, WARMUP, BYTES)
//	__H3RUM_<PARAM>_MAX__
//	__H3RUM_<PARAM>_MAX_BITS__     log2 of the MAX that is a power of two (BYTES)
//	__H3RUM_SV__                   the Server-Timing metrics read from dur (1)
//	                               or as a count (2): {"app":1,…,"early":2}
//	__H3RUM_SV_<METRIC>__          a metric's name (SV_PROTO, …, SV_EARLY:
//	                               ServerTimingMetrics)
//	__H3RUM_SV_COUNT_DIGITS__      MaxCountDigits
//
// The build reads each source through define before it bundles and
// minifies them (internal/jsbuild), so a value costs what the same literal
// typed there would: an object becomes one variable of the module that
// uses it.
func ScriptDefine() map[string]string {
	d := map[string]string{
		"__H3RUM_WIRE_VERSION__":       strconv.Itoa(Version),
		"__H3RUM_REQUEST_TIMEOUT_MS__": strconv.Itoa(RequestTimeoutMS),
		"__H3RUM_SV_COUNT_DIGITS__":    strconv.Itoa(MaxCountDigits),
		"__H3RUM_MAX_DURATION_MS__":    strconv.Itoa(MaxDurationMS),
		"__H3RUM_MAX_MAIN_THREAD_MS__": strconv.Itoa(MaxMainThread),
	}
	for _, p := range scriptParamList {
		if p.hi == 0 {
			continue
		}
		k := "__H3RUM_" + strings.ToUpper(p.Name)
		d[k+"_DEFAULT__"] = strconv.Itoa(p.def)
		d[k+"_MIN__"] = strconv.Itoa(p.lo)
		d[k+"_MAX__"] = strconv.Itoa(p.hi)
		// A power of two also as its exponent: the minifier keeps 1<<24
		// as written, and never turns 16777216 into it.
		if bits.OnesCount(uint(p.hi)) == 1 {
			d[k+"_MAX_BITS__"] = strconv.Itoa(bits.TrailingZeros(uint(p.hi)))
		}
	}
	for _, m := range serverTimingMetrics {
		d["__H3RUM_SV_"+strings.ToUpper(m.name)+"__"] = strconv.Quote(m.name)
	}
	// Durations first, then counts, each in the header's order: the
	// object the script has always had.
	var sv strings.Builder
	for _, kind := range []metricKind{metricDuration, metricCount} {
		for _, m := range serverTimingMetrics {
			if m.kind == kind {
				if sv.Len() > 0 {
					sv.WriteByte(',')
				}
				sv.WriteString(strconv.Quote(m.name) + ":" + strconv.Itoa(int(kind)))
			}
		}
	}
	d["__H3RUM_SV__"] = "{" + sv.String() + "}"
	return d
}
