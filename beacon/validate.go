package beacon

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Field validation: from the wire types to a Report, with every value
// checked against its domain and the protocol's limits (PROTOCOL.md).

func missing(name string) *DecodeError { return errorf(ReasonField, "missing %q", name).at(name) }

func (w *wireReport) report() (*Report, error) {
	r := &Report{Version: *w.V}
	if w.ID == nil {
		return nil, missing("id")
	}
	if len(*w.ID) != 32 || strings.ToLower(*w.ID) != *w.ID {
		return nil, errorf(ReasonValue, "run id %.40q is not 32 lower-case hex digits", *w.ID).at("id")
	}
	if _, err := hex.Decode(r.RunID[:], []byte(*w.ID)); err != nil {
		return nil, errorf(ReasonValue, "run id %q is not 32 lower-case hex digits", *w.ID).at("id")
	}
	if w.Site == nil {
		return nil, missing("site")
	}
	if err := checkText(*w.Site, maxSiteLen, isSiteChar, "site", -1); err != nil {
		return nil, err
	}
	r.Site = *w.Site
	if w.O == nil {
		return nil, missing("o")
	}
	if err := checkOrigin(*w.O); err != nil {
		return nil, err
	}
	r.PageOrigin = *w.O
	if w.BV == nil {
		return nil, missing("bv")
	}
	if err := checkText(*w.BV, 32, isVersionChar, "bv", -1); err != nil {
		return nil, err
	}
	r.BeaconVersion = *w.BV
	if w.P == nil {
		return nil, missing("p")
	}
	r.Partial = *w.P
	if w.MT == nil {
		return nil, missing("mt")
	}
	if *w.MT < 0 || *w.MT > MaxMainThread {
		return nil, errorf(ReasonValue, "mt %g ms outside [0, %d]", *w.MT, MaxMainThread).at("mt")
	}
	r.MainThreadMS = *w.MT
	if err := w.altSvc(&r.AltSvc); err != nil {
		return nil, err
	}
	if w.Par == nil {
		return nil, missing("par")
	}
	if err := w.Par.params(&r.Params); err != nil {
		return nil, err
	}
	r.Client = Client{RTT: -1, Downlink: -1}
	if w.C != nil {
		if err := w.C.client(&r.Client); err != nil {
			return nil, err
		}
	}
	if w.X != nil {
		if err := w.X.scriptErrors(&r.ScriptErrors); err != nil {
			return nil, err
		}
	}
	if err := w.samples(r); err != nil {
		return nil, err
	}
	return r, nil
}

// altSvc reads "alt": required from wire v2 on, unknown to v1 (whose
// reports read as AltSvcUnrecorded).
func (w *wireReport) altSvc(a *AltSvc) error {
	switch {
	case w.Alt == nil && *w.V >= 2:
		return missing("alt")
	case w.Alt == nil:
		return nil
	case *w.V < 2:
		return errorf(ReasonField, `"alt" is not a key of wire v%d`, *w.V).at("alt")
	case *w.Alt < int(AltSvcNone) || *w.Alt > int(MaxAltSvc):
		return errorf(ReasonValue, "alt is %d, want %d to %d", *w.Alt, AltSvcNone, MaxAltSvc).at("alt")
	}
	*a = AltSvc(*w.Alt)
	return nil
}

func (w *wireErrors) scriptErrors(e *ScriptErrors) error {
	for _, f := range []struct {
		name string
		v    *int
		to   *int
	}{{"x.idle", w.Idle, &e.Idle}, {"x.warmup", w.Warmup, &e.Warmup}, {"x.batch", w.Batch, &e.Batch}, {"x.timing", w.Timing, &e.Timing}, {"x.send", w.Send, &e.Send}} {
		if f.v == nil {
			continue
		}
		if *f.v < 1 || *f.v > MaxScriptErrors {
			reason := ReasonValue
			if *f.v > MaxScriptErrors {
				reason = ReasonLimit
			}
			return errorf(reason, "%s is %d, want 1 to %d", f.name, *f.v, MaxScriptErrors).at(f.name)
		}
		*f.to = *f.v
	}
	return nil
}

func (w *wireParams) params(p *Params) error {
	for _, f := range []struct {
		name  string
		v     *int
		param ScriptParam // the embedding's parameter, with its range
		to    *int
	}{
		{"par.n", w.N, parallelParam, &p.Parallel},
		{"par.w", w.W, warmupParam, &p.Warmup},
		{"par.b", w.B, bytesParam, &p.Bytes},
	} {
		if f.v == nil {
			return missing(f.name)
		}
		if err := checkParam(f.name, *f.v, f.param); err != nil {
			return err
		}
		*f.to = *f.v
	}
	if w.Ord == nil {
		return missing("par.ord")
	}
	if *w.Ord != "h2first" && *w.Ord != "h3first" {
		return errorf(ReasonValue, `par.ord %.20q, want "h2first" or "h3first"`, *w.Ord).at("par.ord")
	}
	p.Order = *w.Ord
	if w.Trg == nil {
		return missing("par.trg")
	}
	if *w.Trg != "load" && *w.Trg != "manual" {
		return errorf(ReasonValue, `par.trg %.20q, want "load" or "manual"`, *w.Trg).at("par.trg")
	}
	p.Trigger = *w.Trg
	if w.extra == nil {
		return nil
	}
	var extra []byte
	for _, d := range scriptParamList {
		v, ok := w.extra[d.Name]
		if !d.design || !ok {
			continue
		}
		if err := checkParam("par."+d.Name, v, d); err != nil {
			return err
		}
		if v == d.def {
			continue
		}
		if len(extra) > 0 {
			extra = append(extra, ',')
		}
		extra = append(extra, d.Name...)
		extra = append(extra, '=')
		extra = strconv.AppendInt(extra, int64(v), 10)
	}
	p.Extra = string(extra)
	return nil
}

// checkParam checks a value par reports against the range of the
// embedding's parameter p; name is its path in the report.
func checkParam(name string, v int, p ScriptParam) error {
	if v < p.lo || v > p.hi {
		reason := ReasonLimit
		if v < p.lo {
			reason = ReasonValue
		}
		return errorf(reason, "%s is %d, want %d to %d", name, v, p.lo, p.hi).at(name)
	}
	return nil
}

func (w *wireClient) client(c *Client) error {
	if len(w.BR) > maxBrands {
		return errorf(ReasonLimit, "c.br has %d brands, limit %d", len(w.BR), maxBrands).at("c.br")
	}
	for i, b := range w.BR {
		if len(b) != 2 {
			return errorf(ReasonValue, "c.br[%d] has %d elements, want [brand, version]", i, len(b)).at("c.br")
		}
		if err := checkText(b[0], maxTextLen, isPrintable, "c.br[%d]", i); err != nil {
			return err
		}
		if err := checkText(b[1], 32, isPrintable, "c.br[%d]", i); err != nil {
			return err
		}
		c.Brands = append(c.Brands, Brand{Brand: b[0], Version: b[1]})
	}
	if w.PF != nil {
		if *w.PF != "" {
			if err := checkText(*w.PF, 32, isPrintable, "c.pf", -1); err != nil {
				return err
			}
		}
		c.Platform = *w.PF
	}
	if w.MB != nil {
		c.Mobile = *w.MB
	}
	if w.ET != nil {
		c.EffectiveType = effectiveType(*w.ET)
	}
	for _, f := range []struct {
		name string
		v    *float64
		to   *float64
	}{{"c.rtt", w.RTT, &c.RTT}, {"c.dl", w.DL, &c.Downlink}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 || *f.v > 1e6 {
			return errorf(ReasonValue, "%s %g outside [0, 1e6]", f.name, *f.v).at(f.name)
		}
		*f.to = *f.v
	}
	if w.WD != nil {
		c.Webdriver = *w.WD
	}
	return nil
}

// samples checks the samples against the parameters: seq numbers are
// unique, and each seq's phase and intended protocol follow from the
// run's shape (PROTOCOL.md, "Samples").
func (w *wireReport) samples(r *Report) error {
	if w.S == nil {
		return missing("s")
	}
	p := r.Params
	total := p.Warmup + 1 + 2*p.Parallel
	if len(w.S) > total {
		return errorf(ReasonLimit, "%d samples, the parameters allow %d", len(w.S), total).at("s")
	}
	// A run the script's own error cut short goes out with what it has,
	// possibly nothing: x says why samples are missing.
	failed := r.ScriptErrors.Total() > 0
	if len(w.S) == 0 && !failed {
		return errorf(ReasonValue, "no samples").at("s")
	}
	if !r.Partial && !failed && len(w.S) != total {
		return errorf(ReasonValue, "complete run with %d samples, the parameters say %d", len(w.S), total).at("s")
	}
	first, second := ProtoH3, ProtoH2
	if p.Order == "h2first" {
		first, second = ProtoH2, ProtoH3
	}
	seen := make([]bool, total)
	r.Samples = make([]Sample, len(w.S))
	for i := range w.S {
		ws, s := &w.S[i], &r.Samples[i]
		name := func(f string) string { return fmt.Sprintf("s[%d].%s", i, f) }
		if ws.Q == nil {
			return missing(name("q"))
		}
		q := *ws.Q
		if q < 0 || q >= total {
			return errorf(ReasonValue, "%s %d outside [0, %d)", name("q"), q, total).at("s.q")
		}
		if seen[q] {
			return errorf(ReasonValue, "duplicate seq %d", q).at("s.q")
		}
		seen[q] = true
		s.Seq = q
		wantPhase, wantProto := PhaseParallel, second
		switch {
		case q < p.Warmup:
			wantPhase, wantProto = PhaseWarmup, ProtoH3
		case q == p.Warmup:
			wantPhase, wantProto = PhaseWarmup, ProtoH2
		case q <= p.Warmup+p.Parallel:
			wantProto = first
		}
		if ws.Ph == nil {
			return missing(name("ph"))
		}
		switch *ws.Ph {
		case "w":
			s.Phase = PhaseWarmup
		case "p":
			s.Phase = PhaseParallel
		default:
			return errorf(ReasonValue, `%s %.20q, want "w" or "p"`, name("ph"), *ws.Ph).at("s.ph")
		}
		if ws.W == nil {
			return missing(name("w"))
		}
		s.Want = Proto(*ws.W)
		if s.Phase != wantPhase || s.Want != wantProto {
			return errorf(ReasonValue, "seq %d is %s to %.20q, the parameters say %s to %s", q, s.Phase, *ws.W, wantPhase, wantProto).at("s.w")
		}
		if err := ws.measurements(s, i); err != nil {
			return err
		}
	}
	return nil
}

// measurements checks and copies what every sample carries after its seq,
// phase and intended protocol: the protocol used, timings, reuse, size,
// error and Server-Timing. i is the sample's index, for messages.
func (ws *wireSample) measurements(s *Sample, i int) error {
	name := func(f string) string { return fmt.Sprintf("s[%d].%s", i, f) }
	if ws.G == nil {
		return missing(name("g"))
	}
	var ok bool
	if s.Got, ok = proto(*ws.G); !ok {
		return errorf(ReasonValue, "%s %.20q is not h1, h2, h3 or unknown", name("g"), *ws.G).at("s.g")
	}
	if ws.St == nil {
		return missing(name("st"))
	}
	if *ws.St < 0 || *ws.St > MaxDurationMS {
		return errorf(ReasonValue, "%s %g ms outside [0, %d]", name("st"), *ws.St, MaxDurationMS).at("s.st")
	}
	s.Start = *ws.St
	for _, f := range []struct {
		name string
		v    *float64
		to   *float64
	}{
		{"s[%d].d", ws.D, &s.Duration}, {"s[%d].dns", ws.DNS, &s.DNS}, {"s[%d].con", ws.Con, &s.Connect},
		{"s[%d].tls", ws.TLS, &s.TLS}, {"s[%d].tf", ws.TF, &s.TTFB}, {"s[%d].dl", ws.DL, &s.Download},
	} {
		if f.v == nil {
			return missing(label(f.name, i))
		}
		if err := checkDuration(*f.v, true, f.name, i); err != nil {
			return err
		}
		*f.to = *f.v
	}
	if ws.R == nil {
		return missing(name("r"))
	}
	s.Reused = *ws.R
	if ws.TS == nil {
		return missing(name("ts"))
	}
	if *ws.TS < 0 || *ws.TS > 1<<30 {
		return errorf(ReasonValue, "%s %d outside [0, 2^30]", name("ts"), *ws.TS).at("s.ts")
	}
	s.TransferSize = *ws.TS
	if ws.E != nil {
		if !isErrorCode(*ws.E) {
			return errorf(ReasonValue, "%s %.40q is not an error code ([a-z0-9_]{1,32})", name("e"), *ws.E).at("s.e")
		}
		s.Error = *ws.E
	}
	s.Server = unsent
	if ws.SV != nil {
		if err := ws.SV.server(&s.Server, i); err != nil {
			return err
		}
	}
	return nil
}

func (w *wireServer) server(st *ServerTiming, i int) error {
	st.Present = true
	for k := range serverTimingMetrics {
		if w.sent&(1<<k) == 0 {
			continue
		}
		m := &serverTimingMetrics[k]
		switch m.kind {
		case metricProto:
			var ok bool
			if st.Proto, ok = proto(w.str[k]); !ok {
				return errorf(ReasonValue, "s[%d].sv.%s %.20q is not h1, h2, h3 or unknown", i, m.name, w.str[k]).at(svLabels[k])
			}
		case metricDuration:
			if err := checkDuration(w.num[k], false, svLabels[k], i); err != nil {
				return err
			}
			*m.dur(st) = w.num[k]
		case metricText:
			if err := checkText(w.str[k], maxTextLen, isTokenChar, svLabels[k], i); err != nil {
				return err
			}
			*m.text(st) = w.str[k]
		case metricCount:
			n := w.n[k]
			if m.flag != nil {
				if n != 0 && n != 1 {
					return errorf(ReasonValue, "s[%d].sv.%s is %d, want 0 or 1", i, m.name, n).at(svLabels[k])
				}
				*m.flag(st) = n == 1
				continue
			}
			if n < m.least || n > maxCount {
				return errorf(ReasonValue, "s[%d].sv.%s %d outside [%d, %d]", i, m.name, n, m.least, maxCount).at(svLabels[k])
			}
			*m.count(st) = n
		}
	}
	return nil
}

// svLabels are the sv fields' names for an error, formats of the sample's
// index (label).
var svLabels = func() (l [len(serverTimingMetrics)]string) {
	for k, m := range serverTimingMetrics {
		l[k] = "s[%d].sv." + m.name
	}
	return l
}()

// EffectiveTypes are the values of navigator.connection.effectiveType, the
// Network Information API's EffectiveConnectionType enum: all a report's
// c.et may hold.
var EffectiveTypes = [...]string{"slow-2g", "2g", "3g", "4g"}

// effectiveType returns et if it is one of EffectiveTypes, else "" (unknown,
// as when c.et is absent). c.et is a hint about the visitor's network, so a
// value outside the enum costs the hint, not the run: a browser that one
// day reports a new type still has its samples counted. Free text would
// reach storage, the by=connection grouping (one group per distinct
// value) and spreadsheets opening the report's CSV.
func effectiveType(et string) string {
	for _, v := range EffectiveTypes {
		if et == v {
			return v
		}
	}
	return ""
}

func proto(s string) (Proto, bool) {
	switch p := Proto(s); p {
	case ProtoUnknown, ProtoH1, ProtoH2, ProtoH3:
		return p, true
	}
	return ProtoUnknown, false
}

// label names a field for an error message: name, with the sample or
// brand index i filled in when name has a verb (i >= 0).
func label(name string, i int) string {
	if i < 0 {
		return name
	}
	return fmt.Sprintf(name, i)
}

// checkDuration checks a duration in ms. The field's name is built only
// for an error (label), so that valid reports format nothing.
func checkDuration(v float64, unknownOK bool, name string, i int) error {
	if v == -1 && unknownOK || v >= 0 && v <= MaxDurationMS {
		return nil
	}
	want := "0 to 3600000"
	if unknownOK {
		want = "-1 (unknown) or " + want
	}
	return errorf(ReasonValue, "%s is %g ms, want %s", label(name, i), v, want).at(name)
}

// checkText checks a string's length and characters; the name is built
// only for an error (label).
func checkText(s string, max int, ok func(rune) bool, name string, i int) error {
	if s == "" {
		return errorf(ReasonValue, "%s is empty", label(name, i)).at(name)
	}
	if len(s) > max {
		return errorf(ReasonLimit, "%s is %d bytes, limit %d", label(name, i), len(s), max).at(name)
	}
	for _, c := range s {
		if !ok(c) {
			return errorf(ReasonValue, "%s %.40q has a character outside its set", label(name, i), s).at(name)
		}
	}
	return nil
}

func isSiteChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
}

func isVersionChar(c rune) bool { return isSiteChar(c) || c == '+' }

// isTokenChar allows printable ASCII except space, quote and backslash.
func isTokenChar(c rune) bool { return c > ' ' && c < 0x7f && c != '"' && c != '\\' }

// isPrintable allows printable ASCII including space (UA-CH brands such as
// "Not)A;Brand" use punctuation).
func isPrintable(c rune) bool { return c >= ' ' && c < 0x7f }

func isErrorCode(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// checkOrigin accepts "null" (opaque origins) or scheme://host[:port]
// with nothing after it.
func checkOrigin(o string) error {
	if o == "null" {
		return nil
	}
	if len(o) > maxOriginLen {
		return errorf(ReasonLimit, "o is %d bytes, limit %d", len(o), maxOriginLen).at("o")
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(o, "?#") {
		return errorf(ReasonValue, "o %.80q is not an http(s) origin", o).at("o")
	}
	return nil
}

// ValidExtra reports whether s has the form of a Params.Extra: "" or
// name=value pairs joined by ",", each name a key of par (isKey) and each
// value a decimal integer, at most 16 pairs. Reports read designs with it,
// so that nothing else reaches their SQL.
func ValidExtra(s string) bool {
	if s == "" {
		return true
	}
	n := 0
	for kv := range strings.SplitSeq(s, ",") {
		name, v, ok := strings.Cut(kv, "=")
		v = strings.TrimPrefix(v, "-")
		if n++; !ok || n > 16 || !isKey([]byte(name)) || v == "" || len(v) > 10 || strings.Trim(v, "0123456789") != "" {
			return false
		}
	}
	return true
}
