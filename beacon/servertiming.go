package beacon

import (
	"math"
	"slices"
	"strconv"
	"strings"
)

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
	MetricRetry    = "retry"   // desc: 1 when the connection paid a QUIC Retry's round trip; sent only then
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

// ServerTiming is what the collector told the browser about the connection
// the request arrived on (the Server-Timing header of /probe): a field for
// each metric of serverTimingMetrics.
type ServerTiming struct {
	Present   bool    // the header was visible to the page
	Proto     Proto   // protocol as the server saw it
	Handle    float64 // server handling time, ms
	RTT       float64 // smoothed RTT of the connection, ms
	MinRTT    float64 // minimum RTT of the connection, ms
	RTTVar    float64 // RTT variation, ms
	Lost      int     // packets lost (QUIC) or retransmitted segments (TCP)
	ConnID    string  // server-side connection id
	ConnReqs  int     // requests served on this connection, this one included
	ConnAge   float64 // time since the connection was accepted, ms; -1 when not reported (collectors before 1.1)
	Resumed   bool    // TLS session resumption
	EarlyData bool    // the request arrived as 0-RTT early data
	Retry     bool    // the connection paid a QUIC Retry's round trip before its handshake
}

// serverTimingMetric is one metric, the kind of its value and the field of
// ServerTiming that holds it (one of dur, count, flag and text; proto is
// the Proto field). Every reading and writing of a sample's sv — the
// decoder's two paths, the checks, Encode, the agent's reading of the
// header, the script's (ScriptDefine) — goes through this table, so that
// a metric is added here, in the collector's output (collector/origin)
// and in PROTOCOL.md.
type serverTimingMetric struct {
	name  string
	kind  metricKind
	least int                          // a count's least value (its greatest is maxCount, a flag's 1)
	dur   func(*ServerTiming) *float64 // metricDuration: ms, -1 when not sent
	count func(*ServerTiming) *int     // metricCount: 0 when not sent
	flag  func(*ServerTiming) *bool    // metricCount of 0 or 1
	text  func(*ServerTiming) *string  // metricText: "" when not sent
}

// serverTimingMetrics are the metrics in the order the collector sends
// them and PROTOCOL.md lists them.
var serverTimingMetrics = [...]serverTimingMetric{
	{name: MetricProto, kind: metricProto},
	{name: MetricApp, kind: metricDuration, dur: func(st *ServerTiming) *float64 { return &st.Handle }},
	{name: MetricRTT, kind: metricDuration, dur: func(st *ServerTiming) *float64 { return &st.RTT }},
	{name: MetricMinRTT, kind: metricDuration, dur: func(st *ServerTiming) *float64 { return &st.MinRTT }},
	{name: MetricRTTVar, kind: metricDuration, dur: func(st *ServerTiming) *float64 { return &st.RTTVar }},
	{name: MetricLost, kind: metricCount, count: func(st *ServerTiming) *int { return &st.Lost }},
	{name: MetricConnID, kind: metricText, text: func(st *ServerTiming) *string { return &st.ConnID }},
	{name: MetricConnReqs, kind: metricCount, least: 1, count: func(st *ServerTiming) *int { return &st.ConnReqs }},
	{name: MetricConnAge, kind: metricDuration, dur: func(st *ServerTiming) *float64 { return &st.ConnAge }},
	{name: MetricResumed, kind: metricCount, flag: func(st *ServerTiming) *bool { return &st.Resumed }},
	{name: MetricEarly, kind: metricCount, flag: func(st *ServerTiming) *bool { return &st.EarlyData }},
	{name: MetricRetry, kind: metricCount, flag: func(st *ServerTiming) *bool { return &st.Retry }},
}

// A full sv must pass checkKeys, which allows 16 keys an object (and
// wireServer.sent has a bit a metric): a 17th metric fails to compile.
var _ [16 - len(serverTimingMetrics)]struct{}

// ServerTimingMetrics returns the metric names in the order the collector
// sends them.
func ServerTimingMetrics() []string {
	names := make([]string, len(serverTimingMetrics))
	for i, m := range serverTimingMetrics {
		names[i] = m.name
	}
	return slices.Clip(names)
}

// metricIndex returns the place of the metric name in serverTimingMetrics,
// or -1: a slot of metricSlots, checked by one comparison, and a search
// where two names share the slot. It runs for every key of every sample's
// sv on the fast path.
func metricIndex(name string) int {
	if name == "" {
		return -1
	}
	switch i := metricSlots[metricSlot(name)]; {
	case i >= 0 && serverTimingMetrics[i].name == name:
		return int(i)
	case i != shared:
		return -1
	}
	for i := range serverTimingMetrics {
		if serverTimingMetrics[i].name == name {
			return i
		}
	}
	return -1
}

// metricSlots maps metricSlot of each name to its place: -1 where no name
// falls, shared where several do.
var metricSlots = func() (t [64]int8) {
	for i := range t {
		t[i] = -1
	}
	for i, m := range serverTimingMetrics {
		if h := metricSlot(m.name); t[h] == -1 {
			t[h] = int8(i)
		} else {
			t[h] = shared
		}
	}
	return t
}()

const shared = -2 // a slot of metricSlots that several names fall in

// metricSlot is a hash of a non-empty name into metricSlots.
func metricSlot(k string) int { return (len(k)*31 + int(k[0])*7 + int(k[len(k)-1])) & 63 }

// unsent is a ServerTiming of which no metric was sent.
var unsent = func() ServerTiming {
	st := ServerTiming{Proto: ProtoUnknown}
	for _, m := range serverTimingMetrics {
		if m.dur != nil {
			*m.dur(&st) = -1
		}
	}
	return st
}()

// NoServerTiming returns the ServerTiming of a sample without Server-Timing:
// Present false, every duration -1, every count 0, proto unknown.
func NoServerTiming() ServerTiming { return unsent }

// ReadMetric sets st's metric name from one Server-Timing entry, as the
// script reads it (PROTOCOL.md, "sv"): a duration from dur (nil when the
// entry has none), in ms rounded to 1 µs; a count from a desc of 1 to
// MaxCountDigits digits; proto from desc, normalised as the script's
// proto(); a text metric from desc as it is. It reports whether name is a
// metric with a value the wire format accepts; anything else leaves st as
// it was, so that one odd entry cannot make a whole report invalid.
func (st *ServerTiming) ReadMetric(name string, dur, desc *string) bool {
	i := metricIndex(name)
	if i < 0 {
		return false
	}
	m := &serverTimingMetrics[i]
	if m.kind == metricDuration {
		if dur == nil {
			return false
		}
		f, err := strconv.ParseFloat(*dur, 64)
		if err != nil || !(f >= 0 && f <= MaxDurationMS) {
			return false
		}
		*m.dur(st) = math.Round(f*1000) / 1000
		return true
	}
	if desc == nil {
		return false
	}
	switch m.kind {
	case metricProto:
		st.Proto = normaliseProto(*desc)
	case metricText:
		if checkText(*desc, maxTextLen, isTokenChar, "", 0) != nil {
			return false
		}
		*m.text(st) = *desc
	case metricCount:
		n, ok := countDigits(*desc)
		if !ok || n < m.least || m.flag != nil && n > 1 {
			return false
		}
		if m.flag != nil {
			*m.flag(st) = n == 1
		} else {
			*m.count(st) = n
		}
	}
	return true
}

// normaliseProto maps a protocol name as the script's proto() does: h3
// (also h3-29, hq…, anything with quic), h2 (also http/2…), h1
// (http/1.x), else unknown.
func normaliseProto(p string) Proto {
	l := strings.ToLower(p)
	switch {
	case strings.HasPrefix(l, "h3"), strings.HasPrefix(l, "hq"), strings.Contains(l, "quic"):
		return ProtoH3
	case strings.HasPrefix(l, "h2"), strings.HasPrefix(l, "http/2"):
		return ProtoH2
	case strings.HasPrefix(l, "http/1"):
		return ProtoH1
	}
	return ProtoUnknown
}

// countDigits parses 1 to MaxCountDigits decimal digits, as the script's
// /^\d{1,9}$/.
func countDigits(s string) (int, bool) {
	if s == "" || len(s) > MaxCountDigits {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}
