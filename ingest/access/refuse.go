package access

import (
	"net/http"
	"time"
)

// RefuseBeforeBody precedes a refusal sent without reading (all of) the
// request body. Over HTTP/1.x net/http would first read the unread body to
// keep the connection, so a client stalling its body would hold a goroutine
// until the body timeout: "Connection: close" makes the server answer at
// once, and the read deadline bounds its drain before close to
// RefusalGrace. HTTP/2 and HTTP/3 answer at once already and must not carry
// the header (HTTP/2 takes it for a GOAWAY of the page's shared connection).
func RefuseBeforeBody(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	// A writer without deadlines (ErrNotSupported) still answers at once.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(RefusalGrace))
}

// RefusalGrace is how long an HTTP/1.x connection refused before its body
// may go on sending that body before it is closed: net/http's own wait
// before closing a connection whose request it cut short.
const RefusalGrace = 500 * time.Millisecond
