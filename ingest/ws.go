package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
)

// wsInFlight bounds the reports of one connection waiting to be made
// durable; the reader stops reading while it is reached.
const wsInFlight = 64

func (h *Handler) pingInterval() time.Duration {
	if h.WSPingInterval > 0 {
		return h.WSPingInterval
	}
	return DefaultWSPingInterval
}

// authorized checks the agent token from "Authorization: Bearer …", in
// constant time. Never from the URL: proxies and servers log URLs, and a
// token there outlives the connection in their logs.
func (h *Handler) authorized(r *http.Request) bool {
	tok, _ := access.Bearer(r)
	return access.Token(h.AgentToken).Matches(tok)
}

func (h *Handler) agentRate() float64 {
	if h.AgentRateLimit > 0 {
		return h.AgentRateLimit
	}
	return DefaultAgentRateLimit
}

func (h *Handler) websocket(w http.ResponseWriter, r *http.Request) {
	if h.AgentToken == "" {
		http.NotFound(w, r)
		return
	}
	client, now := h.Clients.IP(r), time.Now()
	if blocked, wait := h.Failures.Blocked(client, now); blocked {
		retryAfter(w, wait)
		h.reject(w, http.StatusTooManyRequests, beacon.ReasonRateLimited, access.LockedOut(wait))
		return
	}
	if !h.authorized(r) {
		h.Failures.Failed(client, now)
		w.Header().Set("WWW-Authenticate", `Bearer realm="h3rum agents"`)
		h.reject(w, http.StatusUnauthorized, beacon.ReasonUnauthorized, "missing or wrong agent token (give it as Authorization: Bearer, never in the URL)")
		return
	}
	up := websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferSize: 4096,
		// Agents are not browsers; the token is the credential.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	s := &wsSession{h: h, req: r, acks: make(chan beacon.WSAck, wsInFlight),
		limiter: access.NewLimiter(h.agentRate(), int(math.Ceil(h.agentRate())), 1)}
	if !h.sessions.add(s) {
		retryAfter(w, time.Second)
		h.reject(w, http.StatusServiceUnavailable, beacon.ReasonShuttingDown, "the collector is shutting down; reconnect to another or retry")
		return
	}
	defer h.sessions.remove(s)
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		return // the Upgrader has answered
	}
	s.setConn(conn)
	h.log.Debug("agent connected")
	s.serve()
}

// wsSessions are a handler's open /ingest/ws sessions: Close ends them.
type wsSessions struct {
	mu     sync.Mutex
	open   map[*wsSession]struct{}
	closed bool
	idle   chan struct{} // made by Close, closed once open is empty
}

func (ss *wsSessions) add(s *wsSession) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return false
	}
	if ss.open == nil {
		ss.open = map[*wsSession]struct{}{}
	}
	ss.open[s] = struct{}{}
	return true
}

func (ss *wsSessions) remove(s *wsSession) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.open, s)
	if len(ss.open) == 0 && ss.idle != nil {
		select {
		case <-ss.idle:
		default:
			close(ss.idle)
		}
	}
}

// Close ends the /ingest/ws sessions and refuses new ones (503
// shutting_down): each session stops reading, answers every report it has
// read (acknowledged once durable, or refused), sends a going-away close
// frame and ends. Close waits for that until ctx ends, and leaves nothing
// running behind it. Call it before the sink stops accepting, so that what
// the sessions read is still stored.
func (h *Handler) Close(ctx context.Context) error {
	ss := &h.sessions
	ss.mu.Lock()
	ss.closed = true
	for s := range ss.open {
		s.stop()
	}
	if ss.idle == nil {
		ss.idle = make(chan struct{})
		if len(ss.open) == 0 {
			close(ss.idle)
		}
	}
	idle := ss.idle
	ss.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("closing agent sessions: %w", context.Cause(ctx))
	}
}

type wsSession struct {
	h    *Handler
	conn *websocket.Conn
	req  *http.Request
	acks chan beacon.WSAck
	wg   sync.WaitGroup
	// limiter is the connection's own report rate (one bucket).
	limiter *access.Limiter

	mu       sync.Mutex // guards stopping and conn until serve starts
	stopping atomic.Bool
}

func (s *wsSession) setConn(c *websocket.Conn) {
	s.mu.Lock()
	s.conn = c
	stop := s.stopping.Load()
	s.mu.Unlock()
	if stop {
		c.SetReadDeadline(time.Now())
	}
}

// stop makes the session's reader stop at once (its deadline passes): the
// session then drains and closes going away.
func (s *wsSession) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping.Store(true)
	if s.conn != nil {
		s.conn.SetReadDeadline(time.Now())
	}
}

func (s *wsSession) serve() {
	h := s.h
	ping := h.pingInterval()
	wait := 2 * ping
	s.conn.SetReadLimit(h.maxBody() + 1024)
	s.extend(wait)
	s.conn.SetPongHandler(func(string) error { s.extend(wait); return nil })

	writerDone := make(chan struct{})
	go s.writeLoop(ping, writerDone)

	sem := make(chan struct{}, wsInFlight)
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				h.m.rejected.WithLabelValues(beacon.ReasonTooLarge).Inc()
			}
			break
		}
		s.extend(wait)
		h.m.requests.WithLabelValues("ws").Inc()
		sub := h.submission(s.req, time.Now().UTC())
		sub.limiter = s.limiter
		if rej := h.gate(&sub); rej != nil {
			s.refuse(messageID(data), rej.reason, rej.detail)
			continue
		}
		var msg beacon.WSMessage
		if err := json.Unmarshal(data, &msg); err != nil || msg.ID == "" || len(msg.Report) == 0 {
			s.refuse(msg.ID, beacon.ReasonBadMessage, `want {"id": "…", "report": {…}}`)
			continue
		}
		switch msg.Source {
		case "", store.SourceBrowser:
			if len(msg.Handshakes) > 0 && string(msg.Handshakes) != "null" {
				s.refuse(msg.ID, beacon.ReasonBadMessage, `handshakes need "source": "agent"`)
				continue
			}
		case store.SourceAgent:
			sub.source, sub.handshakes = store.SourceAgent, msg.Handshakes
		default:
			s.refuse(msg.ID, beacon.ReasonBadMessage, `"source" must be "agent" or "browser"`)
			continue
		}
		sub.wire = msg.Report
		run, rej := h.admit(s.req.Context(), sub)
		if rej != nil {
			s.refuse(msg.ID, rej.reason, rej.detail)
			continue
		}
		sem <- struct{}{}
		s.wg.Add(1)
		go func(id string) {
			defer s.wg.Done()
			defer func() { <-sem }()
			if err := h.Sink.Accept(s.req.Context(), run); err != nil {
				rej := acceptRejection(err)
				s.refuse(id, rej.reason, rej.detail)
				return
			}
			s.acks <- beacon.WSAck{ID: id, OK: true}
		}(msg.ID)
	}
	s.wg.Wait()
	close(s.acks)
	<-writerDone
	s.conn.Close()
	h.log.Debug("agent disconnected")
}

// extend moves the read deadline wait ahead, unless the session is
// stopping.
func (s *wsSession) extend(wait time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stopping.Load() {
		s.conn.SetReadDeadline(time.Now().Add(wait))
	}
}

func (s *wsSession) refuse(id, reason, detail string) {
	s.h.m.rejected.WithLabelValues(reason).Inc()
	s.acks <- beacon.WSAck{ID: id, Error: reason + ": " + oneLine(detail), Reason: reason}
}

// writeLoop is the connection's only writer: acknowledgements and pings.
func (s *wsSession) writeLoop(ping time.Duration, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(ping)
	defer t.Stop()
	const writeWait = 10 * time.Second
	broken := false
	for {
		select {
		case ack, ok := <-s.acks:
			if !ok {
				if !broken {
					msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
					if s.stopping.Load() {
						msg = websocket.FormatCloseMessage(websocket.CloseGoingAway, "the collector is shutting down")
					}
					s.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
				}
				return
			}
			if broken {
				continue // keep draining so Accept goroutines finish
			}
			s.conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := s.conn.WriteJSON(ack); err != nil {
				broken = true
				s.conn.Close() // unblocks the reader
			}
		case <-t.C:
			if broken {
				continue
			}
			if err := s.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				broken = true
				s.conn.Close()
			}
		}
	}
}

// messageID is the id of a message refused before it is parsed in full,
// so that the agent can match the refusal; "" when it has none.
func messageID(data []byte) string {
	var m struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	return m.ID
}
