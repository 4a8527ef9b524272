package ingest

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
)

// endpoint is what differs between the POST endpoints that take a body
// (/beacon, /reports); the path a request takes through them — Origin,
// CORS, what can be refused before the body, the bounded body read, the
// one-line refusals and their counter, the preflight — is written once.
type endpoint struct {
	rejected      *prometheus.CounterVec // refusals by reason
	originAllowed func(origin string) bool
	cors          func(w http.ResponseWriter, origin string)
	originRefusal string // the refusal's detail for an origin, a %q verb for it
	limiter       *access.Limiter
	maxBody       func() int64
	// check refuses a request by its headers, before the gate; nil
	// checks nothing.
	check func(r *http.Request) *rejection
}

// reject answers with status and a one-line reason, and counts it.
func (e *endpoint) reject(w http.ResponseWriter, status int, reason, detail string) {
	e.rejected.WithLabelValues(reason).Inc()
	writeRejection(w, status, reason, detail)
}

// refuse answers a rejection.
func (e *endpoint) refuse(w http.ResponseWriter, rej *rejection) {
	if rej.retryAfter > 0 {
		retryAfter(w, rej.retryAfter)
	}
	e.reject(w, rej.status, rej.reason, rej.detail)
}

// preflight answers the CORS preflight a browser sends before a POST from
// a page of another origin (Chromium sends it with
// Access-Control-Request-Headers: content-type, and requires POST and
// content-type to be allowed in the answer).
func (h *Handler) preflight(e *endpoint) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if !e.originAllowed(origin) {
			access.RefuseBeforeBody(w, r)
			e.reject(w, http.StatusForbidden, beacon.ReasonOriginNotAllowed, fmt.Sprintf(e.originRefusal, origin))
			return
		}
		e.cors(w, origin)
		hd := w.Header()
		hd.Set("Access-Control-Allow-Methods", "POST")
		hd.Set("Access-Control-Allow-Headers", "Content-Type")
		hd.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
	}
}

// receive takes a POST through everything before decoding: the Origin and
// CORS, e.check, the gate (what can be refused before a byte of the body
// is read), and the body, read within e.maxBody into a pooled buffer. It
// answers a refusal itself and then reports false; otherwise the
// submission carries the body, valid until done is called.
func (h *Handler) receive(w http.ResponseWriter, r *http.Request, e *endpoint, received time.Time) (sub submission, done func(), ok bool) {
	origin := r.Header.Get("Origin")
	if !e.originAllowed(origin) {
		access.RefuseBeforeBody(w, r)
		e.reject(w, http.StatusForbidden, beacon.ReasonOriginNotAllowed, fmt.Sprintf(e.originRefusal, origin))
		return sub, nil, false
	}
	e.cors(w, origin)
	if e.check != nil {
		if rej := e.check(r); rej != nil {
			access.RefuseBeforeBody(w, r)
			e.refuse(w, rej)
			return sub, nil, false
		}
	}
	sub = h.submission(r, received)
	sub.limiter = e.limiter
	if rej := h.gate(&sub); rej != nil {
		access.RefuseBeforeBody(w, r)
		e.refuse(w, rej)
		return sub, nil, false
	}
	bp, _ := h.bodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	body, err := readBody(http.MaxBytesReader(w, r.Body, e.maxBody()), (*bp)[:0])
	*bp = body[:0]
	done = func() { h.bodies.Put(bp) }
	if err != nil {
		done()
		access.RefuseBeforeBody(w, r) // the rest of it
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			e.reject(w, http.StatusRequestEntityTooLarge, beacon.ReasonTooLarge, fmt.Sprintf("body larger than %d bytes", mbe.Limit))
			return sub, nil, false
		}
		e.reject(w, http.StatusBadRequest, beacon.ReasonReadError, "reading the body failed (sent too slowly, or cut)")
		return sub, nil, false
	}
	sub.wire = body
	return sub, done, true
}
