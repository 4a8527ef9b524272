package origin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// uniStreamGoroutines counts the server's goroutines that serve a
// unidirectional stream, here or in quic-go's HTTP/3 (the clients' are
// not counted).
func uniStreamGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var count int
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "origin.serveUniStream") || strings.Contains(g, "http3.(*RawServerConn).HandleUnidirectionalStream") {
			count++
		}
	}
	return count
}

// TestHTTP3UniStreamHold opens, over many connections, as many
// unidirectional streams as the server lets each one open, each sending
// one byte of a two-byte stream type, as a client would to hold a
// goroutine per stream for as long as its connection lives. The streams
// are capped per connection and refused with H3_STREAM_CREATION_ERROR
// within the header timeout and their goroutines end, while a QPACK stream
// that sent its type and a control stream that sent its SETTINGS are left
// alone.
func TestHTTP3UniStreamHold(t *testing.T) {
	const timeout = time.Second
	const conns, tries = 20, 100
	ts := startServer(t, &Server{testHeaderTimeout: timeout})
	var (
		clients []*quic.Conn
		stalled []*quic.SendStream
		qpack   []*quic.SendStream
	)
	for range conns {
		c, err := ts.quicDial(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseWithError(0, "") })
		clients = append(clients, c)
	}
	// One of them is an HTTP/3 client's too, whose control stream sent
	// its SETTINGS: it must survive the deadline the others miss.
	cc := (&http3.Transport{}).NewClientConn(clients[0])
	probe := func() error {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.h3+"/probe", nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("status %d, want 204", resp.StatusCode)
		}
		return nil
	}
	if err := probe(); err != nil {
		t.Fatal(err)
	}
	// Its control stream's goroutine.
	if err := eventually(func() error {
		if n := uniStreamGoroutines(); n != 1 {
			return fmt.Errorf("%d goroutines serve unidirectional streams, want 1 (the control stream)", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	before, base := runtime.NumGoroutine(), uniStreamGoroutines()
	for i, c := range clients {
		enc, err := c.OpenUniStream()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := enc.Write([]byte{0x02}); err != nil { // QPACK encoder stream
			t.Fatal(err)
		}
		qpack = append(qpack, enc)
		opened := 1
		for range tries {
			str, err := c.OpenUniStream()
			if err != nil {
				break // no stream credit left
			}
			// 0x40 begins a two-byte varint: the type never completes.
			if _, err := str.Write([]byte{0x40}); err != nil {
				t.Fatal(err)
			}
			stalled = append(stalled, str)
			opened++
		}
		if opened > maxUniStreams {
			t.Errorf("connection %d opened %d unidirectional streams, want at most %d", i, opened, maxUniStreams)
		}
	}

	// The server accepts them all; count the goroutines they hold.
	var held int
	deadline := time.Now().Add(5 * time.Second)
	for {
		held = uniStreamGoroutines() - base
		if held >= len(stalled) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	peak := runtime.NumGoroutine()

	// Each stalled stream is refused within the header timeout.
	wait, cancel := context.WithTimeout(t.Context(), timeout+10*time.Second)
	defer cancel()
	var refused int
	var other error // the first other outcome
	for _, str := range stalled {
		select {
		case <-str.Context().Done():
		case <-wait.Done():
		}
		err := context.Cause(str.Context())
		if se, ok := errors.AsType[*quic.StreamError](err); ok && se.Remote &&
			se.ErrorCode == quic.StreamErrorCode(http3.ErrCodeStreamCreationError) {
			refused++
		} else if other == nil {
			other = cmp.Or(err, errors.New("still open"))
		}
	}
	var left int
	deadline = time.Now().Add(5 * time.Second)
	for {
		left = uniStreamGoroutines() - base
		if left <= 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d connections, %d stalled streams: %d goroutines held them, %d refused; goroutines %d before, %d at the peak, %d after (%d still on a stream)",
		conns, len(stalled), held, refused, before, peak, runtime.NumGoroutine(), left)
	if refused != len(stalled) {
		t.Errorf("%d of %d stalled streams refused with H3_STREAM_CREATION_ERROR; another one: %v", refused, len(stalled), other)
	}
	if left > 0 {
		t.Errorf("%d goroutines still serve unidirectional streams after the header timeout", left)
	}
	for i, enc := range qpack {
		if err := context.Cause(enc.Context()); err != nil {
			t.Errorf("connection %d's QPACK encoder stream: %v, want it left open", i, err)
		}
	}

	// The connections serve on.
	if err := probe(); err != nil {
		t.Errorf("a request after the refusals: %v", err)
	}
}

// TestHTTP3ControlStreamSettings: a control stream that stops after its
// type closes its connection with H3_MISSING_SETTINGS within the header
// timeout, as does one that begins with another frame, while a client that
// sent its SETTINGS keeps its connection past the timeout.
func TestHTTP3ControlStreamSettings(t *testing.T) {
	const timeout = time.Second
	ts := startServer(t, &Server{testHeaderTimeout: timeout})

	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"type only", []byte{0x00}},
		{"half a SETTINGS frame", []byte{0x00, 0x04, 0x04, 0x06}},
		{"GOAWAY first", []byte{0x00, 0x07, 0x01, 0x00}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ts.quicDial(t, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			str, err := c.OpenUniStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := str.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.Context().Done():
			case <-time.After(timeout + 10*time.Second):
				t.Fatalf("the connection is still open %v after its control stream stalled", timeout+10*time.Second)
			}
			ae, ok := errors.AsType[*quic.ApplicationError](context.Cause(c.Context()))
			if !ok || !ae.Remote || ae.ErrorCode != quic.ApplicationErrorCode(http3.ErrCodeMissingSettings) {
				t.Errorf("connection closed with %v, want H3_MISSING_SETTINGS from the server", context.Cause(c.Context()))
			}
		})
	}

	t.Run("SETTINGS sent", func(t *testing.T) {
		c, err := ts.quicDial(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseWithError(0, "")
		cc := (&http3.Transport{}).NewClientConn(c) // opens its control stream with SETTINGS
		probe := func() {
			t.Helper()
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.h3+"/probe", nil)
			resp, err := cc.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d, want 204", resp.StatusCode)
			}
		}
		probe()
		time.Sleep(2 * timeout)
		if err := context.Cause(c.Context()); err != nil {
			t.Fatalf("the connection closed after the header timeout: %v", err)
		}
		probe()
	})
}
