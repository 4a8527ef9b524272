//go:build unix

package chromium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// Page is a DevTools target of type "page".
type Page struct {
	ID    string `json:"id"`
	Type  string `json:"type"`
	URL   string `json:"url"`
	WSURL string `json:"webSocketDebuggerUrl"`
}

// Pages lists the open pages (Options.DevTools must be set).
func (b *Browser) Pages(ctx context.Context) ([]Page, error) {
	if b.devtools == "" {
		return nil, errors.New("chromium started without Options.DevTools")
	}
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+b.devtools+"/json/list", nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listing chromium pages: %w", err)
	}
	defer res.Body.Close()
	var all []Page
	if err := json.NewDecoder(res.Body).Decode(&all); err != nil {
		return nil, fmt.Errorf("listing chromium pages: %w", err)
	}
	var pages []Page
	for _, p := range all {
		if p.Type == "page" {
			pages = append(pages, p)
		}
	}
	return pages, nil
}

// ClosePage closes p as a user closing its tab would (Target.closeTarget):
// the page gets pagehide and visibilitychange.
func (b *Browser) ClosePage(ctx context.Context, p Page) error {
	if b.browser == "" {
		return errors.New("chromium started without Options.DevTools")
	}
	_, err := b.Call(ctx, b.browser, "Target.closeTarget", map[string]string{"targetId": p.ID})
	return err
}

// Navigate points p at url (Page.navigate); the old document unloads.
func (b *Browser) Navigate(ctx context.Context, p Page, url string) error {
	_, err := b.Call(ctx, p.WSURL, "Page.navigate", map[string]string{"url": url})
	return err
}

// Call sends one DevTools protocol command over a fresh WebSocket to
// wsURL (a page's or the browser's) and returns its result.
func (b *Browser) Call(ctx context.Context, wsURL, method string, params any) (json.RawMessage, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("devtools %s: %w", method, err)
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetReadDeadline(deadline)
	conn.SetWriteDeadline(deadline)
	if err := conn.WriteJSON(map[string]any{"id": 1, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("devtools %s: %w", method, err)
	}
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := conn.ReadJSON(&msg); err != nil {
			return nil, fmt.Errorf("devtools %s: %w", method, err)
		}
		if msg.ID != 1 {
			continue // an event
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("devtools %s: %s (%d)", method, msg.Error.Message, msg.Error.Code)
		}
		return msg.Result, nil
	}
}
