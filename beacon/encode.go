package beacon

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Encoding: a Report back to its wire format version, for clients other
// than the script (the Go agent). The output is what the script sends: canonical
// JSON with the keys in PROTOCOL.md's order, no whitespace, and the
// optional keys left out where the Go value means "absent" (-1 durations,
// an unknown proto, a zero creq, an empty string), so that Decode reads
// back the same Report, on its fast path. The agent's handshake samples,
// which are not part of a report, encode the same way (EncodeHandshakes).

// wirePhase is the one-letter wire form of a phase.
func wirePhase(p Phase) (string, bool) {
	switch p {
	case PhaseWarmup:
		return "w", true
	case PhaseParallel:
		return "p", true
	case PhaseHandshake:
		return "h", true
	}
	return "", false
}

// Encode renders r in wire format r.Version. It returns an error when r is not a
// report Decode accepts — that error is Decode's own *DecodeError, since
// Encode checks its output by decoding it, which keeps the format's rules
// in one place (validate.go) — or when a number is NaN or infinite, or
// Params.Extra is not the canonical form Decode gives.
func Encode(r *Report) ([]byte, error) {
	b, err := appendReport(make([]byte, 0, 256+200*len(r.Samples)), r)
	if err != nil {
		return nil, err
	}
	back, err := Decode(b)
	if err != nil {
		return nil, err
	}
	if back.Params.Extra != r.Params.Extra {
		return nil, fmt.Errorf("encoding report: par extra %.80q is not in canonical form (it reads back as %q)", r.Params.Extra, back.Params.Extra)
	}
	return b, nil
}

// EncodeHandshakes renders an agent run's handshake samples as the JSON
// array DecodeHandshakes reads (each sample's keys are a report sample's,
// with "ph":"h"), and DecodeHandshakes(EncodeHandshakes(hs)) is hs. Every
// sample's Phase must be PhaseHandshake. As Encode, it checks its output
// by decoding it, so a rejection is DecodeHandshakes' *DecodeError.
func EncodeHandshakes(hs []Sample) ([]byte, error) {
	b := make([]byte, 0, 2+260*len(hs))
	b = append(b, '[')
	for i := range hs {
		if hs[i].Phase != PhaseHandshake {
			return nil, fmt.Errorf("encoding handshakes: sample %d has phase %q, want %q", i, hs[i].Phase, PhaseHandshake)
		}
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendSample(b, &hs[i]); err != nil {
			return nil, fmt.Errorf("encoding handshakes: sample %d: %w", i, err)
		}
	}
	b = append(b, ']')
	if _, err := DecodeHandshakes(b); err != nil {
		return nil, err
	}
	return b, nil
}

func appendReport(b []byte, r *Report) ([]byte, error) {
	var err error
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(r.Version), 10)
	b = append(b, `,"id":"`...)
	b = hex.AppendEncode(b, r.RunID[:])
	b = append(b, `","site":`...)
	b = appendString(b, r.Site)
	b = append(b, `,"o":`...)
	b = appendString(b, r.PageOrigin)
	b = append(b, `,"bv":`...)
	b = appendString(b, r.BeaconVersion)
	b = append(b, `,"p":`...)
	b = strconv.AppendBool(b, r.Partial)
	b = append(b, `,"mt":`...)
	if b, err = appendFloat(b, r.MainThreadMS, "mt"); err != nil {
		return nil, err
	}
	if r.Version >= 2 {
		b = append(b, `,"alt":`...)
		b = strconv.AppendInt(b, int64(r.AltSvc), 10)
	}
	p := &r.Params
	b = append(b, `,"par":{"n":`...)
	b = strconv.AppendInt(b, int64(p.Parallel), 10)
	b = append(b, `,"w":`...)
	b = strconv.AppendInt(b, int64(p.Warmup), 10)
	b = append(b, `,"b":`...)
	b = strconv.AppendInt(b, int64(p.Bytes), 10)
	b = append(b, `,"ord":`...)
	b = appendString(b, p.Order)
	b = append(b, `,"trg":`...)
	b = appendString(b, p.Trigger)
	if b, err = appendExtra(b, p.Extra); err != nil {
		return nil, err
	}
	b = append(b, '}')
	if b, err = appendClient(b, &r.Client); err != nil {
		return nil, err
	}
	b = appendScriptErrors(b, &r.ScriptErrors)
	b = append(b, `,"s":[`...)
	for i := range r.Samples {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendSample(b, &r.Samples[i]); err != nil {
			return nil, fmt.Errorf("s[%d]: %w", i, err)
		}
	}
	return append(b, "]}"...), nil
}

// appendExtra appends Params.Extra as par's keys: "gap=100" as
// ,"gap":100. A pair that is not a design parameter's name and an integer
// is an error; Decode judges the values, and Encode that the text was the
// canonical form it reads back.
func appendExtra(b []byte, extra string) ([]byte, error) {
	if extra == "" {
		return b, nil
	}
	for kv := range strings.SplitSeq(extra, ",") {
		name, v, ok := strings.Cut(kv, "=")
		n, err := strconv.Atoi(v)
		if _, i := designIndex(name); !ok || err != nil || i < 0 {
			return nil, fmt.Errorf("encoding report: par extra %.80q: %.40q is not a design parameter's name=value", extra, kv)
		}
		b = append(b, `,"`...)
		b = append(b, name...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return b, nil
}

// appendScriptErrors appends ,"x":{…} with the kinds that have errors, or
// nothing when none has.
func appendScriptErrors(b []byte, e *ScriptErrors) []byte {
	if *e == (ScriptErrors{}) {
		return b
	}
	b = append(b, `,"x":{`...)
	sep := false
	for _, f := range []struct {
		key string
		n   int
	}{{"idle", e.Idle}, {"warmup", e.Warmup}, {"batch", e.Batch}, {"timing", e.Timing}, {"send", e.Send}} {
		if f.n == 0 {
			continue
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, '"')
		b = append(b, f.key...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, int64(f.n), 10)
	}
	return append(b, '}')
}

// appendClient appends ,"c":{…}, or nothing when the client is the value
// Decode makes of an absent "c". The booleans are written whenever "c" is:
// Go cannot tell false from unknown.
func appendClient(b []byte, c *Client) ([]byte, error) {
	if len(c.Brands) == 0 && c.Platform == "" && !c.Mobile && c.EffectiveType == "" && c.RTT == -1 && c.Downlink == -1 && !c.Webdriver {
		return b, nil
	}
	b = append(b, `,"c":{`...)
	if len(c.Brands) > 0 {
		b = append(b, `"br":[`...)
		for i, br := range c.Brands {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			b = appendString(b, br.Brand)
			b = append(b, ',')
			b = appendString(b, br.Version)
			b = append(b, ']')
		}
		b = append(b, "],"...)
	}
	if c.Platform != "" {
		b = append(b, `"pf":`...)
		b = appendString(b, c.Platform)
		b = append(b, ',')
	}
	b = append(b, `"mb":`...)
	b = strconv.AppendBool(b, c.Mobile)
	if c.EffectiveType != "" {
		b = append(b, `,"et":`...)
		b = appendString(b, c.EffectiveType)
	}
	var err error
	if c.RTT != -1 {
		b = append(b, `,"rtt":`...)
		if b, err = appendFloat(b, c.RTT, "c.rtt"); err != nil {
			return nil, err
		}
	}
	if c.Downlink != -1 {
		b = append(b, `,"dl":`...)
		if b, err = appendFloat(b, c.Downlink, "c.dl"); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"wd":`...)
	b = strconv.AppendBool(b, c.Webdriver)
	return append(b, '}'), nil
}

func appendSample(b []byte, s *Sample) ([]byte, error) {
	ph, ok := wirePhase(s.Phase)
	if !ok {
		ph = string(s.Phase) // Decode says why it is wrong
	}
	b = append(b, `{"q":`...)
	b = strconv.AppendInt(b, int64(s.Seq), 10)
	b = append(b, `,"ph":`...)
	b = appendString(b, ph)
	b = append(b, `,"w":`...)
	b = appendString(b, string(s.Want))
	b = append(b, `,"g":`...)
	b = appendString(b, string(s.Got))
	var err error
	for _, f := range []struct {
		key string
		v   float64
	}{
		{`,"st":`, s.Start}, {`,"d":`, s.Duration}, {`,"dns":`, s.DNS}, {`,"con":`, s.Connect},
		{`,"tls":`, s.TLS}, {`,"tf":`, s.TTFB}, {`,"dl":`, s.Download},
	} {
		b = append(b, f.key...)
		if b, err = appendFloat(b, f.v, f.key); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"r":`...)
	b = strconv.AppendBool(b, s.Reused)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, int64(s.TransferSize), 10)
	if s.Error != "" {
		b = append(b, `,"e":`...)
		b = appendString(b, s.Error)
	}
	if s.Server.Present {
		if b, err = appendServer(b, &s.Server); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendServer appends ,"sv":{…}: every metric of serverTimingMetrics in
// its order, leaving out the values that stand for "not sent" (proto
// unknown, a -1 duration, a count below its least, an empty text).
func appendServer(b []byte, st *ServerTiming) ([]byte, error) {
	b = append(b, `,"sv":{`...)
	open := len(b)
	var err error
	for k := range serverTimingMetrics {
		m := &serverTimingMetrics[k]
		key := func() {
			if len(b) > open {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, m.name...)
			b = append(b, `":`...)
		}
		switch m.kind {
		case metricProto:
			if st.Proto != ProtoUnknown {
				key()
				b = appendString(b, string(st.Proto))
			}
		case metricDuration:
			if v := *m.dur(st); v != -1 {
				key()
				if b, err = appendFloat(b, v, "sv."+m.name); err != nil {
					return nil, err
				}
			}
		case metricText:
			if v := *m.text(st); v != "" {
				key()
				b = appendString(b, v)
			}
		case metricCount:
			if m.flag != nil {
				key()
				b = appendFlag(b, *m.flag(st))
			} else if v := *m.count(st); v >= m.least {
				key()
				b = strconv.AppendInt(b, int64(v), 10)
			}
		}
	}
	return append(b, '}'), nil
}

func appendFlag(b []byte, v bool) []byte {
	if v {
		return append(b, '1')
	}
	return append(b, '0')
}

// appendFloat appends v as the shortest decimal that parses back to v,
// without an exponent (the form the fast path reads).
func appendFloat(b []byte, v float64, name string) ([]byte, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("encoding report: %s is %v", name, v)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64), nil
}

// appendString appends s as a JSON string: as is when it is printable ASCII
// without quotes or backslashes (every valid value but a page origin with
// non-ASCII characters), else escaped by encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
