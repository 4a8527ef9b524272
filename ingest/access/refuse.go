package access

import (
	"net/http"
	"time"
)

// RefuseBeforeBody precedes a refusal sent without reading (all of) the request
// body. Over HTTP/1.x net/http reads an unread body of up to 256 KiB
// before it writes a reply, to keep the connection, so a client stalling
// its body waited for its own 429 until the body timeout, holding a
// goroutine. "Connection: close" makes the server answer at once; and as
// it still reads what remains of the body before it closes (so that its
// close does not reset the connection under an honest client's unread
// answer), the read deadline bounds that to RefusalGrace.
//
// HTTP/2 and HTTP/3 answer on the stream at once and must not carry the
// header: the HTTP/2 server takes it for a GOAWAY of the whole connection,
// which the page's other requests share, and HTTP/3 forbids
// connection-specific fields.
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
