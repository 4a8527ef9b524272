package origin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// protoClients returns a client per protocol, for the H3 origin's URL.
func (ts *testServer) protoClients(t *testing.T) []struct {
	proto  string
	client *http.Client
} {
	t.Helper()
	h3c, _ := ts.h3Client(t, nil)
	return []struct {
		proto  string
		client *http.Client
	}{{"h1", ts.tcpClient(t, true, nil)}, {"h2", ts.tcpClient(t, false, nil)}, {"h3", h3c}}
}

// readBody answers 200 with the number of body bytes read, or 408 when
// the body did not arrive in time: what /beacon does, in short.
func readBody(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		http.Error(w, "body too slow", http.StatusRequestTimeout)
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		io.WriteString(w, strconv.FormatInt(n, 10))
	}
}

// A client that sends its headers and part of its body, then stalls, is
// answered once BodyTimeout has passed, on /probe and on Handler's paths,
// over every protocol; a body that arrives in time is read whole.
func TestBodyTimeout(t *testing.T) {
	const bodyTimeout = 300 * time.Millisecond
	ts := startServer(t, &Server{BodyTimeout: bodyTimeout, Handler: http.HandlerFunc(readBody)})
	for _, c := range ts.protoClients(t) {
		for _, tc := range []struct {
			path   string
			okCode int
			okBody string
		}{{"/probe", http.StatusNoContent, ""}, {"/beacon", http.StatusOK, "20"}} {
			t.Run(c.proto+tc.path, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
				defer cancel()
				pr, pw := io.Pipe()
				// The HTTP/1.1 client waits for its body to end, even after ctx.
				defer pw.CloseWithError(errors.New("test over"))
				context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
				go pw.Write([]byte("012345")) // 6 of 20 bytes, then nothing
				req, _ := http.NewRequestWithContext(ctx, "POST", ts.h3+tc.path, pr)
				req.ContentLength = 20
				start := time.Now()
				resp, err := c.client.Do(req)
				if err != nil {
					t.Fatalf("slow body: no answer after %v: %v", time.Since(start), err)
				}
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != http.StatusRequestTimeout {
					t.Errorf("slow body: status %d, want 408", resp.StatusCode)
				}
				if took < bodyTimeout-50*time.Millisecond || took > 3*time.Second {
					t.Errorf("slow body answered after %v, want about %v", took, bodyTimeout)
				}

				resp, body := doBody(t, c.client, "POST", ts.h3+tc.path, strings.Repeat("x", 20))
				if resp.StatusCode != tc.okCode || body != tc.okBody {
					t.Errorf("whole body: %d %q, want %d %q", resp.StatusCode, body, tc.okCode, tc.okBody)
				}
			})
		}
	}
}

// doBody sends a request with a body and returns the response with its
// body read.
func doBody(t *testing.T, c *http.Client, method, url, body string) (*http.Response, string) {
	t.Helper()
	return send(t, c, method, url, strings.NewReader(body), nil)
}

// A download the client does not read is cut once WriteTimeout has passed
// (the handler's write fails and it returns); one the client reads arrives
// whole.
func TestWriteTimeout(t *testing.T) {
	const writeTimeout = time.Second
	const big = maxMaxProbeBytes // more than any window and socket buffer
	ts := startServer(t, &Server{WriteTimeout: writeTimeout, MaxProbeBytes: big})
	for _, c := range ts.protoClients(t) {
		t.Run(c.proto, func(t *testing.T) {
			resp, body := do(t, c.client, "GET", ts.h3+"/probe?bytes=1000000", nil)
			if resp.StatusCode != http.StatusOK || len(body) != 1000000 {
				t.Errorf("read download: %d, %d bytes; want 200, 1000000", resp.StatusCode, len(body))
			}

			// The handler counts its answer when its write has ended.
			answered := func() float64 {
				return metric(t, ts.reg, "h3rum_collector_requests_total", "origin", "h3", "proto", c.proto, "code", "200")
			}
			before := answered()
			start := time.Now()
			resp, err := c.client.Get(ts.h3 + "/probe?bytes=" + strconv.Itoa(big))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			time.Sleep(writeTimeout / 2)
			if answered() != before {
				t.Fatalf("the write ended after %v, before WriteTimeout", time.Since(start))
			}
			for answered() == before && time.Since(start) < writeTimeout+5*time.Second {
				time.Sleep(10 * time.Millisecond)
			}
			took := time.Since(start)
			if answered() == before || took < writeTimeout || took > writeTimeout+3*time.Second {
				t.Errorf("the write to a client that does not read ended after %v, want about %v", took, writeTimeout)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			if err == nil || n >= big {
				t.Errorf("the client read %d bytes and error %v, want a cut download", n, err)
			}
		})
	}
}

// Handler may extend its write deadline past WriteTimeout, and a response
// that does not is cut.
func TestWriteTimeoutExtended(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	stream := func(extend bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			if extend {
				if err := rc.SetWriteDeadline(time.Now().Add(5 * time.Second)); err != nil {
					t.Errorf("extending the write deadline: %v", err)
				}
			}
			for i := range 8 {
				if _, err := io.WriteString(w, strconv.Itoa(i)); err != nil {
					return
				}
				if err := rc.Flush(); err != nil {
					return
				}
				time.Sleep(writeTimeout / 4)
			}
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/extended", stream(true))
	mux.Handle("/plain", stream(false))
	ts := startServer(t, &Server{WriteTimeout: writeTimeout, Handler: mux})
	for _, c := range ts.protoClients(t) {
		t.Run(c.proto, func(t *testing.T) {
			resp, body := do(t, c.client, "GET", ts.h3+"/extended", nil)
			if resp.StatusCode != http.StatusOK || body != "01234567" {
				t.Errorf("extended: %d %q, want 200 01234567", resp.StatusCode, body)
			}
			resp, err := c.client.Get(ts.h3 + "/plain")
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil || len(b) >= 8 {
				t.Errorf("not extended: read %q, %v; want it cut", b, err)
			}
		})
	}
}

// Over HTTP/1.1 the deadlines belong to the connection, and the server
// counts on net/http to end them with each request: a request must not
// inherit an earlier one's write deadline, and the read deadline of a body
// must not cancel the request once the body is read.
func TestHTTP1DeadlinesPerRequest(t *testing.T) {
	const timeout = 300 * time.Millisecond
	t.Run("write", func(t *testing.T) {
		ts := startServer(t, &Server{WriteTimeout: timeout})
		c := ts.tcpClient(t, true, nil)
		resp, _ := do(t, c, "GET", ts.h2+"/healthz", nil)
		first := parseServerTiming(t, ts.probeTiming(t, c))
		time.Sleep(2 * timeout) // the deadlines of the first two requests pass
		second := parseServerTiming(t, ts.probeTiming(t, c))
		if resp.StatusCode != http.StatusOK || first["cid"] != second["cid"] || second["creq"] != "3" {
			t.Errorf("healthz %d, then probes on connections %s and %s (request %s); want one connection, request 3",
				resp.StatusCode, first["cid"], second["cid"], second["creq"])
		}
	})
	t.Run("read", func(t *testing.T) {
		ts := startServer(t, &Server{BodyTimeout: timeout,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				time.Sleep(2 * timeout)
				if err := r.Context().Err(); err != nil {
					http.Error(w, "context: "+err.Error(), http.StatusInternalServerError)
				}
			})})
		resp, body := doBody(t, ts.tcpClient(t, true, nil), "POST", ts.h2+"/beacon", "payload")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("handler that works past BodyTimeout after reading the body: %d %q", resp.StatusCode, body)
		}
	})
}

// probeTiming returns the Server-Timing of a GET /probe on the H2 origin.
func (ts *testServer) probeTiming(t *testing.T, c *http.Client) string {
	t.Helper()
	resp, _ := do(t, c, "GET", ts.h2+"/probe", nil)
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("probe: %d", resp.StatusCode)
	}
	return resp.Header.Get("Server-Timing")
}
