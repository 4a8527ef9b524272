// Package nel decodes the report batches browsers upload under the W3C
// Reporting API (application/reports+json) and keeps, of their Network Error
// Logging reports, only what h3rum stores: never a path, query, referrer
// path or user agent.
package nel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Limits of one upload.
const (
	// MaxBodyBytes is the default cap of an upload's body. Chromium keeps at
	// most 100 reports and sends each endpoint's in one upload, each report
	// about 400–600 bytes (its URL, referrer and user agent included).
	MaxBodyBytes = 128 << 10
	// MaxReports is the most reports one upload may carry: Chromium's
	// report cache holds 100.
	MaxReports = 100
	// MaxAgeMS bounds a report's age: browsers drop reports long before.
	MaxAgeMS = 7 * 24 * 3600 * 1000
	// MaxElapsedMS bounds elapsed_time (an hour).
	MaxElapsedMS = 3600 * 1000
	// MinSamplingFraction is the smallest sampling_fraction a report may
	// carry, and so the most requests (a million) one report stands for:
	// the origins' policy publishes its fractions with six decimals, so a
	// browser that follows it never reports under a smaller one.
	MinSamplingFraction = 1e-6
	// maxDepth bounds JSON nesting; a report nests three levels (the
	// request_headers a policy may ask for, four).
	maxDepth = 8
)

// ReportType is the Reporting API type of a Network Error Logging report;
// uploads carry other types too (deprecation, csp-violation, …), which
// Decode counts and skips.
const ReportType = "network-error"

// Phases of a network error report.
const (
	PhaseDNS         = "dns"
	PhaseConnection  = "connection"
	PhaseApplication = "application"
)

// TypeOK is the type of a successful request's report (sampled at the
// policy's success_fraction); every other type is a failure.
const TypeOK = "ok"

// Report is one network error report as h3rum keeps it.
type Report struct {
	// Origin is the reported request's origin, scheme://host[:port]; the
	// path and query are dropped.
	Origin string `json:"origin"`
	// Probe is whether the request was for the measurement endpoint (the
	// path /probe); the path itself is not kept.
	Probe bool `json:"probe,omitempty"`
	// PageOrigin is the origin of the referrer (the page that made the
	// request), "" when there was none.
	PageOrigin string `json:"page_origin,omitempty"`
	// AgeMS is how long before the upload the request happened.
	AgeMS int64 `json:"age_ms"`
	// Type is the NEL type: "ok", "http.error", "tcp.refused",
	// "quic.protocol", "dns.name_not_resolved", …
	Type string `json:"type"`
	// Phase is dns, connection or application.
	Phase string `json:"phase"`
	// Protocol is the protocol as the browser named it ("h2", "h3",
	// "http/1.1", "" before a connection); Proto normalises it.
	Protocol string `json:"protocol,omitempty"`
	Method   string `json:"method,omitempty"`
	// StatusCode is the HTTP status, 0 when there was no response.
	StatusCode int `json:"status_code,omitempty"`
	// ElapsedMS is the request's duration up to the error or the end of
	// the response, as the browser measured it.
	ElapsedMS int64 `json:"elapsed_ms"`
	// ServerIP is the address the browser connected to, "" when none.
	ServerIP string `json:"server_ip,omitempty"`
	// SamplingFraction is the policy's success_fraction or
	// failure_fraction that let this report through: the report stands
	// for 1/SamplingFraction requests.
	SamplingFraction float64 `json:"sampling_fraction"`
}

// Failed reports whether r is about a failed request.
func (r *Report) Failed() bool { return r.Type != TypeOK }

// Batch is what Decode keeps of one upload.
type Batch struct {
	Reports []Report
	// Ignored counts reports of other types than network-error.
	Ignored int
}

// DecodeError is why an upload was refused; Reason is a short label for
// metrics, Msg a one-line detail.
type DecodeError struct {
	Reason string
	Msg    string
}

func (e *DecodeError) Error() string { return e.Reason + ": " + e.Msg }

// Decode failure reasons.
const (
	ReasonSize     = "size"     // body over MaxBodyBytes
	ReasonJSON     = "json"     // not one well-formed JSON value
	ReasonShape    = "shape"    // not an array of report objects
	ReasonTooMany  = "too_many" // more than MaxReports reports
	ReasonField    = "field"    // a member missing or of the wrong type
	ReasonValue    = "value"    // a member out of range
	ReasonTooDeep  = "too_deep" // nesting deeper than the format has
	ReasonEncoding = "encoding" // a string that is not UTF-8
	ReasonEmpty    = "empty"    // an empty array
	ReasonURL      = "url"      // a report URL that is not an https URL
)

// DecodeReasons lists every DecodeError reason, for metrics labels.
func DecodeReasons() []string {
	return []string{ReasonSize, ReasonJSON, ReasonShape, ReasonTooMany, ReasonField, ReasonValue,
		ReasonTooDeep, ReasonEncoding, ReasonEmpty, ReasonURL}
}

func errorf(reason, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// wireReport is a report as uploaded. Pointers tell a missing member from
// a zero one; members h3rum does not keep (user_agent, request and response
// headers) are not decoded.
type wireReport struct {
	Type *string          `json:"type"`
	URL  *string          `json:"url"`
	Age  *float64         `json:"age"`
	Body *json.RawMessage `json:"body"`
}

type wireBody struct {
	Type             *string  `json:"type"`
	Phase            *string  `json:"phase"`
	Protocol         *string  `json:"protocol"`
	Method           *string  `json:"method"`
	StatusCode       *float64 `json:"status_code"`
	ElapsedTime      *float64 `json:"elapsed_time"`
	ServerIP         *string  `json:"server_ip"`
	SamplingFraction *float64 `json:"sampling_fraction"`
	Referrer         *string  `json:"referrer"`
}

var (
	typeRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	methodRE = regexp.MustCompile(`^[A-Za-z]{1,16}$`)
	protoRE  = regexp.MustCompile(`^[A-Za-z0-9./+_-]{0,32}$`)
)

// Decode parses and checks one upload. The body must be a JSON array of
// report objects, each with a string type, a string url, a non-negative
// age and an object body; network-error reports must also carry a body
// that NEL defines (type, phase, elapsed_time, sampling_fraction, …) with
// values in range, about an https URL. Members the format may add later
// are ignored; a member of the wrong type refuses the whole upload, as
// does anything that is not well-formed JSON. Reports of other types are
// counted in Batch.Ignored and dropped. Every error is a *DecodeError;
// Decode never panics.
func Decode(data []byte) (*Batch, error) {
	if len(data) > MaxBodyBytes {
		return nil, errorf(ReasonSize, "upload is %d bytes, limit %d", len(data), MaxBodyBytes)
	}
	if !utf8.Valid(data) {
		return nil, errorf(ReasonEncoding, "upload is not UTF-8")
	}
	if !json.Valid(data) {
		return nil, errorf(ReasonJSON, "upload is not one well-formed JSON value")
	}
	if d := depth(data); d > maxDepth {
		return nil, errorf(ReasonTooDeep, "JSON nests %d levels, at most %d", d, maxDepth)
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, errorf(ReasonShape, "upload is not a JSON array of reports")
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, errorf(ReasonShape, "upload is not a JSON array of reports")
	}
	if len(raw) == 0 {
		return nil, errorf(ReasonEmpty, "upload holds no reports")
	}
	if len(raw) > MaxReports {
		return nil, errorf(ReasonTooMany, "upload holds %d reports, at most %d", len(raw), MaxReports)
	}
	b := &Batch{}
	for i, m := range raw {
		r, keep, err := decodeReport(m, i)
		if err != nil {
			return nil, err
		}
		if !keep {
			b.Ignored++
			continue
		}
		b.Reports = append(b.Reports, r)
	}
	return b, nil
}

// decodeReport checks report i; keep is false for another report type.
func decodeReport(m json.RawMessage, i int) (r Report, keep bool, err error) {
	if !isObject(m) {
		return r, false, errorf(ReasonShape, "report %d is not an object", i)
	}
	var w wireReport
	if err := json.Unmarshal(m, &w); err != nil {
		return r, false, errorf(ReasonField, "report %d: %s", i, fieldError(err))
	}
	switch {
	case w.Type == nil:
		return r, false, errorf(ReasonField, "report %d has no type", i)
	case w.URL == nil:
		return r, false, errorf(ReasonField, "report %d has no url", i)
	case w.Age == nil:
		return r, false, errorf(ReasonField, "report %d has no age", i)
	case w.Body == nil || !isObject(*w.Body):
		return r, false, errorf(ReasonField, "report %d has no body object", i)
	}
	if *w.Age < 0 || *w.Age > MaxAgeMS || *w.Age != math.Trunc(*w.Age) {
		return r, false, errorf(ReasonValue, "report %d: age %g, want a whole number of ms from 0 to %d", i, *w.Age, MaxAgeMS)
	}
	if *w.Type != ReportType {
		if len(*w.Type) > 64 {
			return r, false, errorf(ReasonValue, "report %d: type longer than 64 bytes", i)
		}
		return r, false, nil
	}
	origin, probe, ok := originOf(*w.URL, true)
	if !ok {
		return r, false, errorf(ReasonURL, "report %d: url is not an absolute https URL", i)
	}
	var b wireBody
	if err := json.Unmarshal(*w.Body, &b); err != nil {
		return r, false, errorf(ReasonField, "report %d body: %s", i, fieldError(err))
	}
	switch {
	case b.Type == nil:
		return r, false, errorf(ReasonField, "report %d body has no type", i)
	case b.Phase == nil:
		return r, false, errorf(ReasonField, "report %d body has no phase", i)
	case b.ElapsedTime == nil:
		return r, false, errorf(ReasonField, "report %d body has no elapsed_time", i)
	case b.SamplingFraction == nil:
		return r, false, errorf(ReasonField, "report %d body has no sampling_fraction", i)
	}
	r = Report{Origin: origin, Probe: probe, AgeMS: int64(*w.Age), Type: *b.Type, Phase: *b.Phase}
	if !typeRE.MatchString(r.Type) {
		return r, false, errorf(ReasonValue, "report %d: body.type %.64q is not a NEL type", i, r.Type)
	}
	switch r.Phase {
	case PhaseDNS, PhaseConnection, PhaseApplication:
	default:
		return r, false, errorf(ReasonValue, "report %d: body.phase %.32q, want dns, connection or application", i, r.Phase)
	}
	if e := *b.ElapsedTime; e < 0 || e > MaxElapsedMS || e != math.Trunc(e) {
		return r, false, errorf(ReasonValue, "report %d: body.elapsed_time %g, want a whole number of ms from 0 to %d", i, e, MaxElapsedMS)
	}
	r.ElapsedMS = int64(*b.ElapsedTime)
	if f := *b.SamplingFraction; !(f >= MinSamplingFraction && f <= 1) {
		return r, false, errorf(ReasonValue, "report %d: body.sampling_fraction %g, want %g to 1 (a policy's fraction has six decimals)",
			i, f, MinSamplingFraction)
	}
	r.SamplingFraction = *b.SamplingFraction
	if b.StatusCode != nil {
		if c := *b.StatusCode; c < 0 || c > 999 || c != math.Trunc(c) {
			return r, false, errorf(ReasonValue, "report %d: body.status_code %g, want 0 to 999", i, c)
		}
		r.StatusCode = int(*b.StatusCode)
	}
	if b.Protocol != nil {
		if !protoRE.MatchString(*b.Protocol) {
			return r, false, errorf(ReasonValue, "report %d: body.protocol %.40q is not a protocol name", i, *b.Protocol)
		}
		r.Protocol = *b.Protocol
	}
	if b.Method != nil && *b.Method != "" {
		if !methodRE.MatchString(*b.Method) {
			return r, false, errorf(ReasonValue, "report %d: body.method %.20q is not a method", i, *b.Method)
		}
		r.Method = strings.ToUpper(*b.Method)
	}
	if b.ServerIP != nil && *b.ServerIP != "" {
		ip, err := netip.ParseAddr(strings.Trim(*b.ServerIP, "[]"))
		if err != nil || ip.Zone() != "" {
			return r, false, errorf(ReasonValue, "report %d: body.server_ip %.50q is not an IP address", i, *b.ServerIP)
		}
		r.ServerIP = ip.Unmap().String()
	}
	if b.Referrer != nil && *b.Referrer != "" {
		// A page's address is cut to its origin, like the beacon's; a
		// referrer that is no URL is dropped rather than refused.
		r.PageOrigin, _, _ = originOf(*b.Referrer, false)
	}
	return r, true, nil
}

// originOf returns the origin of an absolute http(s) URL (https only when
// httpsOnly), with the default port left out, and whether its path is
// /probe.
func originOf(s string, httpsOnly bool) (origin string, probe, ok bool) {
	if len(s) > 8192 {
		return "", false, false
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Opaque != "" {
		return "", false, false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && (httpsOnly || scheme != "http") {
		return "", false, false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || len(host) > 253 {
		return "", false, false
	}
	port := u.Port()
	if port != "" {
		if len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return "", false, false
		}
		if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
			port = ""
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	origin = scheme + "://" + host
	if port != "" {
		origin += ":" + port
	}
	return origin, u.Path == "/probe", true
}

// Host returns the host name of an origin made by Decode (no port, no
// brackets).
func Host(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Proto normalises a NEL protocol name the way the beacon normalises
// nextHopProtocol: "h3", "h3-29", "hq…" or anything QUIC is h3; "h2" and
// "http/2…" h2; "http/1…" h1; everything else, the empty string included,
// "unknown".
func Proto(p string) string {
	l := strings.ToLower(p)
	switch {
	case strings.HasPrefix(l, "h3") || strings.HasPrefix(l, "hq") || strings.Contains(l, "quic"):
		return "h3"
	case strings.HasPrefix(l, "h2") || strings.HasPrefix(l, "http/2"):
		return "h2"
	case strings.HasPrefix(l, "http/1"):
		return "h1"
	}
	return "unknown"
}

func isObject(m json.RawMessage) bool {
	t := bytes.TrimLeft(m, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// depth is the deepest nesting of arrays and objects in valid JSON.
func depth(data []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			d++
			deepest = max(deepest, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return deepest
}

// fieldError turns an encoding/json type error into a one-line reason
// naming the member.
func fieldError(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Sprintf("%s is %s, want %s", te.Field, te.Value, te.Type.Kind())
	}
	return "malformed member"
}

// Encode is the spool's form of reports: JSON of exactly the kept fields.
func Encode(reports []Report) ([]byte, error) {
	b, err := json.Marshal(reports)
	if err != nil {
		return nil, fmt.Errorf("encoding NEL reports: %w", err)
	}
	return b, nil
}

// DecodeSpooled reads what Encode wrote.
func DecodeSpooled(b []byte) ([]Report, error) {
	var rs []Report
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("decoding spooled NEL reports: %w", err)
	}
	return rs, nil
}
