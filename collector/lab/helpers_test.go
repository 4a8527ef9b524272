package lab

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// requireNetAdmin skips the test, saying why, where the lab cannot run: not
// root, or no TUN device. Anything else missing (the ip command, a kernel
// feature) fails the test.
func requireNetAdmin(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: the lab needs root (network namespaces and TUN devices); run go test as root")
	}
	if _, err := os.Stat(tunDevice); err != nil {
		t.Skipf("skipped: the lab needs %s: %v", tunDevice, err)
	}
}

// newTestLab builds a lab and removes it when the test ends, checking that
// nothing is left behind.
func newTestLab(t testing.TB, cfg Config) *Lab {
	t.Helper()
	requireNetAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("closing the lab: %v", err)
		}
		checkNothingLeft(t, l.Name)
	})
	return l
}

// checkNothingLeft fails the test if a namespace named for the lab remains or
// the process still holds a TUN device (which would keep an unnamed
// namespace and its devices alive).
func checkNothingLeft(t testing.TB, name string) {
	t.Helper()
	entries, _ := os.ReadDir(netnsDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), name+"-") {
			t.Errorf("namespace %s is left", e.Name())
		}
	}
	if n := openTUNs(t); n > 0 {
		t.Errorf("%d TUN devices are still open", n)
	}
}

func openTUNs(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == tunDevice {
			n++
		}
	}
	return n
}

// udpEcho answers every datagram on CollectorAddr in the collector's
// namespace and returns the port.
func udpEcho(t testing.TB, l *Lab) int {
	t.Helper()
	var conn *net.UDPConn
	err := l.Collector.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(CollectorAddr, 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			conn.WriteToUDPAddrPort(buf[:n], from)
		}
	}()
	return conn.LocalAddr().(*net.UDPAddr).Port
}

// probeResult is what a run of UDP probes saw.
type probeResult struct {
	sent int
	rtts []time.Duration // of the probes answered, sorted
}

func (r probeResult) loss() float64 { return 1 - float64(len(r.rtts))/float64(r.sent) }

func (r probeResult) quantile(q float64) time.Duration {
	if len(r.rtts) == 0 {
		return 0
	}
	return r.rtts[min(int(q*float64(len(r.rtts))), len(r.rtts)-1)]
}

// probeUDP sends n probes, one every interval, from the region's namespace
// to the collector's echo port, then waits up to wait for the last answers.
// Each probe carries its sequence number; the send times stay here.
func probeUDP(t testing.TB, r *RegionLink, port, n int, interval, wait time.Duration) probeResult {
	t.Helper()
	var conn *net.UDPConn
	err := r.Namespace.Do(func() (err error) {
		conn, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(CollectorAddr, uint16(port))))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sentAt := make([]time.Time, n)
	got := make([]time.Duration, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 64)
		for {
			k, err := conn.Read(buf)
			at := time.Now()
			if err != nil {
				return
			}
			if k < 4 {
				continue
			}
			seq := int(binary.BigEndian.Uint32(buf))
			mu.Lock()
			if seq < n && got[seq] == 0 {
				got[seq] = at.Sub(sentAt[seq])
			}
			mu.Unlock()
		}
	})
	msg := make([]byte, 32)
	start := time.Now()
	for i := range n {
		// Absolute schedule: a late tick does not push the rest back.
		time.Sleep(time.Until(start.Add(time.Duration(i) * interval)))
		binary.BigEndian.PutUint32(msg, uint32(i))
		mu.Lock()
		sentAt[i] = time.Now()
		mu.Unlock()
		if _, err := conn.Write(msg); err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("probe %d: %v", i, err)
		}
	}
	time.Sleep(wait)
	conn.Close()
	wg.Wait()
	res := probeResult{sent: n}
	for _, d := range got {
		if d > 0 {
			res.rtts = append(res.rtts, d)
		}
	}
	slices.Sort(res.rtts)
	return res
}
