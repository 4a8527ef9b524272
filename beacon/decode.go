package beacon

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Limits of the wire format beyond those in report.go; see PROTOCOL.md.
const (
	MaxReportBytes = 32 << 10  // a report body; a full 20+20+10+1 run is about 15 KiB
	MaxBytes       = 16 << 20  // probe body size (data-bytes)
	MaxDurationMS  = 3_600_000 // any duration or offset, ms
	MaxMainThread  = 60_000    // main-thread time of a run, ms
	maxSiteLen     = 64
	maxOriginLen   = 256
	maxTextLen     = 64 // UA-CH brand, connection id
	maxBrands      = 8
	maxDepth       = 5
	maxCount       = 1_000_000_000 // lost packets, requests per connection
	// MaxScriptErrors is the most errors of one kind a report may count
	// (x); a run makes at most a few hundred callbacks.
	MaxScriptErrors = 65_535
	// RequestTimeoutMS is how long the script (AbortSignal.timeout) and
	// the agent wait for a probe request before it counts as a timeout;
	// the report's intention-to-treat view counts a failed request at it.
	RequestTimeoutMS = 10_000
)

// Reasons a report is rejected, for metrics labels (see DecodeError).
const (
	ReasonSize    = "size"    // larger than MaxReportBytes
	ReasonJSON    = "json"    // not one JSON object
	ReasonVersion = "version" // missing or unsupported "v"
	ReasonField   = "field"   // unknown, missing, duplicate or mis-cased field, or wrong JSON type
	ReasonValue   = "value"   // a value outside its domain: negative duration, bad run id, wrong seq…
	ReasonLimit   = "limit"   // more samples, brands or characters than the protocol allows
)

// DecodeReasons lists every DecodeError.Reason, to initialise metrics.
func DecodeReasons() []string {
	return []string{ReasonSize, ReasonJSON, ReasonVersion, ReasonField, ReasonValue, ReasonLimit}
}

// DecodeError is why Decode rejected a report: Reason is one of the
// Reason* constants (a metrics label), Msg a one-line human explanation.
// Field is the wire field refused, one of DecodeFields ("s.d" for any
// sample's duration), or "" when no one known field is at fault (syntax,
// size, version, an unknown key): a metrics label too, so that a browser
// sending a value the collector refuses shows up as a cause.
type DecodeError struct {
	Reason string
	Field  string
	Msg    string
}

func (e *DecodeError) Error() string { return e.Reason + ": " + e.Msg }

func errorf(reason, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// at sets the field a refusal is about, given as messages name it
// ("s[3].d", "s[%d].sv.app", "c.br[%d]"): without its indices, and only
// when it is one of DecodeFields, so a sender cannot choose a label.
func (e *DecodeError) at(name string) *DecodeError {
	var b strings.Builder
	for {
		i := strings.IndexByte(name, '[')
		j := strings.IndexByte(name[max(i, 0):], ']')
		if i < 0 || j < 0 {
			break
		}
		b.WriteString(name[:i])
		name = name[i+j+1:]
	}
	b.WriteString(name)
	if f := b.String(); slices.Contains(decodeFields, f) {
		e.Field = f
	}
	return e
}

// DecodeFields lists every DecodeError.Field but "", to initialise metrics:
// the keys of the wire types, nested ones after their object's ("par.n",
// "s.sv.app"), design parameters and Server-Timing metrics included.
func DecodeFields() []string { return slices.Clone(decodeFields) }

var decodeFields = func() []string {
	var fields []string
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			t = t.Elem()
		}
		if t == reflect.TypeFor[wireServer]() {
			for _, m := range serverTimingMetrics {
				fields = append(fields, prefix+m.name)
			}
			return
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			if k := t.Field(i).Tag.Get("json"); k != "" {
				fields = append(fields, prefix+k)
				walk(prefix+k+".", t.Field(i).Type)
			}
		}
		if t == reflect.TypeFor[wireParams]() {
			for _, p := range scriptParamList {
				if p.design {
					fields = append(fields, prefix+p.Name)
				}
			}
		}
	}
	walk("", reflect.TypeFor[wireReport]())
	return fields
}()

// Decode parses and validates one report in any wire format from
// MinVersion to Version (PROTOCOL.md).
// Every rejection is a *DecodeError. Decode never panics on any input.
func Decode(data []byte) (*Report, error) {
	if len(data) > MaxReportBytes {
		return nil, errorf(ReasonSize, "report is %d bytes, limit %d", len(data), MaxReportBytes)
	}
	a := arenas.Get().(*arena)
	defer a.release()
	w, ok := fastDecode(data, a)
	if !ok {
		var err error
		if w, err = decodeWire(data); err != nil {
			return nil, err
		}
	}
	return w.report()
}
