package beacon

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// The fast path decodes the reports browsers actually send — canonical
// JSON with known keys, no escapes, no nulls, ASCII strings — into the same
// wire structs encoding/json would fill, without reflection, because
// decoding dominates the collector's CPU under a load of reports. Anything
// outside that subset makes it give up, and Decode takes the general path,
// whose verdicts and messages stay the reference: the fast path only ever
// answers for inputs on which the two agree (FuzzFastPath checks this).

// fastParser walks one report. ok turns false at the first thing outside
// the subset; every method is then a no-op, so callers check it once.
type fastParser struct {
	b  []byte
	i  int
	ok bool

	*arena
}

// arena holds the backing arrays for the wire structs' pointers and
// samples: one allocation each instead of one per field, made once and
// reused across reports (arenas). Every array has the capacity of the
// largest report the limits allow, so that pointers into it stay valid
// (append never reallocates below it).
type arena struct {
	floats  []float64
	ints    []int
	bools   []bool
	strs    []string
	samples []wireSample
	servers []wireServer
}

var arenas = sync.Pool{New: func() any {
	const perSample = 11
	return &arena{
		floats:  make([]float64, 0, 3+MaxSamples*perSample),
		ints:    make([]int, 0, 4+MaxSamples*8),
		bools:   make([]bool, 0, 3+MaxSamples),
		strs:    make([]string, 0, 8+MaxSamples*5),
		samples: make([]wireSample, 0, 2*MaxParallel+MaxWarmup+1),
		servers: make([]wireServer, 0, 2*MaxParallel+MaxWarmup+1),
	}
}}

// release empties a and returns it to arenas: the wire report decoded into
// it must not be used after (Decode copies every value into the Report).
func (a *arena) release() {
	clear(a.strs)
	clear(a.samples[:cap(a.samples)]) // w.S grew past a.samples' length
	clear(a.servers)
	a.floats, a.ints, a.bools, a.strs, a.samples, a.servers = a.floats[:0], a.ints[:0], a.bools[:0], a.strs[:0], a.samples[:0], a.servers[:0]
	arenas.Put(a)
}

// fastDecode returns the wire form of data, decoded into a, or ok false
// to fall back.
func fastDecode(data []byte, a *arena) (w wireReport, ok bool) {
	p := &fastParser{b: data, ok: true, arena: a}
	p.report(&w)
	p.ws()
	if !p.ok || p.i != len(p.b) || w.V == nil || !knownVersion(*w.V) {
		return wireReport{}, false
	}
	return w, true
}

func (p *fastParser) fail() { p.ok = false }

func (p *fastParser) ws() {
	// Reports come from JSON.stringify, without whitespace: one compare
	// settles the usual case.
	for p.i < len(p.b) && p.b[p.i] <= ' ' {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte (0 at the end).
func (p *fastParser) next() byte {
	p.ws()
	if !p.ok || p.i >= len(p.b) {
		p.fail()
		return 0
	}
	return p.b[p.i]
}

func (p *fastParser) expect(c byte) {
	if p.next() != c {
		p.fail()
		return
	}
	p.i++
}

// object calls field for each key of a JSON object; seen guards against
// duplicates (bit per known key, set by field through the returned index).
func (p *fastParser) object(field func(key string) int) {
	p.expect('{')
	if p.next() == '}' {
		p.i++
		return
	}
	var seen uint32
	for p.ok {
		key := p.rawString()
		p.expect(':')
		if !p.ok {
			return
		}
		bit := field(key)
		if bit < 0 || seen&(1<<bit) != 0 {
			p.fail() // unknown or duplicate key
			return
		}
		seen |= 1 << bit
		switch p.next() {
		case ',':
			p.i++
		case '}':
			p.i++
			return
		default:
			p.fail()
		}
	}
}

// array calls elem for each element of a JSON array.
func (p *fastParser) array(elem func()) {
	p.expect('[')
	if p.next() == ']' {
		p.i++
		return
	}
	for p.ok {
		elem()
		switch p.next() {
		case ',':
			p.i++
		case ']':
			p.i++
			return
		default:
			p.fail()
		}
	}
}

// rawString reads a string of printable ASCII without escapes; the
// result aliases the input, so callers copy what they keep.
func (p *fastParser) rawString() string {
	if p.next() != '"' {
		p.fail()
		return ""
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return unsafe.String(unsafe.SliceData(p.b[start:]), j-start)
		case c < 0x20 || c >= 0x7f || c == '\\':
			p.fail()
			return ""
		}
	}
	p.fail()
	return ""
}

func (p *fastParser) str() *string {
	s := p.rawString()
	if !p.ok {
		return nil
	}
	p.strs = append(p.strs, intern(s))
	return &p.strs[len(p.strs)-1]
}

// intern returns the enum-like values every report repeats as constants,
// and a copy of anything else (s aliases the request body).
func intern(s string) string {
	switch s {
	case "w":
		return "w"
	case "p":
		return "p"
	case "h1":
		return "h1"
	case "h2":
		return "h2"
	case "h3":
		return "h3"
	case "unknown":
		return "unknown"
	case "h2first":
		return "h2first"
	case "h3first":
		return "h3first"
	case "load":
		return "load"
	case "manual":
		return "manual"
	case "4g":
		return "4g"
	case "3g":
		return "3g"
	case "2g":
		return "2g"
	case "slow-2g":
		return "slow-2g"
	}
	return strings.Clone(s)
}

// number reads a JSON number literal (RFC 8259 grammar) and reports
// whether it has a fraction or exponent.
func (p *fastParser) number() (lit string, frac bool) {
	p.ws()
	start, b, j := p.i, p.b, p.i
	digits := func() int {
		n := 0
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(b) && b[j] == '-' {
		j++
	}
	if j < len(b) && b[j] == '0' {
		j++
	} else if digits() == 0 {
		p.fail()
		return "", false
	}
	if j < len(b) && b[j] == '.' {
		j++
		frac = true
		if digits() == 0 {
			p.fail()
			return "", false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		frac = true
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			p.fail()
			return "", false
		}
	}
	p.i = j
	return unsafe.String(unsafe.SliceData(b[start:]), j-start), frac
}

func (p *fastParser) float() *float64 {
	lit, _ := p.number()
	if !p.ok {
		return nil
	}
	v, ok := simpleDecimal(lit)
	if !ok {
		var err error
		if v, err = strconv.ParseFloat(lit, 64); err != nil {
			p.fail()
			return nil
		}
	}
	p.floats = append(p.floats, v)
	return &p.floats[len(p.floats)-1]
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// simpleDecimal converts what reports are made of — "-"? digits ("."
// digits)?, at most 15 digits in all — exactly as strconv.ParseFloat does:
// the digits and the power of ten are both exact in a float64, so one
// correctly rounded division gives the correctly rounded value. ok is
// false for anything else (exponents, longer numbers).
func simpleDecimal(lit string) (v float64, ok bool) {
	i, neg := 0, false
	if i < len(lit) && lit[i] == '-' {
		neg, i = true, 1
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for ; i < len(lit); i++ {
		c := lit[i]
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	v = float64(m) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

func (p *fastParser) integer() *int {
	lit, frac := p.number()
	if !p.ok || frac {
		p.fail() // encoding/json refuses 1.0 and 1e3 for an int: let it say so
		return nil
	}
	var v int64
	if d := strings.TrimPrefix(lit, "-"); len(d) <= 18 { // no overflow
		for i := 0; i < len(d); i++ {
			v = v*10 + int64(d[i]-'0')
		}
		if len(d) < len(lit) {
			v = -v
		}
	} else {
		var err error
		if v, err = strconv.ParseInt(lit, 10, 64); err != nil {
			p.fail()
			return nil
		}
	}
	p.ints = append(p.ints, int(v))
	return &p.ints[len(p.ints)-1]
}

func (p *fastParser) boolean() *bool {
	var v bool
	switch {
	case p.next() == 't' && len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "true":
		v, p.i = true, p.i+4
	case p.ok && p.b[p.i] == 'f' && len(p.b)-p.i >= 5 && string(p.b[p.i:p.i+5]) == "false":
		p.i += 5
	default:
		p.fail()
		return nil
	}
	p.bools = append(p.bools, v)
	return &p.bools[len(p.bools)-1]
}

func (p *fastParser) report(w *wireReport) {
	p.object(func(k string) int {
		switch k {
		case "v":
			w.V = p.integer()
			return 0
		case "id":
			w.ID = p.str()
			return 1
		case "site":
			w.Site = p.str()
			return 2
		case "o":
			w.O = p.str()
			return 3
		case "bv":
			w.BV = p.str()
			return 4
		case "p":
			w.P = p.boolean()
			return 5
		case "mt":
			w.MT = p.float()
			return 6
		case "par":
			w.Par = &wireParams{}
			p.params(w.Par)
			return 7
		case "c":
			w.C = &wireClient{}
			p.client(w.C)
			return 8
		case "x":
			w.X = &wireErrors{}
			p.scriptErrors(w.X)
			return 10
		case "alt":
			w.Alt = p.integer()
			return 11
		case "s":
			w.S = p.samples[:0]
			p.array(func() {
				if len(w.S) == cap(w.S) {
					p.fail() // more than any report may carry: the general path says why
					return
				}
				w.S = append(w.S, wireSample{})
				p.sample(&w.S[len(w.S)-1])
			})
			return 9
		}
		return -1
	})
}

func (p *fastParser) params(w *wireParams) {
	p.object(func(k string) int {
		switch k {
		case "n":
			w.N = p.integer()
			return 0
		case "w":
			w.W = p.integer()
			return 1
		case "b":
			w.B = p.integer()
			return 2
		case "ord":
			w.Ord = p.str()
			return 3
		case "trg":
			w.Trg = p.str()
			return 4
		}
		// A design parameter of the embedding: its bit follows the five
		// (seen has 32).
		d, i := designIndex(k)
		if i < 0 || 5+i >= 32 {
			return -1
		}
		if v := p.integer(); v != nil {
			if w.extra == nil {
				w.extra = make(map[string]int)
			}
			w.extra[d.Name] = *v
		}
		return 5 + i
	})
}

func (p *fastParser) scriptErrors(w *wireErrors) {
	p.object(func(k string) int {
		switch k {
		case "idle":
			w.Idle = p.integer()
			return 0
		case "warmup":
			w.Warmup = p.integer()
			return 1
		case "batch":
			w.Batch = p.integer()
			return 2
		case "timing":
			w.Timing = p.integer()
			return 3
		case "send":
			w.Send = p.integer()
			return 4
		}
		return -1
	})
}

func (p *fastParser) client(w *wireClient) {
	p.object(func(k string) int {
		switch k {
		case "br":
			w.BR = [][]string{}
			p.array(func() {
				pair := []string{}
				p.array(func() {
					if s := p.str(); s != nil {
						pair = append(pair, *s)
					}
				})
				w.BR = append(w.BR, pair)
			})
			return 0
		case "pf":
			w.PF = p.str()
			return 1
		case "mb":
			w.MB = p.boolean()
			return 2
		case "et":
			w.ET = p.str()
			return 3
		case "rtt":
			w.RTT = p.float()
			return 4
		case "dl":
			w.DL = p.float()
			return 5
		case "wd":
			w.WD = p.boolean()
			return 6
		}
		return -1
	})
}

func (p *fastParser) sample(w *wireSample) {
	p.object(func(k string) int {
		switch k {
		case "q":
			w.Q = p.integer()
			return 0
		case "ph":
			w.Ph = p.str()
			return 1
		case "w":
			w.W = p.str()
			return 2
		case "g":
			w.G = p.str()
			return 3
		case "st":
			w.St = p.float()
			return 4
		case "d":
			w.D = p.float()
			return 5
		case "dns":
			w.DNS = p.float()
			return 6
		case "con":
			w.Con = p.float()
			return 7
		case "tls":
			w.TLS = p.float()
			return 8
		case "tf":
			w.TF = p.float()
			return 9
		case "dl":
			w.DL = p.float()
			return 10
		case "r":
			w.R = p.boolean()
			return 11
		case "ts":
			w.TS = p.integer()
			return 12
		case "e":
			w.E = p.str()
			return 13
		case "sv":
			if len(p.servers) == cap(p.servers) {
				p.fail() // a duplicate sv in every sample: the general path says why
				return 14
			}
			p.servers = append(p.servers, wireServer{})
			w.SV = &p.servers[len(p.servers)-1]
			p.server(w.SV)
			return 14
		}
		return -1
	})
}

func (p *fastParser) server(w *wireServer) {
	p.object(func(k string) int {
		i := metricIndex(k)
		if i < 0 {
			return -1
		}
		switch serverTimingMetrics[i].kind {
		case metricDuration:
			if v := p.float(); v != nil {
				w.num[i] = *v
			}
		case metricCount:
			if v := p.integer(); v != nil {
				w.n[i] = *v
			}
		default:
			if v := p.str(); v != nil {
				w.str[i] = *v
			}
		}
		w.sent |= 1 << i
		return i
	})
}
