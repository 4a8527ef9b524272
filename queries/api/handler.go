// Package api serves reports over HTTP: the JSON report and comparison,
// the dashboard streamed as its parts are computed, its script and style
// sheet, and the live feed of accepted runs over WebSocket; the report
// token, the throttle on wrong ones and the bound on reports computed at
// once guard them all.
package api

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/gorilla/websocket"

	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/model"
	"github.com/h3rum/h3rum/queries/params"
	"github.com/h3rum/h3rum/queries/render"
)

// CookieName is the cookie that carries the report token for the
// dashboard and its live feed once the token was given as ?token=.
const CookieName = "h3rum_report"

// The Handler's defaults, which `h3rum serve`'s flags show.
const (
	DefaultMaxConcurrent = 2                // reports computed at once
	DefaultQueueWait     = 2 * time.Second  // a report's wait for its turn before 503
	DefaultTimeout       = 30 * time.Second // one report computation's bound
)

// Handler serves GET /api/report (JSON), GET /dashboard (HTML with SVG
// charts), its static /dashboard.js and /dashboard.css, and GET /api/live
// (WebSocket feed of accepted runs). Register it on a mux with Register.
type Handler struct {
	// Conn is the ClickHouse connection. Required.
	Conn driver.Conn
	// Token is the bearer token for every data route ("Authorization:
	// Bearer …", the h3rum_report cookie, or ?token= on /dashboard, which
	// sets the cookie). Empty means no token: the routes are then open
	// only if AllowOpen is set and the request is local (access.Local),
	// and refused (403, saying how to open them) otherwise.
	Token string
	// AllowOpen serves the data routes without a token to requests that
	// are local (access.Local: a loopback peer, no forwarding header, a
	// Host naming this machine, so DNS rebinding fails). It is the
	// operator's explicit choice, never inferred: a pass-through proxy
	// on the same host makes the internet's requests local. Set it only
	// when every listener is bound to loopback and no proxy is trusted
	// (access.CheckOpen). Ignored when Token is set.
	AllowOpen bool
	// Clients resolves the client address wrong tokens are throttled by;
	// its Header also counts as a forwarding header for AllowOpen.
	Clients access.Clients
	// Failures throttles wrong tokens per client address; nil does not.
	Failures *access.Failures
	// MaxConcurrent is how many reports are computed at once (each may use
	// every core for its bootstrap). Default DefaultMaxConcurrent.
	MaxConcurrent int
	// QueueWait is how long a report waits for its turn before it is
	// answered 503 with Retry-After. Default DefaultQueueWait.
	QueueWait time.Duration
	// Hub feeds /api/live; nil answers 404 there.
	Hub *Hub
	// Timeout bounds one report computation. Default DefaultTimeout.
	Timeout time.Duration
	// Logger receives report failures and live-client events; nil discards.
	Logger *slog.Logger

	once     sync.Once
	slots    chan struct{} // reports being computed (MaxConcurrent)
	log      *slog.Logger
	upgrader websocket.Upgrader
	mux      *http.ServeMux
}

func (h *Handler) init() {
	h.once.Do(func() {
		h.log = h.Logger
		if h.log == nil {
			h.log = slog.New(slog.DiscardHandler)
		}
		// The default CheckOrigin refuses cross-origin upgrades, so another
		// site cannot ride the cookie into the live feed.
		h.upgrader = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 4096}
		h.slots = make(chan struct{}, cmp.Or(max(h.MaxConcurrent, 0), DefaultMaxConcurrent))
		h.mux = http.NewServeMux()
		h.routes(h.mux)
	})
}

// Register adds the handler's routes to mux.
func (h *Handler) Register(mux *http.ServeMux) {
	h.init()
	h.routes(mux)
}

func (h *Handler) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/report", h.report)
	mux.HandleFunc("GET /api/compare", h.compare)
	mux.HandleFunc("GET /api/live", h.live)
	mux.HandleFunc("GET /dashboard", h.dashboard)
	mux.HandleFunc("GET /dashboard.js", h.asset)
	mux.HandleFunc("GET /dashboard.css", h.asset)
}

// ServeHTTP serves the routes of Register, for use without a shared mux.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.init()
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return DefaultTimeout
}

// fail answers with a one-line plain-text reason.
func fail(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	reason = strings.ReplaceAll(reason, "\n", " ")
	w.Write([]byte(reason + "\n"))
}

// authorize checks the request's credentials and answers it if they fail.
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) bool {
	if h.Token == "" {
		if !h.AllowOpen {
			fail(w, http.StatusForbidden, "forbidden: this collector has no report token; start it with --report-token-file (or H3RUM_REPORT_TOKEN), or, listening on loopback only, with --open-reports to answer without one")
			return false
		}
		if access.Local(r, h.Clients.Header) {
			return true
		}
		fail(w, http.StatusForbidden, "forbidden: without a report token, reports are served only to requests from this machine to localhost, with no proxy in between; set a report token")
		return false
	}
	client, now := h.Clients.IP(r), time.Now()
	if h.throttled(w, client, now) {
		return false
	}
	// The Authorization header wins when present; the cookie counts only
	// without it.
	token := access.Token(h.Token)
	if got, present := access.Bearer(r); present {
		if token.Matches(got) {
			return true
		}
	} else if c, err := r.Cookie(CookieName); err == nil && token.Matches(c.Value) {
		return true
	}
	h.Failures.Failed(client, now)
	w.Header().Set("WWW-Authenticate", `Bearer realm="h3rum"`)
	fail(w, http.StatusUnauthorized, "unauthorized: a valid report token is required (Authorization: Bearer …)")
	return false
}

// throttled answers 429 when client has used up its wrong tokens.
func (h *Handler) throttled(w http.ResponseWriter, client netip.Addr, now time.Time) bool {
	blocked, wait := h.Failures.Blocked(client, now)
	if blocked {
		w.Header().Set("Retry-After", strconv.Itoa(access.RetryAfter(wait)))
		fail(w, http.StatusTooManyRequests, "too many requests: "+access.LockedOut(wait))
	}
	return blocked
}

// acquire waits for a report slot, up to QueueWait; without one it answers
// 503 with Retry-After. The caller releases a slot it got.
func (h *Handler) acquire(w http.ResponseWriter, r *http.Request) bool {
	select {
	case h.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(cmp.Or(max(h.QueueWait, 0), DefaultQueueWait))
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	w.Header().Set("Retry-After", "5")
	fail(w, http.StatusServiceUnavailable, "busy: other reports are being computed; retry shortly")
	return false
}

func (h *Handler) release() { <-h.slots }

// admit is the way in of every request that computes a report: the
// token, then its parameters read by parse (400 with the reason), then a
// report slot (acquire). Without ok it has answered; with ok the caller
// releases the slot when done.
func admit[T any](h *Handler, w http.ResponseWriter, r *http.Request, parse func(url.Values, time.Time) (T, error)) (v T, ok bool) {
	if !h.authorize(w, r) {
		return v, false
	}
	v, err := parse(r.URL.Query(), time.Now())
	if err != nil {
		fail(w, http.StatusBadRequest, "bad request: "+strings.TrimPrefix(err.Error(), model.ErrInvalidOptions.Error()+": "))
		return v, false
	}
	return v, h.acquire(w, r)
}

func (h *Handler) run(w http.ResponseWriter, r *http.Request, o model.Options) (*model.Report, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout())
	defer cancel()
	rep, err := queries.Run(ctx, h.Conn, o)
	if err != nil {
		h.reportFailed(w, err)
		return nil, false
	}
	return rep, true
}

func (h *Handler) report(w http.ResponseWriter, r *http.Request) {
	h.init()
	o, ok := admit(h, w, r, params.OptionsFromValues)
	if !ok {
		return
	}
	defer h.release()
	rep, ok := h.run(w, r, o)
	if !ok {
		return
	}
	h.writeJSON(w, rep)
}

// writeJSON answers v as JSON, encoded before the status goes out: a value
// JSON cannot carry is a 500 with a one-line reason naming it, never a 200
// whose body stopped where encoding failed.
func (h *Handler) writeJSON(w http.ResponseWriter, v any) {
	b, err := render.JSON(v)
	if err != nil {
		h.log.Error("encoding a report", "err", err)
		fail(w, http.StatusInternalServerError, "encoding the report: "+err.Error())
		return
	}
	writeSoon(w)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

func (h *Handler) dashboard(w http.ResponseWriter, r *http.Request) {
	h.init()
	if tok := r.URL.Query().Get("token"); tok != "" && h.Token != "" {
		client, now := h.Clients.IP(r), time.Now()
		if h.throttled(w, client, now) {
			return
		}
		if !access.Token(h.Token).Matches(tok) {
			h.Failures.Failed(client, now)
			fail(w, http.StatusUnauthorized, "unauthorized: wrong token")
			return
		}
		// Keep the token out of the address bar and history: set the
		// cookie and reload without it.
		http.SetCookie(w, &http.Cookie{
			Name: CookieName, Value: tok, Path: "/", HttpOnly: true,
			Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode, MaxAge: 30 * 24 * 3600,
		})
		q := r.URL.Query()
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	o, ok := admit(h, w, r, params.OptionsFromValues)
	if !ok {
		return
	}
	defer h.release()
	h.streamDashboard(w, r, o)
}

// streamDashboard sends the dashboard in three steps: its head and
// heading at once, the point estimates as
// soon as they are known (tens of ms from the rollup), flushed so the
// browser paints them, then the complete report — intervals and the paired
// view need the per-run bootstrap, most of the time — inside a <template>
// that dashboard.js swaps in. Without JavaScript the estimate stays.
//
// The page's head goes out before anything is computed, so the browser
// fetches the style sheet and script while the estimate is: options are
// validated first (a bad request still gets 400), and an estimate that
// fails after that is shown in the page, its 200 status already sent
// (/api/report answers 502 for it).
func (h *Handler) streamDashboard(w http.ResponseWriter, r *http.Request, o model.Options) {
	ctx, cancel := context.WithTimeout(r.Context(), h.timeout())
	defer cancel()
	check := o // Estimate validates its own copy
	if err := check.Validate(); err != nil {
		h.reportFailed(w, err)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	live := h.Hub != nil
	// The head and the page's heading go out before anything is computed:
	// the browser fetches the style sheet and script and paints the
	// heading while the estimate is computed, which takes a while on a
	// large table; the rest of the header needs the report.
	if err := render.DashboardHead(w, o.By); err != nil {
		h.log.Warn("rendering dashboard", "err", err)
		return
	}
	if err := render.DashboardMasthead(w, &o, live); err != nil {
		h.log.Warn("rendering dashboard", "err", err)
		return
	}
	http.NewResponseController(w).Flush()
	rep, err := queries.Estimate(ctx, h.Conn, o)
	if err == nil {
		err = model.CheckFinite(rep.Report) // what /api/report refuses is not drawn either
	}
	if err != nil {
		h.log.Warn("report failed", "err", err)
		writeSoon(w)
		render.DashboardFailed(w, err.Error())
		return
	}
	var first bytes.Buffer
	page := render.NewDashboard(rep.Report, &o, live)
	if err = page.Header(&first); err == nil {
		first.WriteString(`<div id="estimate">`)
		err = page.Content(&first)
		first.WriteString("</div>\n")
	}
	if err != nil {
		h.log.Warn("rendering dashboard", "err", err)
		writeSoon(w)
		render.DashboardFailed(w, "rendering: "+err.Error())
		return
	}
	writeSoon(w)
	w.Write(first.Bytes())
	http.NewResponseController(w).Flush()

	var rest bytes.Buffer
	err = rep.AddRuns(ctx, h.Conn)
	if err == nil {
		err = model.CheckFinite(rep.Report)
	}
	if err != nil {
		h.log.Warn("report failed", "err", err)
		fmt.Fprintf(&rest, `<p class="error" id="complete-failed">Confidence intervals and the paired view failed: %s</p>`, template.HTMLEscapeString(err.Error()))
	} else {
		rest.WriteString(`<template id="complete">`)
		if err := render.NewDashboard(rep.Report, &o, live).Content(&rest); err != nil {
			h.log.Warn("rendering dashboard", "err", err)
		}
		rest.WriteString("</template>\n")
	}
	page.Bottom(&rest)
	writeSoon(w)
	w.Write(rest.Bytes())
}

// writeSoon gives the response writeTime from now to be written: the
// server's per-request write deadline started before the report was
// computed, which may take up to Timeout.
func writeSoon(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(writeTime))
}

const writeTime = 15 * time.Second

// reportFailed answers a report that could not be computed.
func (h *Handler) reportFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, model.ErrInvalidOptions) {
		fail(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	h.log.Warn("report failed", "err", err)
	fail(w, http.StatusBadGateway, "report failed: "+err.Error())
}

func securityHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-store")
}

func (h *Handler) asset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	b, err := render.Asset(name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	securityHeaders(w)
	w.Header().Set("Cache-Control", "no-cache")
	if strings.HasSuffix(name, ".js") {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	}
	w.Write(b)
}

// live streams accepted runs as JSON text messages (LiveRun), one per run.
func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	h.init()
	if h.Hub == nil {
		http.NotFound(w, r)
		return
	}
	if !h.authorize(w, r) {
		return
	}
	sub, err := h.Hub.Subscribe()
	if err != nil {
		w.Header().Set("Retry-After", "30")
		fail(w, http.StatusServiceUnavailable, "busy: "+err.Error())
		return
	}
	defer h.Hub.Unsubscribe(sub)
	conn, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer conn.Close()
	conn.SetReadLimit(512)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		conn.SetReadDeadline(time.Now().Add(90 * time.Second))
		conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(90 * time.Second)) })
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case msg := <-sub.C:
			conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ping.C:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(10*time.Second)); err != nil {
				return
			}
		case <-sub.Done():
			code := websocket.ClosePolicyViolation
			if errors.Is(sub.Err(), ErrHubClosed) {
				code = websocket.CloseGoingAway
			}
			if sub.Err() != nil {
				conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, sub.Err().Error()), time.Now().Add(time.Second))
			}
			return
		case <-readDone:
			return
		case <-r.Context().Done():
			return
		}
	}
}
