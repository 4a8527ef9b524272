package origin

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/quicvarint"
)

// h3Conns serves HTTP/3 on the H3 origin's QUIC connections, one loop per
// connection over http3.RawServerConn, in place of http3.Server's own
// loop. That loop hands every stream to HTTP/3 with no deadline, so a
// client could keep maxConcurrentStreams request streams per connection
// open for as long as it liked by never finishing their header sections
// (its keep-alive PINGs keep the connection itself open, and an open
// stream stops HTTP/3's idle timer), and hold a goroutine with each
// unidirectional stream whose type it never finished. Here each request
// stream must deliver its header section within headerTimeout, and each
// unidirectional stream its type and, on the control stream, its SETTINGS
// frame (see serveUniStream); the handler then sets the deadlines of the
// request's body and response (deadline.go).
//
// Graceful shutdown: http3 keeps a connection's control stream to itself,
// so no GOAWAY can be sent. Once shutdown begins, each connection stops
// taking requests, rejects the streams its client opens from then on with
// H3_REQUEST_REJECTED (which tells the client the request was not
// processed and may be retried elsewhere, RFC 9114 section 8.1), and is
// closed with H3_NO_ERROR once its requests in flight are done and their
// responses have had time to arrive (quicDrainLinger).
type h3Conns struct {
	srv           *http3.Server // the settings, Handler, ConnContext and IdleTimeout
	headerTimeout time.Duration

	grace, closing           context.Context
	endGrace, closeAll       context.CancelFunc
	mu                       sync.Mutex
	open                     int // connection loops running
	drained                  chan struct{}
	shuttingDown, hasDrained bool
}

func newH3Conns(srv *http3.Server, headerTimeout time.Duration) *h3Conns {
	h := &h3Conns{srv: srv, headerTimeout: headerTimeout, drained: make(chan struct{})}
	h.grace, h.endGrace = context.WithCancel(context.Background())
	h.closing, h.closeAll = context.WithCancel(context.Background())
	return h
}

// serve accepts connections from ln until shutdown begins or ln closes.
func (h *h3Conns) serve(ln *quic.EarlyListener) error {
	for {
		conn, err := ln.Accept(h.grace)
		if err != nil {
			if h.grace.Err() != nil || errors.Is(err, quic.ErrServerClosed) {
				return nil
			}
			return err
		}
		if !h.add() {
			conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
			continue
		}
		go func() {
			defer h.done()
			h.serveConn(conn)
		}()
	}
}

func (h *h3Conns) add() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.shuttingDown {
		return false
	}
	h.open++
	return true
}

func (h *h3Conns) done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open--
	h.checkDrained()
}

// checkDrained closes drained once shutdown has begun and no connection
// is left. h.mu is held.
func (h *h3Conns) checkDrained() {
	if h.shuttingDown && h.open == 0 && !h.hasDrained {
		h.hasDrained = true
		close(h.drained)
	}
}

// serveConn serves one connection's requests until it closes or shutdown
// begins, then drains it.
func (h *h3Conns) serveConn(conn *quic.Conn) {
	hconn, err := h.srv.NewRawServerConn(conn)
	if err != nil {
		conn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeInternalError), "")
		return
	}
	go func() {
		for {
			str, err := conn.AcceptUniStream(context.Background())
			if err != nil {
				return // the connection closed
			}
			str.SetReadDeadline(time.Now().Add(h.headerTimeout))
			go serveUniStream(hconn, str)
		}
	}()
	var requests sync.WaitGroup
	for {
		str, err := conn.AcceptStream(h.grace)
		if err != nil {
			break // the connection closed, or shutdown began
		}
		str.SetReadDeadline(time.Now().Add(h.headerTimeout))
		requests.Go(func() { hconn.HandleRequestStream(str) })
	}
	if conn.Context().Err() != nil {
		return
	}
	// Shutdown: no new requests; close once those in flight are done.
	go func() {
		for {
			str, err := conn.AcceptStream(context.Background())
			if err != nil {
				return
			}
			str.ReleaseStreamCredit()
			str.CancelRead(quic.StreamErrorCode(http3.ErrCodeRequestRejected))
			str.CancelWrite(quic.StreamErrorCode(http3.ErrCodeRequestRejected))
		}
	}()
	finished := make(chan struct{})
	go func() {
		requests.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-h.closing.Done():
	case <-conn.Context().Done():
	}
	// A response whose handler has returned may still be on its way: give
	// it time to arrive and be acknowledged (or the client time to close)
	// before closing, which would discard what is not yet delivered.
	linger := time.NewTimer(max(quicDrainLinger, 3*conn.ConnectionStats().SmoothedRTT))
	defer linger.Stop()
	select {
	case <-linger.C:
	case <-h.closing.Done():
	case <-conn.Context().Done():
	}
	hconn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeNoError), "")
}

// maxUniStreams is how many unidirectional streams a client may have open
// on one connection: the control stream and the two QPACK streams HTTP/3
// defines, and three spare for the GREASE and extension streams a client
// may open, which are refused at once and so give their place back. (quic-go
// would allow 100.)
const maxUniStreams = 6

// maxSettingsFrame is the largest SETTINGS frame awaited before the control
// stream is handed over; quic-go refuses larger ones itself.
const maxSettingsFrame = 8 << 10

// Why a control stream is not handed to HTTP/3.
var (
	errNoSettings   = errors.New("control stream does not begin with SETTINGS")
	errSettingsLate = errors.New("control stream's SETTINGS frame is late")
)

// serveUniStream hands str to HTTP/3 once what HTTP/3 reads of it before
// it settles has arrived: its type and, on the control stream, the SETTINGS
// frame that must come first. The wait is bounded by str's read deadline,
// set when it was accepted and cleared here; after that, the control stream
// stays open for the connection's life, and every other type is done with
// at once. A stream whose type is late is refused with
// H3_STREAM_CREATION_ERROR (RFC 9114 section 6.2 tolerates a stream reset
// before its type); a control stream whose SETTINGS frame is late or missing
// closes the connection with H3_MISSING_SETTINGS.
func serveUniStream(hconn *http3.RawServerConn, str *quic.ReceiveStream) {
	switch err := peekUniHeader(str); {
	case err == errSettingsLate || err == errNoSettings:
		hconn.CloseWithError(quic.ApplicationErrorCode(http3.ErrCodeMissingSettings), "")
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		str.CancelRead(quic.StreamErrorCode(http3.ErrCodeStreamCreationError))
		return
	}
	// Other errors (the stream ended or was reset, the connection closed)
	// are HTTP/3's to handle, as they were before the peek.
	str.SetReadDeadline(time.Time{})
	hconn.HandleUnidirectionalStream(str)
}

// peekUniHeader waits until str has delivered its stream type and, on a
// control stream, the whole of its first frame, which must be SETTINGS,
// without consuming any of it.
func peekUniHeader(str *quic.ReceiveStream) error {
	buf := make([]byte, 0, 24) // three varints: stream type, frame type, length
	// varint peeks the varint that follows buf and appends it to buf.
	varint := func() (uint64, error) {
		at := len(buf)
		buf = buf[:at+1]
		if _, err := str.Peek(buf); err != nil {
			return 0, err
		}
		buf = buf[:at+1<<(buf[at]>>6)]
		if _, err := str.Peek(buf); err != nil {
			return 0, err
		}
		v, _, err := quicvarint.Parse(buf[at:])
		return v, err
	}
	typ, err := varint()
	if err != nil || typ != streamTypeControl {
		return err
	}
	late := func(err error) error {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errSettingsLate
		}
		return err
	}
	frame, err := varint()
	if err != nil {
		return late(err)
	}
	if frame != frameTypeSettings {
		return errNoSettings
	}
	n, err := varint()
	if err != nil || n > maxSettingsFrame {
		return late(err)
	}
	whole := make([]byte, len(buf)+int(n))
	_, err = str.Peek(whole)
	return late(err)
}

// HTTP/3 stream and frame types (RFC 9114 sections 6.2 and 7.2).
const (
	streamTypeControl = 0x00
	frameTypeSettings = 0x04
)

// quicDrainLinger is the least time a connection stays open at shutdown
// once its requests are done; three smoothed round trips when longer.
const quicDrainLinger = 250 * time.Millisecond

// shutdown stops taking connections and requests, and waits until every
// connection has finished its requests in flight and closed, or ctx ends,
// when the remaining ones are closed and ctx's error returned.
func (h *h3Conns) shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.shuttingDown = true
	h.checkDrained()
	h.mu.Unlock()
	h.endGrace()
	select {
	case <-h.drained:
		return nil
	case <-ctx.Done():
		h.closeAll()
		return ctx.Err()
	}
}

// close closes every connection at once.
func (h *h3Conns) close() {
	h.mu.Lock()
	h.shuttingDown = true
	h.checkDrained()
	h.mu.Unlock()
	h.endGrace()
	h.closeAll()
}
