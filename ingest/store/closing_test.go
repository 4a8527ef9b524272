package store

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// TestClosingGently: a client that closes while the server is still
// sending (a query cancelled mid-stream) leaves the server a clean end of
// stream to read, never a reset, as a plain close does.
func TestClosingGently(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gentle    bool
		wantReset bool
	}{
		{"plain close", false, true},
		{"gentle close", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			served := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					served <- err
					return
				}
				defer c.Close()
				// The query's answer: more than the client reads.
				block := make([]byte, 64<<10)
				for i := 0; i < 16; i++ {
					if _, err := c.Write(block); err != nil {
						served <- err
						return
					}
				}
				// Then the next packet: the client's, or the end of the stream.
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				b := make([]byte, 16)
				for {
					if _, err := c.Read(b); err != nil {
						served <- err
						return
					}
				}
			}()
			opts := &clickhouse.Options{}
			if tc.gentle {
				opts = closingGently(opts)
			} else {
				opts.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
				}
			}
			c, err := opts.DialContext(context.Background(), ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("cancel")); err != nil {
				t.Fatal(err)
			}
			// Some of the answer has arrived, unread.
			time.Sleep(100 * time.Millisecond)
			c.Close()
			select {
			case err := <-served:
				reset := errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
				if reset != tc.wantReset {
					t.Errorf("the server ended on %v; a reset: %v, want %v", err, reset, tc.wantReset)
				}
				if !tc.wantReset && !errors.Is(err, io.EOF) {
					t.Errorf("the server ended on %v, want the end of the stream", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the server did not see the connection end")
			}
		})
	}
}
