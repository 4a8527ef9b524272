//go:build unix

package chromium

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFindMissing(t *testing.T) {
	_, err := Find("/nonexistent/chromium")
	if err == nil {
		t.Fatal("found a chromium that does not exist")
	}
	if _, err := Find(""); err != nil {
		t.Fatalf("%v (this machine must have Chromium for the end-to-end tests)", err)
	}
}

func page(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>t</title><body><p id="x">static</p>`+
			`<script>document.getElementById("x").textContent = "ran " + (1 + 1)</script>`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDumpDOM(t *testing.T) {
	srv := page(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dom, err := DumpDOM(ctx, srv.URL, Options{VirtualTimeBudget: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dom, `<p id="x">ran 2</p>`) {
		t.Errorf("DOM lacks the script's output:\n%s", dom)
	}
}

func TestScreenshot(t *testing.T) {
	srv := page(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	file := filepath.Join(t.TempDir(), "shot.png")
	if err := Screenshot(ctx, srv.URL, file, Options{WindowSize: "400,300"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Errorf("screenshot is not a PNG (%d bytes)", len(b))
	}
}

func TestDevToolsAndClose(t *testing.T) {
	srv := page(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Start(ctx, srv.URL, Options{DevTools: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := b.dir
	t.Cleanup(func() { b.Close() })
	var pages []Page
	for ctx.Err() == nil {
		if pages, err = b.Pages(ctx); err == nil && len(pages) == 1 && strings.HasPrefix(pages[0].URL, srv.URL) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(pages) != 1 {
		t.Fatalf("pages %+v, err %v", pages, err)
	}
	if err := b.Navigate(ctx, pages[0], srv.URL+"/next"); err != nil {
		t.Fatal(err)
	}
	if err := b.ClosePage(ctx, pages[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.Done():
	default:
		t.Error("chromium still running after Close")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("profile directory %s left behind (%v)", dir, err)
	}
}
