package ingest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/ingest/store"
)

// TestHandlerCloseDrainsSessions: Close stops every /ingest/ws session from
// reading, lets the report it already read finish (acknowledged once the
// sink returns), sends a going-away close frame, waits for the sessions to
// end and refuses new ones with 503 shutting_down.
func TestHandlerCloseDrainsSessions(t *testing.T) {
	release := make(chan struct{})
	accepted := make(chan struct{}, 1)
	h := &Handler{Sink: sinkFunc(func(ctx context.Context, run store.Run) error {
		accepted <- struct{}{}
		<-release
		return nil
	}), AgentToken: "t", WSPingInterval: time.Minute}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ingest/ws"
	auth := http.Header{"Authorization": {"Bearer t"}}
	busy, _, err := websocket.DefaultDialer.Dial(url, auth)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	idle, _, err := websocket.DefaultDialer.Dial(url, auth)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	busy.WriteMessage(websocket.TextMessage, []byte(`{"id":"x","report":`+string(wireReport("s"))+`}`))
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the report never reached the sink")
	}

	closed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closed <- h.Close(ctx)
	}()
	// The idle session ends at once, going away.
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = idle.ReadMessage()
	if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != websocket.CloseGoingAway {
		t.Errorf("idle session: %v, want a going-away close frame", err)
	}
	// Close waits for the report in flight.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) before the report in flight was answered", err)
	case <-time.After(200 * time.Millisecond):
	}
	if _, resp, err := websocket.DefaultDialer.Dial(url, auth); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial while closing: %v %v, want 503", resp, err)
	}
	close(release)
	var a beacon.WSAck
	busy.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := busy.ReadJSON(&a); err != nil || a.ID != "x" || !a.OK {
		t.Fatalf("ack %+v, %v; want x acknowledged", a, err)
	}
	_, _, err = busy.ReadMessage()
	if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != websocket.CloseGoingAway {
		t.Errorf("busy session after its ack: %v, want a going-away close frame", err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Close did not return after the sessions ended")
	}
}

// TestHandlerCloseLeavesNothingRunning: a session that never ends holds
// Close until its context ends, and Close then leaves no goroutine behind
// (synctest fails the test on one still blocked when it ends); once the
// sessions end, Close returns, and new sessions are refused.
func TestHandlerCloseLeavesNothingRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &Handler{}
		s := &wsSession{h: stuck}
		if !stuck.sessions.add(s) {
			t.Fatal("a session refused before Close")
		}
		short, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := stuck.Close(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close with a session open: %v, want the deadline", err)
		}
		if !s.stopping.Load() {
			t.Error("Close did not stop the open session")
		}

		h := &Handler{}
		open := []*wsSession{{h: h}, {h: h}}
		for _, s := range open {
			h.sessions.add(s)
		}
		closed := make(chan error, 1)
		go func() { closed <- h.Close(t.Context()) }()
		for _, s := range open {
			synctest.Wait()
			select {
			case err := <-closed:
				t.Fatalf("Close returned %v with sessions open", err)
			default:
			}
			h.sessions.remove(s)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close once the sessions ended: %v", err)
		}
		if h.sessions.add(&wsSession{h: h}) {
			t.Error("a session added after Close")
		}
	})
}
