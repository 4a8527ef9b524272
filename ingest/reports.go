package ingest

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/nel"
	"github.com/h3rum/h3rum/ingest/store"
)

// NELSink is where the Handler hands accepted uploads of Network Error
// Logging reports; *Pipeline is one. AcceptNEL returns nil only once the
// upload is durable.
type NELSink interface {
	AcceptNEL(ctx context.Context, b store.NELBatch) error
}

// POST /reports takes what browsers upload under the Reporting API
// (application/reports+json) to the endpoint the origins' NEL, Report-To
// and Reporting-Endpoints headers name. It goes through the same door as
// /beacon — Origin, early data and a per-address rate limit before a byte
// of the body is read, a capped body that must arrive within the origins'
// body timeout, a decoding slot — and is acknowledged (204) only once the
// spool holds it. Every refusal is a status with a one-line
// "reason: detail", counted in h3rum_ingest_nel_rejected_total.

// Reasons of /reports refusals beyond the shared ones.
const ()

const nelMediaType = "application/reports+json"

// Reasons a report in an accepted upload is not stored.
const (
	ignoredUnknownType = "unknown_type"
	ignoredOtherOrigin = "other_origin"
)

func (h *Handler) initNEL() {
	for _, r := range []string{beacon.ReasonTooLarge, beacon.ReasonReadError, beacon.ReasonOriginNotAllowed, beacon.ReasonTooEarly, beacon.ReasonRateLimited,
		beacon.ReasonBusy, beacon.ReasonOverloaded, beacon.ReasonShuttingDown, beacon.ReasonSpoolError, beacon.ReasonCanceled, beacon.ReasonContentType} {
		h.m.nelRejected.WithLabelValues(r)
	}
	for _, r := range nel.DecodeReasons() {
		h.m.nelRejected.WithLabelValues(beacon.ReasonDecodePrefix + r)
	}
	h.m.nelIgnored.WithLabelValues(ignoredUnknownType)
	h.m.nelIgnored.WithLabelValues(ignoredOtherOrigin)
}

func (h *Handler) maxNELBody() int64 {
	if h.MaxNELBytes > 0 {
		return min(h.MaxNELBytes, nel.MaxBodyBytes)
	}
	return nel.MaxBodyBytes
}

// rejectNEL answers a /reports request with status and a one-line reason,
// and counts it.
func (h *Handler) rejectNEL(w http.ResponseWriter, status int, reason, detail string) {
	h.m.nelRejected.WithLabelValues(reason).Inc()
	writeRejection(w, status, reason, detail)
}

func (h *Handler) refuseNEL(w http.ResponseWriter, rej *rejection) {
	if rej.retryAfter > 0 {
		retryAfter(w, rej.retryAfter)
	}
	h.rejectNEL(w, rej.status, rej.reason, rej.detail)
}

// nelHostAllowed reports whether NEL reports about host may be stored.
func (h *Handler) nelHostAllowed(host string) bool {
	if len(h.NELHosts) == 0 {
		return true
	}
	return slices.ContainsFunc(h.NELHosts, func(a string) bool { return strings.EqualFold(a, host) })
}

// nelOriginAllowed: a browser uploads with the Origin of the origin whose
// policy it follows, one of the two test origins; a request without Origin
// (not sent by a page or a browser's reporting) may post too.
func (h *Handler) nelOriginAllowed(origin string) bool {
	if origin == "" || len(h.NELHosts) == 0 {
		return true
	}
	host := nel.Host(origin)
	return host != "" && h.nelHostAllowed(host)
}

// nelCORS lets an allowed Origin read the answer; credentials are never
// allowed (browsers upload reports without them).
func nelCORS(w http.ResponseWriter, origin string) {
	hd := w.Header()
	hd.Add("Vary", "Origin")
	if origin != "" {
		hd.Set("Access-Control-Allow-Origin", origin)
	}
}

// reportsPreflight answers the CORS preflight a browser sends before an
// upload to an endpoint of another origin (Chromium sends it with
// Access-Control-Request-Headers: content-type, and requires POST and
// content-type to be allowed in the answer).
func (h *Handler) reportsPreflight(w http.ResponseWriter, r *http.Request) {
	origin := r.Header.Get("Origin")
	if !h.nelOriginAllowed(origin) {
		access.RefuseBeforeBody(w, r)
		h.rejectNEL(w, http.StatusForbidden, beacon.ReasonOriginNotAllowed, fmt.Sprintf("origin %.100q is not an origin this collector serves", origin))
		return
	}
	nelCORS(w, origin)
	hd := w.Header()
	hd.Set("Access-Control-Allow-Methods", "POST")
	hd.Set("Access-Control-Allow-Headers", "Content-Type")
	hd.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) reports(w http.ResponseWriter, r *http.Request) {
	received := time.Now().UTC()
	h.m.nelUploads.Inc()
	origin := r.Header.Get("Origin")
	if !h.nelOriginAllowed(origin) {
		access.RefuseBeforeBody(w, r)
		h.rejectNEL(w, http.StatusForbidden, beacon.ReasonOriginNotAllowed, fmt.Sprintf("origin %.100q is not an origin this collector serves", origin))
		return
	}
	nelCORS(w, origin)
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != nelMediaType {
		access.RefuseBeforeBody(w, r)
		h.rejectNEL(w, http.StatusUnsupportedMediaType, beacon.ReasonContentType,
			fmt.Sprintf("Content-Type %.60q, want %s", r.Header.Get("Content-Type"), nelMediaType))
		return
	}
	sub := h.submission(r, received)
	sub.limiter = h.nelLimiter
	if rej := h.gate(&sub); rej != nil {
		access.RefuseBeforeBody(w, r)
		h.refuseNEL(w, rej)
		return
	}
	bp, _ := h.bodies.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer h.bodies.Put(bp)
	body, err := readBody(http.MaxBytesReader(w, r.Body, h.maxNELBody()), (*bp)[:0])
	*bp = body[:0]
	if err != nil {
		access.RefuseBeforeBody(w, r) // the rest of it
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			h.rejectNEL(w, http.StatusRequestEntityTooLarge, beacon.ReasonTooLarge, fmt.Sprintf("body larger than %d bytes", mbe.Limit))
			return
		}
		h.rejectNEL(w, http.StatusBadRequest, beacon.ReasonReadError, "reading the body failed (sent too slowly, or cut)")
		return
	}
	sub.wire = body
	b, rej := h.admitNEL(r.Context(), sub)
	if rej == nil && b != nil {
		if err := h.NELSink.AcceptNEL(r.Context(), *b); err != nil {
			rej = acceptRejection(err)
		}
	}
	if rej != nil {
		h.refuseNEL(w, rej)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

// admitNEL decodes a gated upload in a decoding slot, drops what is not to
// be stored and enriches the rest; a nil batch without a rejection means
// nothing was left to store.
func (h *Handler) admitNEL(ctx context.Context, sub submission) (*store.NELBatch, *rejection) {
	if !h.acquire(ctx) {
		return nil, &rejection{status: http.StatusServiceUnavailable, reason: beacon.ReasonOverloaded,
			detail: "collector busy decoding other reports; retry (or raise --ingest-concurrency)", retryAfter: time.Second}
	}
	defer h.release()
	batch, err := nel.Decode(sub.wire)
	if err != nil {
		de, ok := errors.AsType[*nel.DecodeError](err)
		if !ok {
			return nil, &rejection{status: http.StatusBadRequest, reason: beacon.ReasonDecodePrefix + nel.ReasonJSON, detail: err.Error()}
		}
		status := http.StatusBadRequest
		if de.Reason == nel.ReasonSize {
			status = http.StatusRequestEntityTooLarge
		}
		return nil, &rejection{status: status, reason: beacon.ReasonDecodePrefix + de.Reason, detail: de.Msg}
	}
	if batch.Ignored > 0 {
		h.m.nelIgnored.WithLabelValues(ignoredUnknownType).Add(float64(batch.Ignored))
	}
	kept := batch.Reports[:0]
	for _, rep := range batch.Reports {
		if h.nelHostAllowed(nel.Host(rep.Origin)) {
			kept = append(kept, rep)
		}
	}
	if n := len(batch.Reports) - len(kept); n > 0 {
		h.m.nelIgnored.WithLabelValues(ignoredOtherOrigin).Add(float64(n))
	}
	if len(kept) == 0 {
		return nil, nil
	}
	run := h.Enricher.Enrich(Envelope{Received: sub.received, ClientIP: sub.client, UserAgent: sub.userAgent, GeoCountry: sub.geoCountry})
	return &store.NELBatch{ID: uuid.New(), Received: sub.received, Reports: kept, Enrichment: run.Enrichment}, nil
}
