package beacon

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
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
type DecodeError struct {
	Reason string
	Msg    string
}

func (e *DecodeError) Error() string { return e.Reason + ": " + e.Msg }

func errorf(reason, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// Wire types: pointers tell a missing field from a zero one.
type (
	wireReport struct {
		V    *int         `json:"v"`
		ID   *string      `json:"id"`
		Site *string      `json:"site"`
		O    *string      `json:"o"`
		BV   *string      `json:"bv"`
		P    *bool        `json:"p"`
		MT   *float64     `json:"mt"`
		Par  *wireParams  `json:"par"`
		C    *wireClient  `json:"c"`
		S    []wireSample `json:"s"`
	}
	wireParams struct {
		N   *int    `json:"n"`
		W   *int    `json:"w"`
		B   *int    `json:"b"`
		Ord *string `json:"ord"`
		Trg *string `json:"trg"`
	}
	wireClient struct {
		BR  [][]string `json:"br"`
		PF  *string    `json:"pf"`
		MB  *bool      `json:"mb"`
		ET  *string    `json:"et"`
		RTT *float64   `json:"rtt"`
		DL  *float64   `json:"dl"`
		WD  *bool      `json:"wd"`
	}
	wireSample struct {
		Q   *int        `json:"q"`
		Ph  *string     `json:"ph"`
		W   *string     `json:"w"`
		G   *string     `json:"g"`
		St  *float64    `json:"st"`
		D   *float64    `json:"d"`
		DNS *float64    `json:"dns"`
		Con *float64    `json:"con"`
		TLS *float64    `json:"tls"`
		TF  *float64    `json:"tf"`
		DL  *float64    `json:"dl"`
		R   *bool       `json:"r"`
		TS  *int        `json:"ts"`
		E   *string     `json:"e"`
		SV  *wireServer `json:"sv"`
	}
	wireServer struct {
		Proto   *string  `json:"proto"`
		App     *float64 `json:"app"`
		RTT     *float64 `json:"rtt"`
		MinRTT  *float64 `json:"minrtt"`
		RTTVar  *float64 `json:"rttvar"`
		Lost    *int     `json:"lost"`
		CID     *string  `json:"cid"`
		CReq    *int     `json:"creq"`
		Resumed *int     `json:"resumed"`
		Early   *int     `json:"early"`
	}
)

// Decode parses and validates one report in wire format v1 (PROTOCOL.md).
// Every rejection is a *DecodeError. Decode never panics on any input.
func Decode(data []byte) (*Report, error) {
	if len(data) > MaxReportBytes {
		return nil, errorf(ReasonSize, "report is %d bytes, limit %d", len(data), MaxReportBytes)
	}
	w, ok := fastDecode(data)
	if !ok {
		var err error
		if w, err = decodeWire(data); err != nil {
			return nil, err
		}
	}
	return w.report()
}

// decodeWire is the general path: encoding/json plus the checks it does
// not make, with the precedence of rejections PROTOCOL.md gives.
func decodeWire(data []byte) (wireReport, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var w wireReport
	err := dec.Decode(&w)
	// The key check runs on every report and its verdict comes first. On
	// bytes the decoder accepted it skips its own validity pass.
	if kerr := checkKeys(data, err == nil && onlySpace(data[dec.InputOffset():])); kerr != nil {
		return w, kerr
	}
	if err != nil || w.V == nil || *w.V != Version {
		// Classify: a report of another version fails for that reason
		// first, whatever else is wrong with it by v1's rules.
		var peek struct {
			V json.RawMessage `json:"v"`
		}
		if perr := json.Unmarshal(data, &peek); perr != nil {
			return w, errorf(ReasonJSON, "%v", perr)
		}
		if peek.V == nil || string(peek.V) == "null" {
			return w, errorf(ReasonVersion, `missing "v"`)
		}
		if string(peek.V) != "1" {
			return w, errorf(ReasonVersion, "unsupported version %.16s, want %d", peek.V, Version)
		}
	}
	if err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return w, errorf(ReasonField, "%s: JSON %s where %s belongs", te.Field, te.Value, te.Type)
		}
		if strings.HasPrefix(err.Error(), "json: unknown field") {
			return w, errorf(ReasonField, "%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		return w, errorf(ReasonJSON, "%v", err)
	}
	return w, nil
}

// checkKeys rejects what encoding/json would accept loosely: invalid
// JSON or trailing data, a top level other than an object, nesting deeper
// than the format has, and object keys that are duplicated, escaped or not
// lower-case ASCII (encoding/json matches keys case-insensitively, with
// Unicode folding, and keeps the last duplicate). It scans the bytes once
// without allocating for typical reports; valid says data is already known
// to be one valid JSON value.
func checkKeys(data []byte, valid bool) *DecodeError {
	if !valid && !json.Valid(data) {
		var v json.RawMessage
		if err := json.Unmarshal(data, &v); err != nil {
			return errorf(ReasonJSON, "%v", err)
		}
		return errorf(ReasonJSON, "invalid JSON")
	}
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' {
		return errorf(ReasonJSON, "report is not a JSON object")
	}
	type frame struct {
		obj  bool
		keys [16][]byte
		n    int
	}
	var stack [maxDepth + 1]frame
	depth, wantKey := 0, false
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			j, escaped := i+1, false
			for ; data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
					escaped = true
				}
			}
			if wantKey {
				k := data[i+1 : j]
				if escaped || !isKey(k) {
					return errorf(ReasonField, "field name %.20q is not lower-case ASCII", k)
				}
				f := &stack[depth]
				for _, seen := range f.keys[:f.n] {
					if string(seen) == string(k) {
						return errorf(ReasonField, "duplicate field %q", k)
					}
				}
				if f.n == len(f.keys) {
					return errorf(ReasonField, "more than %d fields in an object", len(f.keys))
				}
				f.keys[f.n] = k
				f.n++
				wantKey = false
			}
			i = j
		case '{', '[':
			if depth == maxDepth {
				return errorf(ReasonLimit, "nested deeper than %d levels", maxDepth)
			}
			depth++
			stack[depth].obj, stack[depth].n = data[i] == '{', 0
			wantKey = stack[depth].obj
		case '}', ']':
			depth--
			wantKey = false
		case ',':
			wantKey = stack[depth].obj
		}
	}
	return nil
}

// onlySpace reports whether b holds nothing but JSON whitespace.
func onlySpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

func isKey(k []byte) bool {
	if len(k) == 0 || len(k) > 16 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func missing(name string) *DecodeError { return errorf(ReasonField, "missing %q", name) }

func (w *wireReport) report() (*Report, error) {
	r := &Report{Version: Version}
	if w.ID == nil {
		return nil, missing("id")
	}
	if len(*w.ID) != 32 || strings.ToLower(*w.ID) != *w.ID {
		return nil, errorf(ReasonValue, "run id %.40q is not 32 lower-case hex digits", *w.ID)
	}
	if _, err := hex.Decode(r.RunID[:], []byte(*w.ID)); err != nil {
		return nil, errorf(ReasonValue, "run id %q is not 32 lower-case hex digits", *w.ID)
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
		return nil, errorf(ReasonValue, "mt %g ms outside [0, %d]", *w.MT, MaxMainThread)
	}
	r.MainThreadMS = *w.MT
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
	if err := w.samples(r); err != nil {
		return nil, err
	}
	return r, nil
}

func (w *wireParams) params(p *Params) error {
	for _, f := range []struct {
		name   string
		v      *int
		lo, hi int
		reason string
		to     *int
	}{
		{"par.n", w.N, 1, MaxParallel, ReasonLimit, &p.Parallel},
		{"par.w", w.W, 0, MaxWarmup, ReasonLimit, &p.Warmup},
		{"par.b", w.B, 0, MaxBytes, ReasonLimit, &p.Bytes},
	} {
		if f.v == nil {
			return missing(f.name)
		}
		if *f.v < f.lo || *f.v > f.hi {
			reason := ReasonLimit
			if *f.v < f.lo {
				reason = ReasonValue
			}
			return errorf(reason, "%s is %d, want %d to %d", f.name, *f.v, f.lo, f.hi)
		}
		*f.to = *f.v
	}
	if w.Ord == nil {
		return missing("par.ord")
	}
	if *w.Ord != "h2first" && *w.Ord != "h3first" {
		return errorf(ReasonValue, `par.ord %.20q, want "h2first" or "h3first"`, *w.Ord)
	}
	p.Order = *w.Ord
	if w.Trg == nil {
		return missing("par.trg")
	}
	if *w.Trg != "load" && *w.Trg != "manual" {
		return errorf(ReasonValue, `par.trg %.20q, want "load" or "manual"`, *w.Trg)
	}
	p.Trigger = *w.Trg
	return nil
}

func (w *wireClient) client(c *Client) error {
	if len(w.BR) > maxBrands {
		return errorf(ReasonLimit, "c.br has %d brands, limit %d", len(w.BR), maxBrands)
	}
	for i, b := range w.BR {
		if len(b) != 2 {
			return errorf(ReasonValue, "c.br[%d] has %d elements, want [brand, version]", i, len(b))
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
		if err := checkText(*w.ET, 16, isPrintable, "c.et", -1); err != nil {
			return err
		}
		c.EffectiveType = *w.ET
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
			return errorf(ReasonValue, "%s %g outside [0, 1e6]", f.name, *f.v)
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
		return errorf(ReasonLimit, "%d samples, the parameters allow %d", len(w.S), total)
	}
	if len(w.S) == 0 {
		return errorf(ReasonValue, "no samples")
	}
	if !r.Partial && len(w.S) != total {
		return errorf(ReasonValue, "complete run with %d samples, the parameters say %d", len(w.S), total)
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
			return errorf(ReasonValue, "%s %d outside [0, %d)", name("q"), q, total)
		}
		if seen[q] {
			return errorf(ReasonValue, "duplicate seq %d", q)
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
			return errorf(ReasonValue, `%s %.20q, want "w" or "p"`, name("ph"), *ws.Ph)
		}
		if ws.W == nil {
			return missing(name("w"))
		}
		s.Want = Proto(*ws.W)
		if s.Phase != wantPhase || s.Want != wantProto {
			return errorf(ReasonValue, "seq %d is %s to %.20q, the parameters say %s to %s", q, s.Phase, *ws.W, wantPhase, wantProto)
		}
		if ws.G == nil {
			return missing(name("g"))
		}
		var ok bool
		if s.Got, ok = proto(*ws.G); !ok {
			return errorf(ReasonValue, "%s %.20q is not h1, h2, h3 or unknown", name("g"), *ws.G)
		}
		if ws.St == nil {
			return missing(name("st"))
		}
		if *ws.St < 0 || *ws.St > MaxDurationMS {
			return errorf(ReasonValue, "%s %g ms outside [0, %d]", name("st"), *ws.St, MaxDurationMS)
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
			return errorf(ReasonValue, "%s %d outside [0, 2^30]", name("ts"), *ws.TS)
		}
		s.TransferSize = *ws.TS
		if ws.E != nil {
			if !isErrorCode(*ws.E) {
				return errorf(ReasonValue, "%s %.40q is not an error code ([a-z0-9_]{1,32})", name("e"), *ws.E)
			}
			s.Error = *ws.E
		}
		s.Server = ServerTiming{Handle: -1, RTT: -1, MinRTT: -1, RTTVar: -1, Proto: ProtoUnknown}
		if ws.SV != nil {
			if err := ws.SV.server(&s.Server, i); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *wireServer) server(st *ServerTiming, i int) error {
	at := func() string { return fmt.Sprintf("s[%d].sv", i) }
	st.Present = true
	if w.Proto != nil {
		var ok bool
		if st.Proto, ok = proto(*w.Proto); !ok {
			return errorf(ReasonValue, "%s.proto %.20q is not h1, h2, h3 or unknown", at(), *w.Proto)
		}
	}
	for _, f := range []struct {
		name string
		v    *float64
		to   *float64
	}{{"s[%d].sv.app", w.App, &st.Handle}, {"s[%d].sv.rtt", w.RTT, &st.RTT}, {"s[%d].sv.minrtt", w.MinRTT, &st.MinRTT}, {"s[%d].sv.rttvar", w.RTTVar, &st.RTTVar}} {
		if f.v == nil {
			continue
		}
		if err := checkDuration(*f.v, false, f.name, i); err != nil {
			return err
		}
		*f.to = *f.v
	}
	for _, f := range []struct {
		name   string
		v      *int
		lo, hi int
		to     *int
	}{{"lost", w.Lost, 0, maxCount, &st.Lost}, {"creq", w.CReq, 1, maxCount, &st.ConnReqs}} {
		if f.v == nil {
			continue
		}
		if *f.v < f.lo || *f.v > f.hi {
			return errorf(ReasonValue, "%s.%s %d outside [%d, %d]", at(), f.name, *f.v, f.lo, f.hi)
		}
		*f.to = *f.v
	}
	if w.CID != nil {
		if err := checkText(*w.CID, maxTextLen, isTokenChar, "s[%d].sv.cid", i); err != nil {
			return err
		}
		st.ConnID = *w.CID
	}
	for _, f := range []struct {
		name string
		v    *int
		to   *bool
	}{{"resumed", w.Resumed, &st.Resumed}, {"early", w.Early, &st.EarlyData}} {
		if f.v == nil {
			continue
		}
		if *f.v != 0 && *f.v != 1 {
			return errorf(ReasonValue, "%s.%s is %d, want 0 or 1", at(), f.name, *f.v)
		}
		*f.to = *f.v == 1
	}
	return nil
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
	return errorf(ReasonValue, "%s is %g ms, want %s", label(name, i), v, want)
}

// checkText checks a string's length and characters; the name is built
// only for an error (label).
func checkText(s string, max int, ok func(rune) bool, name string, i int) error {
	if s == "" {
		return errorf(ReasonValue, "%s is empty", label(name, i))
	}
	if len(s) > max {
		return errorf(ReasonLimit, "%s is %d bytes, limit %d", label(name, i), len(s), max)
	}
	for _, c := range s {
		if !ok(c) {
			return errorf(ReasonValue, "%s %.40q has a character outside its set", label(name, i), s)
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
		return errorf(ReasonLimit, "o is %d bytes, limit %d", len(o), maxOriginLen)
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || strings.ContainsAny(o, "?#") {
		return errorf(ReasonValue, "o %.80q is not an http(s) origin", o)
	}
	return nil
}
