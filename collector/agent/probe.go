package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"time"

	"github.com/h3rum/h3rum/beacon"
)

// measurement is one probe request as it happened: its moments, the
// response's header (the body is read and closed) and its outcome.
type measurement struct {
	want       beacon.Proto
	t          *timing
	start, end time.Time
	resp       *http.Response // nil when no response arrived in full
	body       int64          // body bytes read
	// errCode is the script's error code: "timeout" (Timeout passed),
	// "network" (anything else that made the request fail, as a rejected
	// fetch), "http_<status>" (a response other than 2xx), "" (success).
	errCode string
}

// probe sends the seq-th probe request of the run to cl's origin.
func (r *run) probe(ctx context.Context, cl *client, seq int) *measurement {
	return r.request(ctx, cl, http.MethodGet, strconv.Itoa(seq))
}

// request sends GET <origin>/probe?bytes=<b>&r=<run id>.<tag> as the
// script does (method may be http3.MethodGet0RTT), reads the body to the
// end within Timeout, and waits, within the same Timeout, for a handshake
// the request started to complete.
func (r *run) request(ctx context.Context, cl *client, method, tag string) *measurement {
	m := &measurement{want: cl.proto, t: &timing{}}
	rctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	url := cl.origin + "/probe?bytes=" + strconv.Itoa(r.c.Bytes) + "&r=" + r.idHex + "." + tag
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, m.t.trace()), method, url, nil)
	if err != nil { // the origin was validated: cannot happen
		m.start, m.end, m.errCode = time.Now(), time.Now(), "network"
		return m
	}
	req.Header.Set("User-Agent", userAgent)
	m.start = time.Now()
	resp, err := cl.rt.RoundTrip(req)
	if err == nil {
		m.body, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	m.end = time.Now()
	switch {
	case err != nil && rctx.Err() != nil && ctx.Err() == nil:
		m.errCode = "timeout"
	case err != nil:
		m.errCode = "network"
	default:
		m.resp = resp
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			m.errCode = "http_" + strconv.Itoa(resp.StatusCode)
		}
	}
	m.t.awaitHandshake(rctx)
	return m
}

// noServerTiming is the ServerTiming of a response without the header.
var noServerTiming = beacon.NoServerTiming()

// sample is m as the script reports a request (PROTOCOL.md, "Samples"),
// with Resource Timing's moments taken from the transports' traces:
// startTime is the request's start, domainLookup the DNS lookup,
// connectStart…connectEnd the TCP connect and TLS handshake or the QUIC
// handshake (secureConnectionStart its TLS part: all of it for QUIC),
// requestStart the moment the request was written, responseStart its
// first response byte, responseEnd the end of its body. A request that
// failed without a full response has no timings (-1), as a fetch that was
// rejected leaves no entry.
func (m *measurement) sample(r *run, seq int, ph beacon.Phase) beacon.Sample {
	s := beacon.Sample{Seq: seq, Phase: ph, Want: m.want, Got: beacon.ProtoUnknown, Start: ms(m.start.Sub(r.t0)),
		Duration: -1, DNS: -1, Connect: -1, TLS: -1, TTFB: -1, Download: -1, Server: noServerTiming, Error: m.errCode}
	if m.resp == nil {
		return s
	}
	t := m.t
	t.mu.Lock()
	defer t.mu.Unlock()
	s.Got = protoOf(m.resp.ProtoMajor)
	s.Duration = ms(m.end.Sub(m.start))
	s.DNS = span(t.dnsStart, t.dnsDone, 0)
	if !t.connStart.IsZero() {
		end := t.connDone
		if !t.tlsStart.IsZero() {
			end = t.tlsDone
		}
		s.Connect = span(t.connStart, end, -1)
	} else {
		s.Connect = 0
	}
	s.TLS = span(t.tlsStart, t.tlsDone, 0)
	if !t.tlsStart.IsZero() && t.tlsDone.IsZero() {
		s.TLS = -1
	}
	s.TTFB = span(t.wrote, t.first, -1)
	s.Download = span(t.first, m.end, -1)
	s.Reused = t.connStart.IsZero()
	if t.gotConn {
		s.Reused = t.reused
	}
	s.TransferSize = transferSize(m.resp, m.body)
	s.Server = parseServerTiming(m.resp.Header.Values("Server-Timing"))
	return s
}

// handshake is m as a handshake sample: as sample, but its Duration runs
// from the start of the connection (connectStart, after any DNS lookup) to
// the end of the body, and it is never on a reused connection.
func (m *measurement) handshake(r *run, seq int) beacon.Sample {
	s := m.sample(r, seq, beacon.PhaseHandshake)
	s.Reused = false
	if m.resp == nil {
		return s
	}
	m.t.mu.Lock()
	s.Duration = span(m.t.connStart, m.end, -1)
	m.t.mu.Unlock()
	return s
}

// span is b - a in ms; none when a is zero (the step did not happen);
// -1 when it started but did not end.
func span(a, b time.Time, none float64) float64 {
	switch {
	case a.IsZero():
		return none
	case b.IsZero():
		return -1
	}
	return ms(b.Sub(a))
}

// ms converts d to milliseconds rounded to 1 µs, as the script rounds,
// within the wire format's range.
func ms(d time.Duration) float64 {
	d = min(max(d, 0), beacon.MaxDurationMS*time.Millisecond)
	return float64(d.Round(time.Microsecond)/time.Microsecond) / 1000
}

func protoOf(major int) beacon.Proto {
	switch major {
	case 3:
		return beacon.ProtoH3
	case 2:
		return beacon.ProtoH2
	case 1:
		return beacon.ProtoH1
	}
	return beacon.ProtoUnknown
}

// transferSize is the sample's ts: the body bytes plus the response header
// section's size as HPACK and QPACK count it (name + value + 32 bytes per
// field, RFC 7541 §4.1, :status included). That is the decoded size, an
// estimate of what crossed the wire: the compressed header block is not
// visible through net/http or quic-go. Browsers' transferSize similarly
// adds a header size to the encoded body size.
func transferSize(resp *http.Response, body int64) int {
	n := body + int64(len(":status")+3+32)
	for k, vs := range resp.Header {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 32)
		}
	}
	return int(min(n, 1<<30))
}
