package beacon

import "slices"

// Server-Timing metric names of a /probe response (PROTOCOL.md, "sv"): the
// collector sends them, the script and the agent read them, and they are
// the keys of a sample's "sv" object.
const (
	MetricProto    = "proto"   // desc: the protocol the server saw
	MetricApp      = "app"     // dur: server handling time
	MetricRTT      = "rtt"     // dur: the connection's smoothed RTT
	MetricMinRTT   = "minrtt"  // dur: its minimum RTT
	MetricRTTVar   = "rttvar"  // dur: its RTT variation
	MetricLost     = "lost"    // desc: packets lost (QUIC) or retransmitted segments (TCP)
	MetricConnID   = "cid"     // desc: server connection id
	MetricConnReqs = "creq"    // desc: requests served on the connection, this one included
	MetricConnAge  = "age"     // dur: time since the connection was accepted
	MetricResumed  = "resumed" // desc: 1 when TLS resumed a session, else 0
	MetricEarly    = "early"   // desc: 1 when the request came as 0-RTT early data, else 0
)

// MaxCountDigits is the most decimal digits of a count metric's desc
// (lost, creq, resumed, early) that the script and the agent read: up to
// 999,999,999, within maxCount.
const MaxCountDigits = 9

// metricKind says where a metric's value is and how it is read. The
// duration and count kinds' numbers are the script's own codes for them
// (ScriptDefine's __H3RUM_SV__).
type metricKind int

const (
	metricDuration metricKind = 1 // dur, ms, rounded to 1 µs
	metricCount    metricKind = 2 // desc, 1 to MaxCountDigits decimal digits
	metricProto    metricKind = 3 // desc, normalised like nextHopProtocol
	metricText     metricKind = 4 // desc as it is
)

// serverTimingMetric is one metric and the kind of its value.
type serverTimingMetric struct {
	name string
	kind metricKind
}

// serverTimingMetrics are the metrics in the order the collector sends
// them and PROTOCOL.md lists them.
var serverTimingMetrics = []serverTimingMetric{
	{MetricProto, metricProto},
	{MetricApp, metricDuration},
	{MetricRTT, metricDuration},
	{MetricMinRTT, metricDuration},
	{MetricRTTVar, metricDuration},
	{MetricLost, metricCount},
	{MetricConnID, metricText},
	{MetricConnReqs, metricCount},
	{MetricConnAge, metricDuration},
	{MetricResumed, metricCount},
	{MetricEarly, metricCount},
}

// ServerTimingMetrics returns the metric names in the order the collector
// sends them.
func ServerTimingMetrics() []string {
	names := make([]string, len(serverTimingMetrics))
	for i, m := range serverTimingMetrics {
		names[i] = m.name
	}
	return slices.Clip(names)
}
