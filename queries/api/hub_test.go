package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gorilla/websocket"
)

// TestHubClose: closing the hub sends every live client a going-away close
// frame, waits until each session has ended, and refuses new ones.
func TestHubClose(t *testing.T) {
	hub := &Hub{}
	srv := serve(t, &Handler{Token: testToken, Hub: hub})
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/api/live"
	hdr := http.Header{"Authorization": {"Bearer " + testToken}}
	var clients []*websocket.Conn
	for range 3 {
		ws, _, err := websocket.DefaultDialer.Dial(url, hdr)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		clients = append(clients, ws)
	}
	deadline := time.Now().Add(5 * time.Second)
	for hub.Stats().Clients != 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := hub.Stats().Clients; n != 3 {
		t.Fatalf("%d clients subscribed, want 3", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hub.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, ws := range clients {
		ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _, err := ws.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway || !strings.Contains(ce.Text, "shutting down") {
			t.Errorf("client %d: %v, want a going-away close frame", i, err)
		}
	}
	if _, res, err := websocket.DefaultDialer.Dial(url, hdr); err == nil || res == nil || res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial after Close: %v %v, want 503", res, err)
	}
	if _, err := hub.Subscribe(); !errors.Is(err, ErrHubClosed) {
		t.Errorf("Subscribe after Close: %v", err)
	}
	if err := hub.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}

}

// TestHubCloseLeavesNothingRunning: a subscriber that never unsubscribes
// holds Close until its context ends, and Close then leaves no goroutine
// behind (synctest fails the test on one still blocked when it ends); once
// the last subscriber leaves, Close returns at once.
func TestHubCloseLeavesNothingRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stuck := &Hub{}
		if _, err := stuck.Subscribe(); err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := stuck.Close(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close with a subscriber left: %v, want the deadline", err)
		}

		left := &Hub{}
		subs := make([]*Subscription, 3)
		for i := range subs {
			var err error
			if subs[i], err = left.Subscribe(); err != nil {
				t.Fatal(err)
			}
		}
		closed := make(chan error, 1)
		go func() { closed <- left.Close(t.Context()) }()
		for _, s := range subs {
			synctest.Wait()
			select {
			case err := <-closed:
				t.Fatalf("Close returned %v with subscribers left", err)
			default:
			}
			if !errors.Is(s.Err(), ErrHubClosed) {
				t.Errorf("a subscription ended with %v, want ErrHubClosed", s.Err())
			}
			left.Unsubscribe(s)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close once every subscriber left: %v", err)
		}
	})
}
