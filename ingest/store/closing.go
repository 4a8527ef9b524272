package store

import (
	"cmp"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
)

// drainTimeout bounds how long a closed connection keeps reading what the
// server still sends before it is closed for good.
const drainTimeout = 2 * time.Second

// closingGently returns opts whose connections end with a half-close: the
// client's last bytes (a query's Cancel, when a report's client has gone)
// are followed by a FIN, and what the server still sends is read and
// dropped for up to drainTimeout before the socket closes. clickhouse-go
// closes a connection at once after a Cancel, with the query's blocks
// unread, and the kernel answers those with a reset: the server then
// fails a read with "connection reset by peer" instead of reading the
// Cancel and the end of the stream, which 26.x's listener in the chdb
// library does not survive, and which every server logs as an error.
func closingGently(opts *clickhouse.Options) *clickhouse.Options {
	o := *opts
	dial, secure, timeout := opts.DialContext, opts.TLS, cmp.Or(opts.DialTimeout, 30*time.Second) // clickhouse-go's default
	o.DialContext = func(ctx context.Context, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if dial != nil {
			c, err = dial(ctx, addr)
		} else {
			c, err = (&net.Dialer{Timeout: timeout}).DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		c = &gentleConn{Conn: c}
		if secure == nil || dial != nil {
			// A DialContext of the caller's own does its TLS itself, as
			// clickhouse-go would leave it to.
			return c, nil
		}
		tc := tls.Client(c, secure)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
	return &o
}

// gentleConn is a connection whose Close half-closes it and drains it
// (see closingGently).
type gentleConn struct {
	net.Conn
	once sync.Once
}

func (c *gentleConn) Close() error {
	c.once.Do(func() {
		hc, ok := c.Conn.(interface{ CloseWrite() error })
		if !ok || hc.CloseWrite() != nil {
			c.Conn.Close()
			return
		}
		// Its owner is the deadline: it ends within drainTimeout.
		go func() {
			c.Conn.SetReadDeadline(time.Now().Add(drainTimeout))
			io.Copy(io.Discard, c.Conn)
			c.Conn.Close()
		}()
	})
	return nil
}
