package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary builds h3rum once per test binary run.
var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "h3rum-bin")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "h3rum")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", &buildError{string(out)}
	}
	return bin, nil
})

type buildError struct{ out string }

func (e *buildError) Error() string { return "building h3rum: " + e.out }

// serveProcess is `h3rum serve` as a child process.
type serveProcess struct {
	cmd    *exec.Cmd
	origin string // https://127.0.0.1:port of the H3 origin
	exited chan error
}

func startServeProcess(t testing.TB, dataDir string, args ...string) *serveProcess {
	t.Helper()
	return startServeProcessOn(t, "", dataDir, args...)
}

// startServeProcessOn is startServeProcess on the given CPUs (taskset's
// list, e.g. "0"; "" for any), its managed ClickHouse with it.
func startServeProcessOn(t testing.TB, cpus, dataDir string, args ...string) *serveProcess {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	args = append([]string{"serve", "--addr", "127.0.0.1:0", "--h2-addr", "127.0.0.1:0", "--data-dir", dataDir,
		"--log-format", "json", "--rate-limit", "-1", "--metrics-addr", "127.0.0.1:0"}, args...)
	cmd := exec.Command(bin, args...)
	if cpus != "" {
		cmd = exec.Command("taskset", append([]string{"-c", cpus, bin}, args...)...)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, exited: make(chan error, 1)}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Msg    string `json:"msg"`
				Origin string `json:"h3_origin"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "serving" {
				ready <- "https://" + line.Origin
			}
			if strings.Contains(sc.Text(), `"level":"ERROR"`) {
				t.Log(sc.Text())
			}
		}
		p.exited <- cmd.Wait()
	}()
	// Stopped gracefully, so that it stops its ClickHouse before the test's
	// temporary directories are removed; killed if it does not.
	t.Cleanup(func() {
		if cmd.Process.Signal(syscall.SIGTERM) != nil {
			return // already exited
		}
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	select {
	case p.origin = <-ready:
	case err := <-p.exited:
		t.Fatalf("serve exited at start-up: %v", err)
	case <-time.After(90 * time.Second):
		t.Fatal("serve not ready within 90 s")
	}
	return p
}

// TestKillServeLosesNothingAcknowledged posts reports while `serve` is
// killed with SIGKILL, restarts it on the same data dir and checks that
// every acknowledged run arrives in ClickHouse, once.
func TestKillServeLosesNothingAcknowledged(t *testing.T) {
	dataDir := t.TempDir()
	// A long flush interval keeps acknowledged runs in the spool only.
	p := startServeProcess(t, dataDir, "--flush-interval", "3s")

	var mu sync.Mutex
	acked := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	var wg sync.WaitGroup
	c := insecureClient()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000 && ctx.Err() == nil; i++ {
				id, body := syntheticReport("kill")
				code, err := postBeacon(ctx, c, p.origin, body)
				if err != nil {
					return // the server is gone
				}
				if code == 204 {
					mu.Lock()
					acked[uuidString(id)] = true
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	wg.Wait()
	cancel()
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	if n == 0 {
		t.Fatal("no report was acknowledged before the kill")
	}
	t.Logf("%d runs acknowledged before SIGKILL", n)

	p2 := startServeProcess(t, dataDir, "--flush-interval", "200ms")
	conn := openLocal(t, dataDir)
	var stored map[string]bool
	waitFor(t, 60*time.Second, "every acknowledged run in ClickHouse", func() (bool, error) {
		rows, err := conn.Query(context.Background(), "SELECT DISTINCT toString(run_id) FROM samples WHERE site = 'kill'")
		if err != nil {
			return false, err
		}
		defer rows.Close()
		stored = map[string]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return false, err
			}
			stored[id] = true
		}
		for id := range acked {
			if !stored[id] {
				return false, nil
			}
		}
		return true, rows.Err()
	})
	// Every run once, raw and rollup alike, without FINAL: 13 rows per run,
	// 10 of them parallel and successful for the rollup. Replays may still
	// be inserting runs that were spooled but not acknowledged, so poll.
	var raw, rollup, runs uint64
	waitFor(t, 30*time.Second, "raw rows, rollup and runs to agree", func() (bool, error) {
		err := conn.QueryRow(context.Background(), `SELECT
			(SELECT count() FROM samples WHERE site = 'kill'),
			(SELECT toUInt64(countMerge(samples)) FROM samples_rollup WHERE site = 'kill'),
			(SELECT uniqExact(run_id) FROM samples WHERE site = 'kill')`).Scan(&raw, &rollup, &runs)
		return err == nil && raw == 13*runs && rollup == 10*runs, err
	})
	if runs < uint64(len(acked)) {
		t.Errorf("%d runs stored, fewer than the %d acknowledged", runs, len(acked))
	}
	t.Logf("%d runs: %d raw rows, %d in the rollup", runs, raw, rollup)

	// SIGTERM stops serve cleanly: exit status 0.
	p2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p2.exited:
		if err != nil {
			t.Errorf("serve after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("serve did not exit within 60 s of SIGTERM")
	}
}
