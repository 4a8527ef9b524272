package origin

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/h3rum/h3rum/beacon"
)

// probeAnswer is what ServeHTTP writes for a probe; code 0 means probe
// already answered (an error).
type probeAnswer struct {
	code, n, pi int
	dur         time.Duration
}

// probe prepares the answer to /probe: 204 (or 200 with ?bytes=N bytes of
// incompressible body), never cached, readable cross-origin, with a
// Server-Timing header describing the connection. It is the endpoint every
// measurement hits, so it uses precomputed header values and builds
// Server-Timing in one allocation.
func (o *testOrigin) probe(w http.ResponseWriter, r *http.Request) probeAnswer {
	start := time.Now()
	pi := protoIndex(r.ProtoMajor)
	ci, creq, ok := o.admit(w, r, pi)
	if !ok {
		return probeAnswer{}
	}
	code, n := o.probeHeaders(w, r, pi)
	if code == 0 {
		return probeAnswer{}
	}
	var st connStats
	if ci != nil {
		st = ci.stats(start)
	}
	dur := time.Since(start)
	w.Header()["Server-Timing"] = serverTiming(protoLabels[pi], dur, st, ci, creq, r)
	return probeAnswer{code: code, n: n, pi: pi, dur: dur}
}

// probeHeaders checks the request and sets every probe header but
// Server-Timing. It returns the status and body size, or code 0 when it
// answered with an error.
//
//go:noinline
func (o *testOrigin) probeHeaders(w http.ResponseWriter, r *http.Request, pi int) (code, n int) {
	s := o.srv
	h := w.Header()
	h["Cache-Control"] = s.hdr.noStore
	s.cors.apply(h, r, &s.hdr)

	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	case http.MethodPost:
		if !o.readProbeBody(w, r, pi) {
			return 0, 0
		}
	default:
		o.probeMethodNotAllowed(w, pi)
		return 0, 0
	}
	n, reason := probeBytes(r.URL.RawQuery, s.maxProbeBytes)
	if reason != "" {
		o.reject(w, pi, http.StatusBadRequest, reason)
		return 0, 0
	}
	if r.Method == http.MethodOptions {
		h["Allow"] = s.hdr.probeAllow
		s.cors.preflight(h, r, &s.hdr)
		return http.StatusNoContent, 0
	}
	if n == 0 {
		return http.StatusNoContent, 0
	}
	h["Content-Type"] = s.hdr.octetStream
	h["Content-Length"] = []string{strconv.Itoa(n)}
	return http.StatusOK, n
}

// The error paths of probe live in their own functions so that probe's
// stack frame stays small (see ServeHTTP).

//go:noinline
func (o *testOrigin) probeMethodNotAllowed(w http.ResponseWriter, pi int) {
	w.Header()["Allow"] = o.srv.hdr.probeAllow
	o.reject(w, pi, http.StatusMethodNotAllowed, "method not allowed: /probe answers GET, HEAD, POST and OPTIONS")
}

// readProbeBody reads a POST's upload so that the connection stays usable
// and the timing includes it, refusing more than MaxProbeBytes.
//
//go:noinline
func (o *testOrigin) readProbeBody(w http.ResponseWriter, r *http.Request, pi int) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	o.srv.setReadDeadline(w)
	max := o.srv.maxProbeBytes
	got, err := io.CopyN(io.Discard, r.Body, int64(max)+1)
	if got > int64(max) {
		o.reject(w, pi, http.StatusRequestEntityTooLarge, "request body over "+strconv.Itoa(max)+" bytes")
		return false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		o.reject(w, pi, http.StatusRequestTimeout, "request body not received within "+o.srv.bodyTimeout().String())
		return false
	}
	if err != nil && err != io.EOF {
		o.reject(w, pi, http.StatusBadRequest, "reading request body: "+err.Error())
		return false
	}
	return true
}

// probeBytes finds bytes=N in a raw query string without allocating. A
// missing parameter is 0; anything that is not a non-negative integer up to
// max is a reason for 400.
func probeBytes(q string, max int) (int, string) {
	for q != "" {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		v, ok := strings.CutPrefix(kv, "bytes=")
		if !ok {
			if kv == "bytes" {
				return 0, "bytes must be a non-negative integer, got an empty value"
			}
			continue
		}
		if v == "" || len(v) > 12 {
			return 0, "bytes must be a non-negative integer of at most 12 digits"
		}
		n := 0
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				return 0, "bytes must be a non-negative integer, got " + strconv.Quote(v)
			}
			n = n*10 + int(c-'0')
		}
		if n > max {
			return 0, "bytes " + v + " exceeds the maximum of " + strconv.Itoa(max)
		}
		return n, ""
	}
	return 0, ""
}

// stBuf holds a Server-Timing value and the one-element slice the header
// map needs, so that both come from a single allocation.
type stBuf struct {
	v [1]string
	b [320]byte
}

// serverTiming formats the Server-Timing value of a probe response:
//
//	proto;desc=h3,app;dur=0.012,rtt;dur=0.105,minrtt;dur=0.05,rttvar;dur=0.02,lost;desc=0,cid;desc=1a2b3c4d-1f,creq;desc=3,age;dur=812.4,resumed;desc=0,early;desc=0
//
// age is the time since the connection was accepted, so a report shows
// whether a request rode a connection its warm-up opened well before.
// Durations are milliseconds with up to three decimals; unknown values are
// omitted. The list has no spaces: the value is unique per response, so
// HTTP/2 and HTTP/3 encode (and HPACK hashes) all of it every time.
func serverTiming(proto string, app time.Duration, st connStats, ci *connInfo, creq uint64, r *http.Request) []string {
	buf := new(stBuf)
	b := buf.b[:0]
	b = append(b, beacon.MetricProto+";desc="...)
	b = append(b, proto...)
	b = append(b, ","+beacon.MetricApp+";dur="...)
	b = appendMS(b, app)
	if st.rtt > 0 {
		b = append(b, ","+beacon.MetricRTT+";dur="...)
		b = appendMS(b, st.rtt)
	}
	if st.minRTT > 0 {
		b = append(b, ","+beacon.MetricMinRTT+";dur="...)
		b = appendMS(b, st.minRTT)
	}
	if st.rtt > 0 {
		b = append(b, ","+beacon.MetricRTTVar+";dur="...)
		b = appendMS(b, st.rttVar)
	}
	if st.lostKnown {
		b = append(b, ","+beacon.MetricLost+";desc="...)
		b = strconv.AppendUint(b, st.lost, 10)
	}
	if ci != nil {
		b = append(b, ","+beacon.MetricConnID+";desc="...)
		b = append(b, ci.id...)
		b = append(b, ","+beacon.MetricConnReqs+";desc="...)
		b = strconv.AppendUint(b, creq, 10)
		b = append(b, ","+beacon.MetricConnAge+";dur="...)
		b = appendMS(b, min(time.Since(ci.start), maxConnAge))
	}
	if r.TLS != nil {
		b = append(b, ","+beacon.MetricResumed+";desc="...)
		b = appendBool(b, r.TLS.DidResume)
		b = append(b, ","+beacon.MetricEarly+";desc="...)
		b = appendBool(b, EarlyData(r))
	}
	if ci != nil && ci.retried {
		b = append(b, ","+beacon.MetricRetry+";desc=1"...)
	}
	// b is not modified after this point, and lives in buf (or, if it ever
	// outgrew buf, in its own heap array), so the string may alias it.
	buf.v[0] = unsafe.String(unsafe.SliceData(b), len(b))
	return buf.v[:]
}

// maxConnAge caps Server-Timing's age at what the report format accepts
// for a duration (beacon.MaxDurationMS).
const maxConnAge = time.Hour

// appendMS appends d in milliseconds with up to three decimals.
func appendMS(b []byte, d time.Duration) []byte {
	us := (d + 500*time.Nanosecond) / time.Microsecond
	if us < 0 {
		us = 0
	}
	b = strconv.AppendInt(b, int64(us/1000), 10)
	frac := int(us % 1000)
	if frac == 0 {
		return b
	}
	digits := [3]byte{byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := 3
	for digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, '1')
	}
	return append(b, '0')
}
