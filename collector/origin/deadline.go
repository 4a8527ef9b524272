package origin

import (
	"net/http"
	"time"
)

// largeProbeBody is the /probe answer size above which the answer gets a
// write deadline. A smaller one fits in what clients take in without
// reading (HTTP/2's initial 64 KiB window, the larger ones HTTP/3 stacks
// open with, the socket buffers under HTTP/1.1), so it does not wait on a
// client that stops reading, and the measured path stays free of timers.
// A client that opens with a zero window can still hold such an answer;
// the stream and per-address caps bound how many.
const largeProbeBody = 16 << 10

// deadline reports whether the probe answer p needs a write deadline. An
// HTTP/3 answer always gets one (cheap there: a field on the stream),
// because QUIC flow control covers headers too, so a client that opens
// with a zero stream window could otherwise hold even a 204. Over HTTP/1.1
// and HTTP/2 headers are not flow controlled; a body up to largeProbeBody
// goes without one (see there).
func (p *probeAnswer) deadline(r *http.Request) bool {
	return r.ProtoMajor == 3 || p.n > largeProbeBody && r.Method != http.MethodHead
}

// setWriteDeadline gives the response WriteTimeout from now.
//
//go:noinline
func (s *Server) setWriteDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(s.writeTimeout()))
}

// setReadDeadline gives the request body BodyTimeout from now.
//
//go:noinline
func (s *Server) setReadDeadline(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.bodyTimeout()))
}

// setDeadlines sets the deadlines of a request on any path but /probe:
// WriteTimeout for its response and, when it has a body, BodyTimeout for
// that.
//
// Over HTTP/1.1 the deadlines are the connection's, and net/http takes
// care that they end with the request: it clears the write deadline once
// the response is written, and the read deadline when the body has been
// read and it starts reading ahead to notice the client going away (the
// deadline passing during that read would cancel the request's context).
func (s *Server) setDeadlines(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	now := time.Now()
	_ = rc.SetWriteDeadline(now.Add(s.writeTimeout()))
	if r.Body != nil && r.Body != http.NoBody {
		_ = rc.SetReadDeadline(now.Add(s.bodyTimeout()))
	}
}
