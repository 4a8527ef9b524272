package origin

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/ingest/access"
)

// testOrigin is one of the two test origins: the H3 origin (TCP with Alt-Svc,
// plus QUIC) or the H2 origin (TCP only, Alt-Svc: clear). It is the
// http.Handler of every server of that origin, whatever the protocol.
type testOrigin struct {
	srv       *Server
	idx       int    // 0 for the H3 origin, 1 for the H2 origin: index into metrics arrays
	label     string // originH3 or originH2
	otherHost string // requests for this host get 421; "" when hosts are not configured
	altSvc    []string
	nel       *nelHeaders // nil: no NEL policy (see NEL)

	openTCP, openQUIC prometheus.Gauge
}

// Paths the server answers itself; every other path on the origins goes to
// Server.Handler. /metrics is served on Server.MetricsAddr only.
const (
	pathProbe   = "/probe"
	pathHealthz = "/healthz"
	pathEcho    = "/echo"
	pathMetrics = "/metrics"
)

func (o *testOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ci := connInfoFrom(r.Context()); ci != nil && ci.addr != nil && o.srv.maxReqs > 0 {
		if !ci.addr.enter(o.srv.maxReqs) {
			o.tooManyRequests(w, r)
			return
		}
		defer ci.addr.leave()
	}
	if r.URL.Path != pathProbe || o.srv.NoProbe {
		o.serveOther(w, r)
		return
	}
	// The probe's answer is written from this frame, which is kept small
	// on purpose: quic-go and net/http format the Date header deep inside
	// WriteHeader, and every byte of stack above that point can make each
	// request's fresh goroutine copy its stack.
	p := o.probe(w, r)
	if p.code == 0 {
		return // already answered with an error
	}
	if p.deadline(r) {
		o.srv.setWriteDeadline(w)
	}
	w.WriteHeader(p.code)
	if p.n > 0 && r.Method != http.MethodHead {
		w.Write(o.srv.payload[:p.n])
	}
	o.srv.metrics.probeObs[p.pi].Observe(p.dur.Seconds())
	o.srv.metrics.countRequest(o.idx, p.pi, p.code)
}

// admit does what every request goes through, whatever its path: it counts
// the request on its connection, sets the origin's Alt-Svc on TCP, counts
// early data, and refuses requests for the other origin's host (421) and
// oversized headers (431). ok is false when it answered.
func (o *testOrigin) admit(w http.ResponseWriter, r *http.Request, pi int) (ci *connInfo, creq uint64, ok bool) {
	ci = connInfoFrom(r.Context())
	if ci != nil {
		creq = ci.reqs.Add(1)
	}
	if r.ProtoMajor < 3 {
		// Alt-Svc is a property of the origin, so every TCP response carries
		// it (the H2 origin's "clear" included), whatever the path.
		w.Header()["Alt-Svc"] = o.altSvc
	}
	if o.nel != nil && creq <= 1 {
		// The policy is the origin's too, but a browser keeps it for
		// NEL.MaxAge: the first response on each connection renews it.
		o.nel.set(w.Header())
	}
	if EarlyData(r) {
		o.srv.metrics.early.WithLabelValues(o.label, protoLabels[pi]).Inc()
	}
	if o.otherHost != "" && strings.EqualFold(hostOnly(r.Host), o.otherHost) {
		o.misdirected(w, pi)
		return ci, creq, false
	}
	if headerBytes(r) > o.srv.maxHeaderBytes {
		o.headersTooLarge(w, pi)
		return ci, creq, false
	}
	return ci, creq, true
}

// tooManyRequests refuses a request over MaxRequestsPerAddr before
// reading anything of it (over HTTP/1.1 closing the connection, see
// access.RefuseBeforeBody).
//
//go:noinline
func (o *testOrigin) tooManyRequests(w http.ResponseWriter, r *http.Request) {
	o.srv.metrics.refusedRequests.Inc()
	h := w.Header()
	o.srv.cors.apply(h, r, &o.srv.hdr) // so that the page can read the status
	h["Retry-After"] = o.srv.hdr.retryAfter1
	access.RefuseBeforeBody(w, r)
	o.reject(w, protoIndex(r.ProtoMajor), http.StatusTooManyRequests,
		"too many requests: this address has "+strconv.FormatInt(o.srv.maxReqs, 10)+" in flight")
}

//go:noinline
func (o *testOrigin) misdirected(w http.ResponseWriter, pi int) {
	o.reject(w, pi, http.StatusMisdirectedRequest, "misdirected request: "+o.otherHost+" is served by the other origin")
}

//go:noinline
func (o *testOrigin) headersTooLarge(w http.ResponseWriter, pi int) {
	o.reject(w, pi, http.StatusRequestHeaderFieldsTooLarge,
		"request header fields too large: over "+strconv.Itoa(o.srv.maxHeaderBytes)+" bytes")
}

// serveOther serves every path but /probe.
func (o *testOrigin) serveOther(w http.ResponseWriter, r *http.Request) {
	o.srv.setDeadlines(w, r)
	pi := protoIndex(r.ProtoMajor)
	ci, creq, ok := o.admit(w, r, pi)
	if !ok {
		return
	}
	switch r.URL.Path {
	case pathHealthz:
		o.healthz(w, r, pi)
	case pathEcho:
		if !o.srv.Echo {
			o.delegate(w, r, pi)
			return
		}
		o.serveCounted(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			o.echo(w, r, ci, creq)
		}), w, r, pi)
	default:
		o.delegate(w, r, pi)
	}
}

// reject answers with a one-line plain-text reason and counts the answer.
func (o *testOrigin) reject(w http.ResponseWriter, pi, code int, reason string) {
	http.Error(w, reason, code)
	o.srv.metrics.countRequest(o.idx, pi, code)
}

func (o *testOrigin) healthz(w http.ResponseWriter, r *http.Request, pi int) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header()["Allow"] = o.srv.hdr.getHead
		o.reject(w, pi, http.StatusMethodNotAllowed, "method not allowed: /healthz answers GET and HEAD")
		return
	}
	h := w.Header()
	h["Cache-Control"] = o.srv.hdr.noStore
	h["Content-Type"] = o.srv.hdr.textPlain
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		io.WriteString(w, "ok\n")
		if d := o.srv.HealthDetail; d != nil {
			io.WriteString(w, d())
		}
	}
	o.srv.metrics.countRequest(o.idx, pi, http.StatusOK)
}

// delegate passes the request to Server.Handler (404 when there is none)
// and counts its answer.
func (o *testOrigin) delegate(w http.ResponseWriter, r *http.Request, pi int) {
	h := o.srv.Handler
	if h == nil {
		o.reject(w, pi, http.StatusNotFound, "404 page not found")
		return
	}
	o.serveCounted(h, w, r, pi)
}

func (o *testOrigin) serveCounted(h http.Handler, w http.ResponseWriter, r *http.Request, pi int) {
	rec := &statusRecorder{ResponseWriter: w}
	h.ServeHTTP(rec, r)
	code := rec.code
	if code == 0 {
		code = http.StatusOK // what net/http and quic-go send for a handler that wrote nothing
	}
	o.srv.metrics.countRequest(o.idx, pi, code)
}

// statusRecorder notes the status a delegated handler answered with. It
// keeps http.Flusher and http.Hijacker (WebSockets over HTTP/1.1) working
// and unwraps for http.ResponseController.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 && code >= 200 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// ReadFrom keeps sendfile and friends available to io.Copy.
func (r *statusRecorder) ReadFrom(src io.Reader) (int64, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return io.Copy(r.ResponseWriter, src)
}

func (r *statusRecorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Hijack hands the connection over (WebSocket upgrades); a hijacked
// connection is counted as 101 Switching Protocols.
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.code == 0 {
		r.code = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// hostOnly strips the port from a Host header value without allocating.
func hostOnly(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			return h[1:i]
		}
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i {
		return h[:i]
	}
	return h
}

// headerBytes is the size of the request's header section, counted as
// HTTP/2 and HTTP/3 count it (name + value + 32 per field), plus the
// request target and host.
func headerBytes(r *http.Request) int {
	n := len(r.RequestURI) + len(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 32
		}
	}
	return n
}
