package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/h3rum/h3rum/beacon"
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
	// rateLimited: the per-address report rate applies. Agents on the
	// WebSocket authenticate with a token instead.
	rateLimited bool
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

// admit is the one path from a report's bytes to an enriched run, for
// every transport: decode, site, early data, rate, enrichment.
func (h *Handler) admit(sub submission) (store.Run, *rejection) {
	rep, err := beacon.Decode(sub.wire)
	if err != nil {
		status, reason, detail := decodeRejection(err)
		return store.Run{}, &rejection{status: status, reason: reason, detail: detail}
	}
	if !h.siteAllowed(rep.Site) {
		return store.Run{}, &rejection{status: http.StatusForbidden, reason: ReasonSiteNotAllowed,
			detail: fmt.Sprintf("site %q is not served by this collector", rep.Site)}
	}
	if sub.earlyData {
		return store.Run{}, &rejection{status: http.StatusTooEarly, reason: ReasonTooEarly,
			detail: "report sent as TLS early data; retry after the handshake"}
	}
	if sub.rateLimited && h.limiter != nil {
		if ok, wait := h.limiter.allow(sub.client, sub.received); !ok {
			return store.Run{}, &rejection{status: http.StatusTooManyRequests, reason: ReasonRateLimited,
				detail: "too many reports from this address", retryAfter: wait}
		}
	}
	return h.Enricher.Enrich(Envelope{Report: rep, Wire: sub.wire, Received: sub.received,
		ClientIP: sub.client, UserAgent: sub.userAgent, GeoCountry: sub.geoCountry}), nil
}

// decodeRejection maps a decode error to a status, reason label and detail.
func decodeRejection(err error) (int, string, string) {
	de, ok := errors.AsType[*beacon.DecodeError](err)
	if !ok {
		return http.StatusBadRequest, reasonDecodePrefix + beacon.ReasonJSON, err.Error()
	}
	status := http.StatusBadRequest
	if de.Reason == beacon.ReasonSize {
		status = http.StatusRequestEntityTooLarge
	}
	return status, reasonDecodePrefix + de.Reason, de.Msg
}

// acceptRejection maps a Sink error to a rejection.
func acceptRejection(err error) *rejection {
	switch {
	case errors.Is(err, ErrBusy):
		return &rejection{http.StatusServiceUnavailable, ReasonBusy,
			"ingest queue and spool are full (ClickHouse is behind; raise --spool-max-bytes or check ClickHouse)", 5 * time.Second}
	case errors.Is(err, ErrClosed):
		return &rejection{http.StatusServiceUnavailable, ReasonShuttingDown, "collector is shutting down", 5 * time.Second}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &rejection{http.StatusServiceUnavailable, ReasonCanceled, "request ended before the report was stored", time.Second}
	default:
		return &rejection{http.StatusServiceUnavailable, ReasonSpoolError, "could not store the report", 5 * time.Second}
	}
}
