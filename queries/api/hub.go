package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/stats"
)

// LiveRun is the message /api/live sends for each accepted run.
type LiveRun struct {
	Site      string    `json:"site"`
	Time      time.Time `json:"time"`
	Continent string    `json:"continent"` // "unknown" when empty
	Country   string    `json:"country"`   // "unknown" when empty
	Bot       bool      `json:"bot"`
	// Medians of the run's successful parallel requests per protocol (want
	// = got); null when the run has none.
	H2MedianMS *float64 `json:"h2_median_ms"`
	H3MedianMS *float64 `json:"h3_median_ms"`
	// H3Availability is the share of the run's parallel requests to the
	// H3 origin that used h3; null when none used h3, h2 or h1.
	H3Availability *float64 `json:"h3_availability"`
}

// NewLiveRun summarises an accepted run for the live feed.
func NewLiveRun(run store.Run) LiveRun {
	m := LiveRun{Time: run.Received.UTC(), Continent: cmp.Or(run.Geo.Continent, "unknown"), Country: cmp.Or(run.Geo.Country, "unknown"), Bot: run.Bot}
	if run.Report == nil {
		return m
	}
	m.Site = run.Report.Site
	var h2, h3 []float64
	var got, wanted int
	for _, s := range run.Report.Samples {
		if s.Phase != beacon.PhaseParallel || s.Error != "" {
			continue
		}
		switch store.OutcomeOf(s.Want, s.Got) {
		case store.OutcomeH2:
			h2 = append(h2, s.Duration)
		case store.OutcomeH3:
			h3 = append(h3, s.Duration)
			got++
			wanted++
		case store.OutcomeWantedH3GotH2:
			wanted++
		}
	}
	med := func(v []float64) *float64 {
		if len(v) == 0 {
			return nil
		}
		slices.Sort(v)
		x := stats.Quantile(v, 0.5)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	m.H2MedianMS, m.H3MedianMS = med(h2), med(h3)
	if wanted > 0 {
		a := float64(got) / float64(wanted)
		m.H3Availability = &a
	}
	return m
}

// ErrTooManyClients is returned by Hub.Subscribe when MaxClients are
// connected.
var ErrTooManyClients = errors.New("too many live clients")

// ErrHubClosed is returned by Hub.Subscribe after Close, and by
// Subscription.Err when Close ended the subscription.
var ErrHubClosed = errors.New("live feed closed: the collector is shutting down")

// ErrTooSlow is Subscription.Err when the hub dropped a client whose
// buffer was full.
var ErrTooSlow = errors.New("too slow: dropped")

// The Hub's defaults.
const (
	DefaultClientBuffer = 64  // messages queued per live client
	DefaultMaxClients   = 256 // live clients at once
)

// Hub fans accepted runs out to live clients. Publish never blocks: each
// client has a bounded buffer, and a client whose buffer is full is
// dropped (and counted) rather than slowing ingestion. The zero value is
// ready to use.
type Hub struct {
	// ClientBuffer is the number of messages queued per client. Default
	// DefaultClientBuffer.
	ClientBuffer int
	// MaxClients bounds concurrent subscribers. Default DefaultMaxClients.
	MaxClients int

	mu        sync.Mutex
	clients   map[*Subscription]struct{}
	closed    bool
	active    int           // subscriptions not yet unsubscribed
	idle      chan struct{} // made by Close, closed once active is 0
	published atomic.Uint64
	dropped   atomic.Uint64
}

// Subscription is one live client's queue. Read C until Done is closed.
type Subscription struct {
	C     <-chan []byte
	c     chan []byte
	done  chan struct{}
	once  sync.Once
	err   error // why done was closed; set before it is
	unsub sync.Once
}

// Done is closed when the hub dropped the subscriber (it was too slow),
// the hub was closed, or Unsubscribe was called.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err says why Done was closed: ErrTooSlow, ErrHubClosed, or nil after
// Unsubscribe. Call it only once Done is closed.
func (s *Subscription) Err() error {
	<-s.done
	return s.err
}

func (s *Subscription) close(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
	})
}

// HubStats are the hub's counters.
type HubStats struct {
	Clients   int
	Published uint64 // runs published
	Dropped   uint64 // clients dropped for being slow
}

// Stats returns the hub's counters.
func (h *Hub) Stats() HubStats {
	h.mu.Lock()
	n := len(h.clients)
	h.mu.Unlock()
	return HubStats{Clients: n, Published: h.published.Load(), Dropped: h.dropped.Load()}
}

// Subscribe adds a client.
func (h *Hub) Subscribe() (*Subscription, error) {
	size := h.ClientBuffer
	if size <= 0 {
		size = DefaultClientBuffer
	}
	maxClients := h.MaxClients
	if maxClients <= 0 {
		maxClients = DefaultMaxClients
	}
	c := make(chan []byte, size)
	s := &Subscription{C: c, c: c, done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrHubClosed
	}
	if len(h.clients) >= maxClients {
		return nil, ErrTooManyClients
	}
	if h.clients == nil {
		h.clients = map[*Subscription]struct{}{}
	}
	h.clients[s] = struct{}{}
	h.active++
	return s, nil
}

// Unsubscribe removes a client; it is safe to call more than once. Every
// successful Subscribe must be followed by one: Close waits for them.
func (h *Hub) Unsubscribe(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.clients, s)
	s.close(nil)
	s.unsub.Do(func() {
		if h.active--; h.active == 0 && h.idle != nil {
			close(h.idle)
		}
	})
}

// Close ends every subscription with ErrHubClosed (the live handler then
// sends its client a going-away close frame), refuses new ones, and waits
// until every subscriber has unsubscribed or ctx ends; it leaves nothing
// running behind it. It is safe to call more than once.
func (h *Hub) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	for s := range h.clients {
		delete(h.clients, s)
		s.close(ErrHubClosed)
	}
	if h.idle == nil {
		h.idle = make(chan struct{})
		if h.active == 0 {
			close(h.idle)
		}
	}
	idle := h.idle
	h.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("closing the live feed: %w", context.Cause(ctx))
	}
}

// Publish sends run to every client without blocking: Hub is the
// ingest.Feed of the live view.
func (h *Hub) Publish(run store.Run) {
	msg, err := json.Marshal(NewLiveRun(run))
	if err != nil {
		return // cannot happen: no NaN or channels in LiveRun
	}
	h.published.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.clients {
		select {
		case s.c <- msg:
		default:
			delete(h.clients, s)
			s.close(ErrTooSlow)
			h.dropped.Add(1)
		}
	}
}
