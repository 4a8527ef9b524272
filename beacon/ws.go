package beacon

import "encoding/json"

// WSMessage is one report sent over the collector's /ingest/ws: an id of
// the sender's choosing, echoed in the acknowledgement, and the report in
// the same wire format as POST /beacon. Source "agent" (what `h3rum agent`
// sends) stores the run as the agent's, never pooled with browsers';
// absent or "browser" is a browser's report relayed (the only kind before
// agents). Handshakes, agents only, are the run's handshake samples
// (DecodeHandshakes).
type WSMessage struct {
	ID         string          `json:"id"`
	Source     string          `json:"source,omitempty"`
	Report     json.RawMessage `json:"report"`
	Handshakes json.RawMessage `json:"handshakes,omitempty"`
}

// WSAck acknowledges a WSMessage once its report is durable (OK), or says
// why it was refused. Reason is one of the Reason* codes.
type WSAck struct {
	ID     string `json:"id"`
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// The reasons the collector gives for refusing a report: the reason label
// of its rejection counters, the reason of a WSAck, and what a sender
// decides by whether to send again.
const (
	ReasonTooLarge         = "too_large"
	ReasonReadError        = "read_error"
	ReasonSiteNotAllowed   = "site_not_allowed"
	ReasonOriginNotAllowed = "origin_not_allowed"
	ReasonTooEarly         = "too_early"
	ReasonRateLimited      = "rate_limited"
	ReasonBusy             = "busy"
	ReasonOverloaded       = "overloaded"
	ReasonShuttingDown     = "shutting_down"
	ReasonSpoolError       = "spool_error"
	ReasonCanceled         = "canceled"
	ReasonUnauthorized     = "unauthorized"
	ReasonBadMessage       = "bad_message"
	ReasonContentType      = "content_type" // a /reports upload that is not a reports media type
	// Decode failures are ReasonDecodePrefix + DecodeError.Reason.
	ReasonDecodePrefix = "decode_"
)

// Transient reports whether a refusal is about the collector's state
// rather than the report (those it answers with a Retry-After over HTTP),
// so that the report is worth sending again.
func Transient(reason string) bool {
	switch reason {
	case ReasonRateLimited, ReasonOverloaded, ReasonBusy, ReasonShuttingDown, ReasonSpoolError, ReasonCanceled, ReasonTooEarly:
		return true
	}
	return false
}
