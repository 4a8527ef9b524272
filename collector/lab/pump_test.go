package lab

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// chanReader hands the pump packets from a channel; closing it ends the reader.
type chanReader chan []byte

func (c chanReader) Read(b []byte) (int, error) {
	p, ok := <-c
	if !ok {
		return 0, os.ErrClosed
	}
	return copy(b, p), nil
}

// recorder keeps each packet the pump writes and when.
type recorder struct {
	clock clock
	mu    sync.Mutex
	seqs  []uint32
	at    []int64
}

func (r *recorder) Write(b []byte) (int, error) {
	now := r.clock.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seqs = append(r.seqs, binary.BigEndian.Uint32(b[20:]))
	r.at = append(r.at, now)
	return len(b), nil
}

func (r *recorder) waitFor(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		got := len(r.seqs)
		r.mu.Unlock()
		if got >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the pump wrote %d packets within %v, want %d", len(r.seqs), within, n)
}

// ipPacket is a fake IPv4 packet of size bytes with protocol proto and a
// sequence number after the header.
func ipPacket(size int, proto byte, seq uint32) []byte {
	p := make([]byte, max(size, 24))
	p[0] = 0x45
	p[9] = proto
	binary.BigEndian.PutUint32(p[20:], seq)
	return p
}

// runPump starts a pump between a channel and a recorder, stopped when the test ends.
func runPump(t *testing.T, path Path, blockUDP bool, queueLimit int) (*pump, chanReader, *recorder) {
	t.Helper()
	c := newClock()
	p, err := newPump(path, blockUDP, queueLimit, 1, c)
	if err != nil {
		t.Fatal(err)
	}
	in, out := make(chanReader), &recorder{clock: c}
	p.start(in, out)
	t.Cleanup(func() {
		p.stop()
		close(in)
		p.wait()
	})
	return p, in, out
}

// TestPumpKeepsOrder sends packets closer together than the jitter and checks
// that none overtakes another and that each waits at least about the delay.
func TestPumpKeepsOrder(t *testing.T) {
	const n = 200
	p, in, out := runPump(t, Path{DelayMS: 5, JitterMS: 5}, false, 0)
	sentAt := make([]int64, n)
	for i := range n {
		sentAt[i] = p.clock.now()
		in <- ipPacket(100, 6, uint32(i))
		time.Sleep(50 * time.Microsecond)
	}
	out.waitFor(t, n, 5*time.Second)
	var early int
	for i, seq := range out.seqs {
		if seq != uint32(i) {
			t.Fatalf("packet %d left as number %d: reordered", seq, i)
		}
		if out.at[i]-sentAt[i] < 0 {
			early++
		}
	}
	if early > 0 {
		t.Errorf("%d packets left before they were sent", early)
	}
	t.Log(p.Stats())
}

// TestPumpRate checks the serialisation delay: at 800 kbit/s a 1000-byte
// packet takes 10 ms, so packets sent together leave 10 ms apart. The
// pump keeps an absolute schedule, so after a scheduler stall the packets
// past due leave at once and the later ones on time again; at 10 ms a
// packet a stall on a loaded machine (one of 10 ms was seen at 1 ms a
// packet) delays a packet or two, not half of them.
func TestPumpRate(t *testing.T) {
	const (
		n   = 20
		gap = 10 * time.Millisecond
	)
	p, in, out := runPump(t, Path{RateKbit: 800}, false, 0)
	start := p.clock.now() // before the first packet reaches the link
	for i := range n {
		in <- ipPacket(1000, 6, uint32(i))
	}
	out.waitFor(t, n, 5*time.Second)
	gaps := make([]time.Duration, 0, n-1)
	for i := 1; i < n; i++ {
		gaps = append(gaps, time.Duration(out.at[i]-out.at[i-1]))
	}
	// Never faster than the rate: packet i leaves once i+1 packets were
	// serialised, however late an earlier one left. The typical gap is one
	// packet's serialisation time: the median, which a stall's catch-up
	// does not move.
	for i := range n {
		turn := time.Duration(i+1) * gap
		if since := time.Duration(out.at[i] - start); since < turn {
			t.Errorf("packet %d of 1000 bytes at 800 kbit/s left %v after the packets were sent, before its turn at %v; gaps %v", i, since, turn, gaps)
		}
	}
	sorted := slices.Clone(gaps)
	slices.Sort(sorted)
	if med := sorted[len(sorted)/2]; med < gap*8/10 || med > gap*13/10 {
		t.Errorf("median gap between packets of 1000 bytes at 800 kbit/s %v, want about %v; gaps %v", med, gap, gaps)
	}
}

// TestPumpQueueLimit checks drop-tail: a queue of 10 behind a 50 ms delay
// keeps the first 10 of 30 packets and counts the rest.
func TestPumpQueueLimit(t *testing.T) {
	p, in, out := runPump(t, Path{DelayMS: 50}, false, 10)
	for i := range 30 {
		in <- ipPacket(100, 6, uint32(i))
	}
	out.waitFor(t, 10, 5*time.Second)
	time.Sleep(60 * time.Millisecond)
	s := p.Stats()
	if s.In != 30 || s.Out != 10 || s.QueueFull != 20 {
		t.Errorf("stats %v, want in 30, out 10, queue full 20", s)
	}
	for i, seq := range out.seqs {
		if seq != uint32(i) {
			t.Errorf("packet %d out was number %d, want the first ten kept", i, seq)
		}
	}
}

func TestPumpBlockUDP(t *testing.T) {
	p, in, out := runPump(t, Path{}, true, 0)
	in <- ipPacket(100, 17, 0) // UDP: dropped
	in <- ipPacket(100, 6, 1)  // TCP: passes
	v6 := make([]byte, 64)
	v6[0], v6[6] = 0x60, 17 // UDP over IPv6: dropped
	in <- v6
	in <- ipPacket(100, 1, 2) // ICMP: passes
	out.waitFor(t, 2, 5*time.Second)
	if s := p.Stats(); s.Blocked != 2 || s.Out != 2 {
		t.Errorf("stats %v, want 2 blocked, 2 out", s)
	}
}

// TestLossModel checks the mean loss and the mean burst length of both
// models over a million packets.
func TestLossModel(t *testing.T) {
	for _, tc := range []struct{ pct, burst float64 }{{10, 0}, {1, 0}, {5, 3}, {1, 2}, {20, 10}} {
		m := newLossModel(tc.pct, tc.burst, rand.New(rand.NewPCG(1, 2)))
		const n = 1_000_000
		var lost, bursts, run int
		for range n {
			if m.lose() {
				lost++
				if run == 0 {
					bursts++
				}
				run++
			} else {
				run = 0
			}
		}
		p := tc.pct / 100
		gotP := float64(lost) / n
		gotBurst := float64(lost) / float64(bursts)
		wantBurst := 1 / (1 - p) // independent losses: geometric runs
		if tc.burst > 1 {
			wantBurst = tc.burst
		}
		// Bursts widen the variance of the mean by about the burst length.
		tol := 5 * math.Sqrt(p*(1-p)/n*max(1, 2*wantBurst))
		if math.Abs(gotP-p) > tol {
			t.Errorf("loss %g %% bursts %g: lost %.3f %%, want %.3f ± %.3f", tc.pct, tc.burst, 100*gotP, 100*p, 100*tol)
		}
		if math.Abs(gotBurst-wantBurst)/wantBurst > 0.05 {
			t.Errorf("loss %g %% bursts %g: mean burst %.2f packets, want %.2f", tc.pct, tc.burst, gotBurst, wantBurst)
		}
	}
}

func TestLateHistogram(t *testing.T) {
	var h lateHistogram
	for range 98 {
		h.record(int64(50 * time.Microsecond))
	}
	h.record(int64(3 * time.Millisecond))
	h.record(int64(-5)) // a clock step: counted as on time
	l := h.summary()
	if l.P50 != 64*time.Microsecond || l.P99 != 64*time.Microsecond || l.Max != 3*time.Millisecond {
		t.Errorf("summary %+v, want p50 and p99 ≤ 64µs, max 3ms", l)
	}
}

// BenchmarkPump floods one region's uplink with 64-byte UDP datagrams from
// its namespace to a sink in the collector's and reports the packets per
// second the pump wrote, with no delay and with 10 ms. The sender is faster
// than the pump: what the TUN device's queue drops before the pump reads it
// is reported as kernel-drop-%.
func BenchmarkPump(b *testing.B) {
	for _, delay := range []float64{0, 10} {
		b.Run("delay="+time.Duration(delay*float64(time.Millisecond)).String(), func(b *testing.B) {
			l := newTestLab(b, Config{Regions: []Region{{Name: "bench", Country: "DE", Continent: "EU",
				Up: Path{DelayMS: delay}, Down: Path{DelayMS: delay}}}})
			r := l.Regions[0]
			var sink *net.UDPConn
			if err := l.Collector.Do(func() (err error) {
				sink, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(CollectorAddr, 0)))
				return err
			}); err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			go func() {
				buf := make([]byte, 2048)
				for {
					if _, err := sink.Read(buf); err != nil {
						return
					}
				}
			}()
			var conn *net.UDPConn
			if err := r.Namespace.Do(func() (err error) {
				conn, err = net.DialUDP("udp4", nil, sink.LocalAddr().(*net.UDPAddr))
				return err
			}); err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			msg := make([]byte, 64)
			before, _ := r.Stats()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				conn.Write(msg)
			}
			// Wait, bounded, for the pump to empty its queue.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for {
				up, _ := r.Stats()
				if up.Held == 0 && up.In == up.Out+up.QueueFull+up.Lost || ctx.Err() != nil {
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			elapsed := time.Since(start) - time.Duration(delay*float64(time.Millisecond))
			b.StopTimer()
			up, _ := r.Stats()
			out := up.Out - before.Out
			b.ReportMetric(float64(out)/elapsed.Seconds(), "pkt/s")
			b.ReportMetric(100*float64(uint64(b.N)-(up.In-before.In))/float64(b.N), "kernel-drop-%")
			b.ReportMetric(float64(up.Late.Mean.Microseconds()), "late-µs")
		})
	}
}

// TestLatenessAfter: the difference of two summaries is the mean of the
// packets between them alone, whatever came before.
func TestLatenessAfter(t *testing.T) {
	var h lateHistogram
	for range 100 {
		h.record(int64(9 * time.Millisecond)) // a busy phase
	}
	before := h.summary()
	for _, ns := range []int64{1e6, 2e6, 3e6} {
		h.record(ns)
	}
	after := h.summary()
	d := after.After(before)
	if d.Count != 3 || d.Mean != 2*time.Millisecond || d.Sum != 6*time.Millisecond {
		t.Errorf("After = %+v, want 3 packets, mean 2ms, sum 6ms (whole run's mean %v)", d, after.Mean)
	}
	if z := before.After(before); z.Count != 0 || z.Mean != 0 {
		t.Errorf("nothing between: %+v, want zero", z)
	}
}
