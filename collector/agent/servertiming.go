package agent

import (
	"math"
	"strconv"
	"strings"

	"github.com/h3rum/h3rum/beacon"
)

// parseServerTiming reads the collector's Server-Timing metrics (the
// header's field values, in order) into a sample's ServerTiming, as the
// script's serverTiming does (PROTOCOL.md, "sv"): proto from its desc,
// normalised; app, rtt, minrtt, rttvar and age from dur, in ms rounded to
// 1 µs; lost, creq, resumed and early from a desc of up to 9 digits; cid
// from desc. A value outside what the wire format accepts is left out, so
// that one odd header cannot make the whole report invalid. Present is
// true when at least one metric was read.
func parseServerTiming(values []string) beacon.ServerTiming {
	st := noServerTiming
	for _, v := range values {
		for _, entry := range splitQuoted(v, ',') {
			params := splitQuoted(entry, ';')
			var m metric
			m.name = strings.TrimSpace(params[0])
			for _, p := range params[1:] {
				k, val, _ := strings.Cut(p, "=")
				val = unquote(strings.TrimSpace(val))
				switch strings.ToLower(strings.TrimSpace(k)) {
				case "dur":
					if !m.hasDur {
						m.dur, m.hasDur = val, true
					}
				case "desc":
					if !m.hasDesc {
						m.desc, m.hasDesc = val, true
					}
				}
			}
			if m.read(&st) {
				st.Present = true
			}
		}
	}
	return st
}

// metric is one Server-Timing entry.
type metric struct {
	name, dur, desc string
	hasDur, hasDesc bool
}

// read sets the metric's field of st and reports whether it is one the
// format knows, with an acceptable value.
func (m *metric) read(st *beacon.ServerTiming) bool {
	switch m.name {
	case beacon.MetricProto:
		if !m.hasDesc {
			return false
		}
		st.Proto = normalise(m.desc)
	case beacon.MetricConnID:
		if !m.hasDesc || !isToken(m.desc) {
			return false
		}
		st.ConnID = m.desc
	case beacon.MetricApp, beacon.MetricRTT, beacon.MetricMinRTT, beacon.MetricRTTVar, beacon.MetricConnAge:
		f, err := strconv.ParseFloat(m.dur, 64)
		if !m.hasDur || err != nil || !(f >= 0 && f <= beacon.MaxDurationMS) {
			return false
		}
		f = math.Round(f*1000) / 1000
		switch m.name {
		case beacon.MetricApp:
			st.Handle = f
		case beacon.MetricRTT:
			st.RTT = f
		case beacon.MetricMinRTT:
			st.MinRTT = f
		case beacon.MetricRTTVar:
			st.RTTVar = f
		default:
			st.ConnAge = f
		}
	case beacon.MetricLost, beacon.MetricConnReqs, beacon.MetricResumed, beacon.MetricEarly:
		n, ok := count(m.desc)
		if !m.hasDesc || !ok {
			return false
		}
		switch {
		case m.name == beacon.MetricLost:
			st.Lost = n
		case m.name == beacon.MetricConnReqs && n >= 1:
			st.ConnReqs = n
		case m.name == beacon.MetricResumed && n <= 1:
			st.Resumed = n == 1
		case m.name == beacon.MetricEarly && n <= 1:
			st.EarlyData = n == 1
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// splitQuoted splits s at sep outside double-quoted strings (a desc may
// be quoted and hold commas or semicolons).
func splitQuoted(s string, sep byte) []string {
	var out []string
	quoted, start := false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unquote returns a quoted-string's content, or s as it is.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	var b strings.Builder
	for i := 1; i < len(s)-1; i++ {
		if s[i] == '\\' && i+1 < len(s)-1 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// normalise maps a protocol name as the script's proto() does: h3 (also
// h3-29, hq…, anything with quic), h2 (also http/2…), h1 (http/1.x), else
// unknown.
func normalise(p string) beacon.Proto {
	l := strings.ToLower(p)
	switch {
	case strings.HasPrefix(l, "h3"), strings.HasPrefix(l, "hq"), strings.Contains(l, "quic"):
		return beacon.ProtoH3
	case strings.HasPrefix(l, "h2"), strings.HasPrefix(l, "http/2"):
		return beacon.ProtoH2
	case strings.HasPrefix(l, "http/1"):
		return beacon.ProtoH1
	}
	return beacon.ProtoUnknown
}

// isToken is the wire format's rule for a cid: 1 to 64 printable ASCII
// characters without space, quote or backslash.
func isToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// count parses 1 to 9 decimal digits, as the script's /^\d{1,9}$/.
func count(s string) (int, bool) {
	if s == "" || len(s) > 9 {
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
