package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
)

// Envelope renders r as the message the collector's WebSocket ingest
// takes (beacon.WSMessage), one JSON object:
//
//	{"id": "<run id>", "source": "agent", "report": {…wire format v1…}, "handshakes": [{…, "ph": "h"}, …]}
func (r *Result) Envelope() ([]byte, error) {
	rep, err := beacon.Encode(r.Report)
	if err != nil {
		return nil, fmt.Errorf("agent: encoding the report: %w", err)
	}
	hs, err := beacon.EncodeHandshakes(r.Handshakes)
	if err != nil {
		return nil, fmt.Errorf("agent: encoding the handshakes: %w", err)
	}
	// An Encoder that leaves <, > and & alone passes the report's bytes
	// through as Encode made them.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(beacon.WSMessage{ID: hex.EncodeToString(r.Report.RunID[:]), Source: store.SourceAgent,
		Report: rep, Handshakes: hs}); err != nil {
		return nil, fmt.Errorf("agent: encoding the message: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Defaults of the Sender fields.
const (
	DefaultAckTimeout = 30 * time.Second
	DefaultMaxBackoff = 30 * time.Second
	minBackoff        = 500 * time.Millisecond
)

// Sender delivers runs to a collector's WebSocket ingest (GET
// /ingest/ws with the agent token): one message per run, answered by an
// acknowledgement once the collector has made it durable. One connection
// serves every Send, concurrent ones included; it is opened at the first
// Send and reopened, with capped exponential backoff, whenever it breaks.
// Set the fields, then call Send; Close at the end.
type Sender struct {
	// URL is the ingest endpoint, ws:// or wss://host[:port]/ingest/ws.
	// Required.
	URL string
	// Token is the collector's agent token, sent as "Authorization:
	// Bearer <token>". Required.
	Token string
	// Roots verifies a wss:// collector; nil uses the system's.
	Roots *x509.CertPool
	// Resolve maps host names to IP addresses, as Config.Resolve.
	Resolve Resolve
	// AckTimeout is how long a message may wait for its acknowledgement
	// before the connection counts as broken and the run is sent again on
	// a new one. Default 30 s.
	AckTimeout time.Duration
	// MaxBackoff caps the wait between attempts — to connect, or to send
	// again a run the collector could not take at the moment — which starts
	// at 500 ms and doubles, with jitter. Default 30 s.
	MaxBackoff time.Duration
	// Logger receives connection events and refused runs; nil discards.
	Logger *slog.Logger

	mu     sync.Mutex
	conn   *wsConn
	closed bool
}

// RefusedError is a run the collector refused for a reason that sending it
// again would not change (a report it cannot decode, a site it does not
// serve…). Reason is the collector's label (ingest.Reason*).
type RefusedError struct {
	ID, Reason, Msg string
}

func (e *RefusedError) Error() string {
	return "collector refused run " + e.ID + ": " + e.Msg
}

// Validate reports the first problem with s's fields, if any.
func (s *Sender) Validate() error {
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil {
		return fmt.Errorf("agent: ingest URL %q: want ws:// or wss://host[:port]/ingest/ws", s.URL)
	}
	if s.Token == "" {
		return errors.New("agent: no agent token for the ingest")
	}
	for host, ip := range s.Resolve {
		if _, err := netip.ParseAddr(ip); err != nil || host == "" {
			return fmt.Errorf("agent: Resolve %q → %q: want a host name and an IP address", host, ip)
		}
	}
	return nil
}

// Send delivers res and returns once the collector has acknowledged it as
// durable. A run refused for a transient reason (rate limit, a full
// queue, shutdown…) and a connection that breaks before the
// acknowledgement make it send the run again after a backoff, until ctx
// ends; so a run may be delivered twice if an acknowledgement is lost. A
// run refused for good is logged and returned as a *RefusedError. A
// collector that refuses the connection itself (wrong token: 401, no
// WebSocket ingest: 404) is an error at once.
func (s *Sender) Send(ctx context.Context, res *Result) error {
	if err := s.Validate(); err != nil {
		return err
	}
	msg, err := res.Envelope()
	if err != nil {
		return err
	}
	id := hex.EncodeToString(res.Report.RunID[:])
	log := s.logger()
	backoff := minBackoff
	for {
		c, err := s.connection(ctx)
		var ack beacon.WSAck
		if err == nil {
			ack, err = c.send(ctx, id, msg, orDefault(s.AckTimeout, DefaultAckTimeout))
			if err != nil && ctx.Err() == nil {
				s.drop(c)
				log.Warn("ingest connection lost before the acknowledgement; sending the run again", "run", id, "err", err)
			}
		}
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("agent: sending run %s: %w", id, ctx.Err())
		case errors.As(err, new(*permanentError)):
			return err
		case err != nil:
			if c == nil {
				log.Warn("ingest unreachable", "url", s.URL, "err", err, "retry_in", backoff.String())
			}
		case ack.OK:
			return nil
		case beacon.Transient(ack.Reason):
			log.Info("collector deferred a run; sending it again", "run", id, "reason", ack.Reason, "retry_in", backoff.String())
		default:
			log.Warn("collector refused a run", "run", id, "reason", ack.Reason, "err", ack.Error)
			return &RefusedError{ID: id, Reason: ack.Reason, Msg: ack.Error}
		}
		if !sleepCtx(ctx, backoff/2+mrand.N(backoff/2+1)) {
			return fmt.Errorf("agent: sending run %s: %w", id, ctx.Err())
		}
		backoff = min(2*backoff, orDefault(s.MaxBackoff, DefaultMaxBackoff))
	}
}

// Close closes the connection, if any, and makes later Sends fail.
func (s *Sender) Close() error {
	s.mu.Lock()
	c := s.conn
	s.conn, s.closed = nil, true
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
	return nil
}

func (s *Sender) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// permanentError is a connection refusal that retrying will not change.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

var errSenderClosed = &permanentError{errors.New("agent: sender closed")}

// connection returns the open connection, dialing one if there is none.
func (s *Sender) connection(ctx context.Context) (*wsConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errSenderClosed
	}
	if s.conn != nil {
		select {
		case <-s.conn.dead:
			s.conn = nil
		default:
			return s.conn, nil
		}
	}
	// Dialing under the lock makes concurrent Sends wait for one dial.
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.conn = c
	s.logger().Info("connected to the ingest", "url", s.URL)
	return c, nil
}

// drop forgets c, if it is still the connection, and closes it.
func (s *Sender) drop(c *wsConn) {
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
	}
	s.mu.Unlock()
	c.close()
}

func (s *Sender) dial(ctx context.Context) (*wsConn, error) {
	d := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		TLSClientConfig:  &tls.Config{RootCAs: s.Roots, MinVersion: tls.VersionTLS12},
		NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if host, port, err := net.SplitHostPort(addr); err == nil {
				if ip, ok := s.Resolve[host]; ok {
					addr = net.JoinHostPort(ip, port)
				}
			}
			var nd net.Dialer
			return nd.DialContext(ctx, network, addr)
		},
	}
	hdr := http.Header{"Authorization": {"Bearer " + s.Token}, "User-Agent": {userAgent}}
	ws, resp, err := d.DialContext(ctx, s.URL, hdr)
	if err != nil {
		if resp != nil {
			err = fmt.Errorf("agent: ingest %s answered %s: %s", s.URL, resp.Status, firstLine(resp.Body))
			switch resp.StatusCode {
			case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
				return nil, &permanentError{err}
			}
			return nil, err
		}
		return nil, fmt.Errorf("agent: connecting to the ingest %s: %w", s.URL, err)
	}
	c := &wsConn{ws: ws, waiting: map[string]chan beacon.WSAck{}, dead: make(chan struct{})}
	go c.readLoop(s.logger())
	return c, nil
}

// firstLine is the first line of a refusal's body, the collector's
// one-line reason.
func firstLine(r io.Reader) string {
	if r == nil {
		return ""
	}
	line, _ := bufio.NewReader(io.LimitReader(r, 512)).ReadString('\n')
	return strings.TrimSpace(line)
}

// wsConn is one WebSocket connection: writes are serialised, and a reader
// hands each acknowledgement to the Send waiting for its id.
type wsConn struct {
	ws  *websocket.Conn
	wmu sync.Mutex

	mu      sync.Mutex
	waiting map[string]chan beacon.WSAck
	dead    chan struct{} // closed when the reader has stopped
	err     error         // why, set before dead is closed
	once    sync.Once
}

// readLoop reads acknowledgements until the connection fails or closes.
// Pings are answered by gorilla/websocket's default handler.
func (c *wsConn) readLoop(log *slog.Logger) {
	var err error
	for {
		var ack beacon.WSAck
		if err = c.ws.ReadJSON(&ack); err != nil {
			break
		}
		c.mu.Lock()
		ch, ok := c.waiting[ack.ID]
		delete(c.waiting, ack.ID)
		c.mu.Unlock()
		if !ok {
			log.Warn("ingest acknowledged a message this agent is not waiting for", "id", ack.ID, "ok", ack.OK, "err", ack.Error)
			continue
		}
		ch <- ack // buffered
	}
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.dead)
	c.ws.Close()
}

// send writes msg and waits for the acknowledgement of id.
func (c *wsConn) send(ctx context.Context, id string, msg []byte, timeout time.Duration) (beacon.WSAck, error) {
	ch := make(chan beacon.WSAck, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	c.wmu.Lock()
	c.ws.SetWriteDeadline(time.Now().Add(timeout))
	err := c.ws.WriteMessage(websocket.TextMessage, msg)
	c.wmu.Unlock()
	if err != nil {
		return beacon.WSAck{}, fmt.Errorf("writing to the ingest: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case ack := <-ch:
		return ack, nil
	case <-c.dead:
		c.mu.Lock()
		defer c.mu.Unlock()
		return beacon.WSAck{}, fmt.Errorf("ingest connection closed: %w", c.err)
	case <-t.C:
		return beacon.WSAck{}, fmt.Errorf("no acknowledgement within %v", timeout)
	case <-ctx.Done():
		return beacon.WSAck{}, ctx.Err()
	}
}

// close says goodbye and closes the connection; the reader then stops.
func (c *wsConn) close() {
	c.once.Do(func() {
		c.wmu.Lock()
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		c.wmu.Unlock()
		c.ws.Close()
	})
	<-c.dead
}

// orDefault is d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
