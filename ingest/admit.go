package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
)

// submission is one report as a transport received it: POST /beacon from
// a browser, or a message on /ingest/ws from an agent.
type submission struct {
	wire       []byte
	received   time.Time
	client     netip.Addr
	userAgent  string
	geoCountry string // from the trusted CDN header, "" when not configured
	// earlyData: the request arrived as TLS 0-RTT data and could be a replay.
	earlyData bool
	// limiter is the rate the submission counts against: the per-address
	// one for browsers, the connection's own for agents; nil: none.
	limiter *access.Limiter
	// source is store.SourceAgent for an agent's run over the WebSocket
	// ingest, else "" (a browser); handshakes is an agent run's handshake
	// samples as received (JSON array), nil for none.
	source     string
	handshakes []byte
}

// submission describes what r says about its sender: client address (from
// a trusted proxy's header if the peer is one), user agent, the CDN's
// country (only from a trusted proxy), and whether it came as early data.
func (h *Handler) submission(r *http.Request, received time.Time) submission {
	sub := submission{received: received, client: h.Clients.IP(r), userAgent: r.UserAgent(), earlyData: isEarlyData(r)}
	if h.GeoHeader != "" && h.Clients.PeerTrusted(r) {
		sub.geoCountry = r.Header.Get(h.GeoHeader)
	}
	return sub
}

// rejection is why a submission was refused: an HTTP status (or the
// WebSocket ack's reason), a one-line detail, and how long to wait before
// retrying (0: do not).
type rejection struct {
	status     int
	reason     string
	detail     string
	retryAfter time.Duration
}

// Admission is one path for every transport, in two steps, cheapest
// refusals first. gate runs before the report's bytes are read or parsed:
// early data and the rate limit. admit then takes a decoding slot and
// decodes, checks the site and enriches.

// gate refuses a submission that may not be decoded at all.
func (h *Handler) gate(sub *submission) *rejection {
	if sub.earlyData {
		return &rejection{status: http.StatusTooEarly, reason: beacon.ReasonTooEarly,
			detail: "report sent as TLS early data; retry after the handshake"}
	}
	if sub.limiter != nil {
		if ok, wait := sub.limiter.Allow(sub.client, sub.received); !ok {
			return &rejection{status: http.StatusTooManyRequests, reason: beacon.ReasonRateLimited,
				detail: "too many reports from this address", retryAfter: wait}
		}
	}
	return nil
}

// admit turns a gated submission's bytes into an enriched run. The
// decoding slot covers the CPU work only, not the wait for durability.
func (h *Handler) admit(ctx context.Context, sub submission) (store.Run, *rejection) {
	if !h.acquire(ctx) {
		return store.Run{}, &rejection{status: http.StatusServiceUnavailable, reason: beacon.ReasonOverloaded,
			detail: "collector busy decoding other reports; retry (or raise --ingest-concurrency)", retryAfter: time.Second}
	}
	defer h.release()
	rep, err := beacon.Decode(sub.wire)
	if err != nil {
		return store.Run{}, h.decodeRejection(err)
	}
	if !h.siteAllowed(rep.Site) {
		return store.Run{}, &rejection{status: http.StatusForbidden, reason: beacon.ReasonSiteNotAllowed,
			detail: fmt.Sprintf("site %q is not served by this collector", rep.Site)}
	}
	var hs []beacon.Sample
	if sub.handshakes != nil {
		if hs, err = beacon.DecodeHandshakes(sub.handshakes); err != nil {
			return store.Run{}, h.decodeRejection(err)
		}
	}
	run := h.Enricher.Enrich(Envelope{Report: rep, Wire: sub.wire, Received: sub.received,
		ClientIP: sub.client, UserAgent: sub.userAgent, GeoCountry: sub.geoCountry})
	if sub.source == store.SourceAgent {
		run.Source, run.Browser, run.BrowserMajor, run.Bot = store.SourceAgent, BrowserAgent, 0, false
		if len(hs) > 0 {
			run.Handshakes, run.HandshakeWire = hs, sub.handshakes
		}
	}
	return run, nil
}

// fieldNone is the rejected-fields label of a refusal no one field is at
// fault for.
const fieldNone = "none"

// decodeRejection maps a decode error to a rejection, and counts the
// field at fault.
func (h *Handler) decodeRejection(err error) *rejection {
	de, ok := errors.AsType[*beacon.DecodeError](err)
	if !ok {
		h.m.rejectedFields.WithLabelValues(fieldNone).Inc()
		return &rejection{status: http.StatusBadRequest, reason: beacon.ReasonDecodePrefix + beacon.ReasonJSON, detail: err.Error()}
	}
	field := de.Field
	if field == "" {
		field = fieldNone
	}
	h.m.rejectedFields.WithLabelValues(field).Inc()
	status := http.StatusBadRequest
	if de.Reason == beacon.ReasonSize {
		status = http.StatusRequestEntityTooLarge
	}
	return &rejection{status: status, reason: beacon.ReasonDecodePrefix + de.Reason, detail: de.Msg}
}

// acceptRejection maps a Sink error to a rejection.
func acceptRejection(err error) *rejection {
	switch {
	case errors.Is(err, ErrBusy):
		return &rejection{http.StatusServiceUnavailable, beacon.ReasonBusy,
			"ingest queue and spool are full (ClickHouse is behind; raise --spool-max-bytes or check ClickHouse)", 5 * time.Second}
	case errors.Is(err, ErrClosed):
		return &rejection{http.StatusServiceUnavailable, beacon.ReasonShuttingDown, "collector is shutting down", 5 * time.Second}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &rejection{http.StatusServiceUnavailable, beacon.ReasonCanceled, "request ended before the report was stored", time.Second}
	default:
		return &rejection{http.StatusServiceUnavailable, beacon.ReasonSpoolError, "could not store the report", 5 * time.Second}
	}
}
