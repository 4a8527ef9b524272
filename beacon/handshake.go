package beacon

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// MaxHandshakes is the most handshake samples one agent run may carry.
const MaxHandshakes = 16

// DecodeHandshakes decodes an agent run's handshake samples: a JSON array
// of sample objects with the keys of a report's samples (PROTOCOL.md,
// "Handshake samples"), "ph" always "h", "w" the origin's protocol (h2 or
// h3) and seq numbers unique in [0, MaxHandshakes). It is as strict as
// Decode, and a rejection is a *DecodeError. An absent or null array is no
// handshakes.
func DecodeHandshakes(data []byte) ([]Sample, error) {
	if len(data) > MaxReportBytes {
		return nil, errorf(ReasonSize, "handshakes over %d bytes", MaxReportBytes)
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	// The key checks are the report's: wrapped, the array sits where a
	// report's samples do.
	wrapped := make([]byte, 0, len(data)+6)
	wrapped = append(append(append(wrapped, `{"s":`...), data...), '}')
	if kerr := checkKeys(wrapped, false); kerr != nil {
		return nil, kerr
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var ws []wireSample
	if err := dec.Decode(&ws); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return nil, errorf(ReasonField, "handshakes: JSON %s where %s belongs", te.Value, te.Type).at("s." + te.Field)
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return nil, errorf(ReasonField, "handshakes: %s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return nil, errorf(ReasonJSON, "handshakes: %v", err)
	}
	if len(ws) > MaxHandshakes {
		return nil, errorf(ReasonLimit, "%d handshake samples, at most %d", len(ws), MaxHandshakes)
	}
	out := make([]Sample, len(ws))
	var seen [MaxHandshakes]bool
	for i := range ws {
		w, s := &ws[i], &out[i]
		if w.Q == nil {
			return nil, missing(label("s[%d].q", i))
		}
		if q := *w.Q; q < 0 || q >= MaxHandshakes || seen[q] {
			return nil, errorf(ReasonValue, "handshake seq %d: duplicate or outside [0, %d)", q, MaxHandshakes).at("s.q")
		}
		seen[*w.Q] = true
		s.Seq, s.Phase, s.Reused = *w.Q, PhaseHandshake, false
		if w.Ph == nil {
			return nil, missing(label("s[%d].ph", i))
		}
		if *w.Ph != "h" {
			return nil, errorf(ReasonValue, `handshake s[%d].ph %.20q, want "h"`, i, *w.Ph).at("s.ph")
		}
		if w.W == nil {
			return nil, missing(label("s[%d].w", i))
		}
		if s.Want = Proto(*w.W); s.Want != ProtoH2 && s.Want != ProtoH3 {
			return nil, errorf(ReasonValue, `handshake s[%d].w %.20q, want "h2" or "h3"`, i, *w.W).at("s.w")
		}
		if err := w.measurements(s, i); err != nil {
			return nil, err
		}
		if s.Reused {
			return nil, errorf(ReasonValue, "handshake s[%d] on a reused connection", i).at("s.r")
		}
	}
	return out, nil
}
