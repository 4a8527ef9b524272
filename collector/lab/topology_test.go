package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestLab builds a lab of three regions and measures each with real traffic
// from its namespace to the collector's: the round trip of a lossless link,
// the loss of a lossy one, and a region whose UDP is blocked.
func TestLab(t *testing.T) {
	const (
		oneWayMS = 50 // "rtt": 50 ms each way, lossless
		lossyMS  = 20 // "lossy": 20 ms each way, lossPct each way
		lossPct  = 10
	)
	l := newTestLab(t, Config{Regions: []Region{
		{Name: "rtt", Country: "DE", Continent: "EU", Up: Path{DelayMS: oneWayMS}, Down: Path{DelayMS: oneWayMS}},
		{Name: "lossy", Country: "BR", Continent: "SA",
			Up:   Path{DelayMS: lossyMS, LossPct: lossPct},
			Down: Path{DelayMS: lossyMS, LossPct: lossPct}},
		{Name: "blocked", Country: "ZA", Continent: "AF", Up: Path{DelayMS: 5}, Down: Path{DelayMS: 5}, BlockUDP: true},
	}})
	port := udpEcho(t, l)
	rtt, lossy, blocked := l.Regions[0], l.Regions[1], l.Regions[2]

	t.Run("RTT", func(t *testing.T) {
		t.Parallel()
		const configured = 2 * oneWayMS * time.Millisecond
		res := probeUDP(t, rtt, port, 200, 10*time.Millisecond, 300*time.Millisecond)
		med := res.quantile(0.5)
		up, down := rtt.Stats()
		t.Logf("configured RTT %v; measured over %d UDP probes: min %v, median %v, p90 %v, max %v; overhead (median − configured) %v",
			configured, len(res.rtts), res.quantile(0), med, res.quantile(0.9), res.quantile(1), med-configured)
		t.Logf("pump up: %v", up)
		t.Logf("pump down: %v", down)
		if len(res.rtts) != res.sent {
			t.Errorf("%d of %d probes answered on a lossless link", len(res.rtts), res.sent)
		}
		if med < configured || med > configured+2*time.Millisecond {
			t.Errorf("median RTT %v, want within [%v, %v]", med, configured, configured+2*time.Millisecond)
		}
		if res.quantile(0) < configured {
			t.Errorf("fastest probe %v is faster than the configured %v", res.quantile(0), configured)
		}
	})

	t.Run("Loss", func(t *testing.T) {
		t.Parallel()
		const n = 2000
		p := lossPct / 100.0
		want := 1 - (1-p)*(1-p) // lost on the way out or on the way back
		res := probeUDP(t, lossy, port, n, 2*time.Millisecond, 300*time.Millisecond)
		// Four binomial standard deviations: a false alarm once in ~16 000 runs.
		tol := 4 * math.Sqrt(want*(1-want)/n)
		up, down := lossy.Stats()
		t.Logf("configured loss %g %% each way = %.2f %% round trip; measured %.2f %% of %d probes (tolerance ±%.2f points); median RTT %v (configured %v)",
			lossPct*1.0, 100*want, 100*res.loss(), n, 100*tol, res.quantile(0.5), 2*lossyMS*time.Millisecond)
		t.Logf("pump up: %v (%.2f %% lost)", up, 100*float64(up.Lost)/float64(up.In))
		t.Logf("pump down: %v (%.2f %% lost)", down, 100*float64(down.Lost)/float64(down.In))
		if math.Abs(res.loss()-want) > tol {
			t.Errorf("round-trip loss %.2f %%, want %.2f ± %.2f %%", 100*res.loss(), 100*want, 100*tol)
		}
		for _, d := range []struct {
			name string
			s    Stats
		}{{"up", up}, {"down", down}} {
			tol := 4 * math.Sqrt(p*(1-p)/float64(d.s.In))
			if got := float64(d.s.Lost) / float64(d.s.In); d.s.In == 0 || math.Abs(got-p) > tol {
				t.Errorf("%s: pump lost %d of %d, want %g %% ± %.2f", d.name, d.s.Lost, d.s.In, 100*p, 100*tol)
			}
		}
		if med, lo := res.quantile(0.5), 2*lossyMS*time.Millisecond; med < lo || med > lo+2*time.Millisecond {
			t.Errorf("median RTT %v, want within [%v, %v]", med, lo, lo+2*time.Millisecond)
		}
	})

	t.Run("BlockUDP", func(t *testing.T) {
		t.Parallel()
		res := probeUDP(t, blocked, port, 20, 5*time.Millisecond, 200*time.Millisecond)
		if len(res.rtts) != 0 {
			t.Errorf("%d of %d UDP probes answered from a region whose UDP is blocked", len(res.rtts), res.sent)
		}
		up, _ := blocked.Stats()
		if up.Blocked < uint64(res.sent) {
			t.Errorf("pump blocked %d UDP packets, want ≥ %d", up.Blocked, res.sent)
		}
		// TCP passes: connect and echo a line.
		var ln net.Listener
		if err := l.Collector.Do(func() (err error) {
			ln, err = net.Listen("tcp4", netip.AddrPortFrom(CollectorAddr, 0).String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			io.Copy(c, c)
		}()
		var c net.Conn
		start := time.Now()
		if err := blocked.Namespace.Do(func() (err error) {
			c, err = net.DialTimeout("tcp4", ln.Addr().String(), 5*time.Second)
			return err
		}); err != nil {
			t.Fatalf("TCP from the blocked region: %v", err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("hello\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello\n" {
			t.Fatalf("TCP echo: %q, %v", buf, err)
		}
		t.Logf("UDP: 0 of %d probes answered, %d blocked by the pump; TCP: connected and echoed in %v (2 round trips of 10 ms)",
			res.sent, up.Blocked, time.Since(start))
	})
}

// TestCloseAfterFailure makes New fail at each of its steps in turn and
// checks that it leaves nothing behind, then that the next step count builds
// a lab whose Close removes everything.
func TestCloseAfterFailure(t *testing.T) {
	requireNetAdmin(t)
	regions := []Region{
		{Name: "a", Country: "DE", Continent: "EU", Up: Path{DelayMS: 1}, Down: Path{DelayMS: 1}},
		{Name: "b", Country: "JP", Continent: "AS", Up: Path{DelayMS: 1}, Down: Path{DelayMS: 1}, BlockUDP: true},
	}
	const maxSteps = 50 // far more than two regions take: the loop is bounded
	for step := 1; step <= maxSteps; step++ {
		cfg := Config{Regions: regions, Name: fmt.Sprintf("h3labtest-%d-fail%d", os.Getpid(), step), failAt: step}
		l, err := New(context.Background(), cfg)
		if err == nil {
			t.Logf("New failed and cleaned up at each of its %d steps", step-1)
			if step < 8 {
				t.Errorf("only %d steps: is the failure injected?", step-1)
			}
			if err := l.Close(); err != nil {
				t.Error(err)
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			checkNothingLeft(t, cfg.Name)
			return
		}
		if !errors.Is(err, errInjected) {
			t.Fatalf("step %d: %v", step, err)
		}
		checkNothingLeft(t, cfg.Name)
	}
	t.Fatalf("New still failing after %d steps", maxSteps)
}

// TestCloseTolerant removes a namespace behind the lab's back, then checks
// that Close removes the rest, reports no error and can be called again.
func TestCloseTolerant(t *testing.T) {
	requireNetAdmin(t)
	cfg := Config{
		Name: fmt.Sprintf("h3labtest-%d-tolerant", os.Getpid()),
		Regions: []Region{
			{Name: "a", Country: "DE", Continent: "EU"},
			{Name: "b", Country: "JP", Continent: "AS"},
		},
	}
	l, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ip", "netns", "del", string(l.Regions[1].Namespace)).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	checkNothingLeft(t, cfg.Name)
}

// TestNewCancelled checks that New gives up on a context that has ended and
// leaves nothing.
func TestNewCancelled(t *testing.T) {
	requireNetAdmin(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	name := fmt.Sprintf("h3labtest-%d-cancel", os.Getpid())
	_, err := New(ctx, Config{Name: name, Regions: []Region{{Name: "a", Country: "DE", Continent: "EU"}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("New with a cancelled context: %v", err)
	}
	checkNothingLeft(t, name)
}

// TestSweep leaves a namespace named as a lab of a dead process would and
// checks that Sweep removes it and nothing of a live process.
func TestSweep(t *testing.T) {
	requireNetAdmin(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadNS := Namespace(fmt.Sprintf("%s%d-0000-c", namePrefix, dead.Process.Pid))
	liveNS := Namespace(fmt.Sprintf("%s%d-0000-c", namePrefix, os.Getpid()))
	for _, ns := range []Namespace{deadNS, liveNS} {
		if err := ns.create(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.remove() })
	}
	removed, err := Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if deadNS.exists() {
		t.Errorf("Sweep left %s (process %d ended); removed %v", deadNS, dead.Process.Pid, removed)
	}
	if !liveNS.exists() {
		t.Errorf("Sweep removed %s, of this live process", liveNS)
	}
}

// TestDoExec checks that a process started inside Namespace.Do lives in the
// namespace, as one started by `ip netns exec` would (the orchestration starts
// browsers this way).
func TestDoExec(t *testing.T) {
	l := newTestLab(t, Config{Regions: []Region{{Name: "a", Country: "DE", Continent: "EU"}}})
	r := l.Regions[0]
	var out []byte
	if err := r.Namespace.Do(func() (err error) {
		out, err = exec.Command("ip", "-o", "-4", "addr", "show", "dev", r.RegionIface).CombinedOutput()
		return err
	}); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := r.Addr.String() + "/24"; !strings.Contains(string(out), want) {
		t.Errorf("ip addr in the region's namespace: %q, want %s", out, want)
	}
}
