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
	ignoredUnknownType    = "unknown_type"
	ignoredOtherOrigin    = "other_origin"
	ignoredPageNotAllowed = "page_not_allowed"
)

func (h *Handler) initNEL() {
	for _, r := range []string{beacon.ReasonTooLarge, beacon.ReasonReadError, beacon.ReasonOriginNotAllowed, beacon.ReasonTooEarly, beacon.ReasonRateLimited,
		beacon.ReasonBusy, beacon.ReasonOverloaded, beacon.ReasonShuttingDown, beacon.ReasonSpoolError, beacon.ReasonCanceled, beacon.ReasonContentType} {
		h.m.nelRejected.WithLabelValues(r)
	}
	for _, r := range nel.DecodeReasons() {
		h.m.nelRejected.WithLabelValues(beacon.ReasonDecodePrefix + r)
	}
	h.nelEP = endpoint{rejected: h.m.nelRejected, originAllowed: h.nelOriginAllowed, cors: nelCORS,
		originRefusal: "origin %.100q is not an origin this collector serves", limiter: h.nelLimiter, maxBody: h.maxNELBody,
		check: func(r *http.Request) *rejection {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != nelMediaType {
				return &rejection{status: http.StatusUnsupportedMediaType, reason: beacon.ReasonContentType,
					detail: fmt.Sprintf("Content-Type %.60q, want %s", r.Header.Get("Content-Type"), nelMediaType)}
			}
			return nil
		}}
	h.m.nelIgnored.WithLabelValues(ignoredUnknownType)
	h.m.nelIgnored.WithLabelValues(ignoredOtherOrigin)
	h.m.nelIgnored.WithLabelValues(ignoredPageNotAllowed)
}

func (h *Handler) maxNELBody() int64 {
	if h.MaxNELBytes > 0 {
		return min(h.MaxNELBytes, nel.MaxBodyBytes)
	}
	return nel.MaxBodyBytes
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

func (h *Handler) reports(w http.ResponseWriter, r *http.Request) {
	received := time.Now().UTC()
	h.m.nelUploads.Inc()
	sub, done, ok := h.receive(w, r, &h.nelEP, received)
	if !ok {
		return
	}
	defer done()
	b, rej := h.admitNEL(r.Context(), sub)
	if rej == nil && b != nil {
		if err := h.NELSink.AcceptNEL(r.Context(), *b); err != nil {
			rej = acceptRejection(err)
		}
	}
	if rej != nil {
		h.nelEP.refuse(w, rej)
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
	// A report's page is held to the rule a beacon's Origin is
	// (originAllowed): a page that may not post its runs does not get its
	// origin stored through a report either, and a report without a
	// referrer passes, as a beacon without Origin does.
	kept, otherOrigin, otherPage := batch.Reports[:0], 0, 0
	for _, rep := range batch.Reports {
		switch {
		case !h.nelHostAllowed(nel.Host(rep.Origin)):
			otherOrigin++
		case !h.originAllowed(rep.PageOrigin):
			otherPage++
		default:
			kept = append(kept, rep)
		}
	}
	if otherOrigin > 0 {
		h.m.nelIgnored.WithLabelValues(ignoredOtherOrigin).Add(float64(otherOrigin))
	}
	if otherPage > 0 {
		h.m.nelIgnored.WithLabelValues(ignoredPageNotAllowed).Add(float64(otherPage))
	}
	if len(kept) == 0 {
		return nil, nil
	}
	run := h.Enricher.Enrich(Envelope{Received: sub.received, ClientIP: sub.client, UserAgent: sub.userAgent, GeoCountry: sub.geoCountry})
	return &store.NELBatch{ID: uuid.New(), Received: sub.received, Reports: kept, Enrichment: run.Enrichment}, nil
}
