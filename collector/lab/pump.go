package lab

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultQueueLimit is the number of packets one direction holds when
// Config.QueueLimit is 0: more than 100 ms of a 1 Gbit/s link in full-size
// packets, so only a flood or a slow configured rate fills it.
const DefaultQueueLimit = 10000

// maxPacket is the largest packet the pump carries: the TUN devices' MTU is
// 1500 and they have no offloads (no IFF_VNET_HDR), so nothing larger comes.
const maxPacket = 2048

// pump moves packets one way, from one TUN device to another, with the
// impairments of a Path: loss, then delay and jitter, then the link's rate.
//
// A reader takes each packet as it comes, decides its fate and the time it
// leaves, and appends it to a bounded queue (drop-tail when full). A writer
// sleeps on an absolute timerfd deadline (CLOCK_MONOTONIC) until the head of
// the queue is due, then writes every due packet; Go timers can be about a
// millisecond late, a timerfd read through the poller much less. (Not a
// blocking read on a locked OS thread: the woken thread must win back a P
// from the scheduler, which is later under load.)
//
// Packets leave in the order they came. Jitter makes a packet's delay vary
// but a packet never leaves before the one ahead of it: the send time is
// clamped to the previous one. Real paths mostly jitter through queues, which
// keep order, and reordering would hurt TCP (fast retransmits on three
// duplicate ACKs) far more than QUIC, tilting the very comparison the lab is
// for. Since departures are in order, the release heap degenerates into a
// FIFO: the queue is a ring.
type pump struct {
	path     Path
	blockUDP bool
	clock    clock
	loss     *lossModel
	rng      *rand.Rand

	// Reader-only state.
	linkFree    int64 // when the link has sent the last packet queued (rate > 0)
	lastRelease int64 // release time of the last packet queued
	runs        lossRuns

	mu   sync.Mutex
	ring []slot // len is the queue limit
	head int    // index of the oldest packet
	n    int    // packets held

	kick      chan struct{}   // reader → writer: the queue is no longer empty
	done      chan struct{}   // closed by stop
	timer     *os.File        // timerfd, read through the poller so that stop can wake it
	timerConn syscall.RawConn // the timerfd for TimerfdSettime (File.Fd would make it blocking)
	wg        sync.WaitGroup
	stats     pumpCounters
}

type slot struct {
	release int64 // CLOCK_MONOTONIC ns
	buf     []byte
}

func newPump(p Path, blockUDP bool, queueLimit int, seed uint64, c clock) (*pump, error) {
	if queueLimit <= 0 {
		queueLimit = DefaultQueueLimit
	}
	tfd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating timerfd: %w", err)
	}
	timer := os.NewFile(uintptr(tfd), "timerfd")
	timerConn, err := timer.SyscallConn()
	if err != nil {
		timer.Close()
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &pump{
		path:      p,
		blockUDP:  blockUDP,
		clock:     c,
		loss:      newLossModel(p.LossPct, p.LossBurst, rng),
		rng:       rng,
		ring:      make([]slot, queueLimit),
		kick:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		timer:     timer,
		timerConn: timerConn,
	}, nil
}

// start runs the reader and the writer until stop. in must return an error
// once closed (an *os.File in non-blocking mode does), which ends the reader.
func (p *pump) start(in io.Reader, out io.Writer) {
	p.wg.Add(2)
	go func() { defer p.wg.Done(); p.read(in) }()
	go func() { defer p.wg.Done(); p.write(out) }()
}

// stop ends the writer; the reader ends when its input is closed. wait waits
// for both.
func (p *pump) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
		p.timer.Close()
	}
}

func (p *pump) wait() { p.wg.Wait() }

func (p *pump) read(in io.Reader) {
	buf := make([]byte, maxPacket)
	delay := int64(p.path.DelayMS * 1e6)
	jitter := p.path.JitterMS * 1e6
	var nsPerByte float64 // 8e9 ns/s over bits/s
	if p.path.RateKbit > 0 {
		nsPerByte = 8e9 / (float64(p.path.RateKbit) * 1000)
	}
	for {
		n, err := in.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, io.EOF) {
				p.stats.readErrors.Add(1)
				select {
				case <-p.done:
					return
				default:
				}
				if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
					continue
				}
			}
			return
		}
		now := p.clock.now()
		p.stats.in.Add(1)
		pkt := buf[:n]
		udp := isUDP(pkt)
		if udp {
			p.stats.udpIn.Add(1)
		}
		if p.blockUDP && udp {
			p.stats.blocked.Add(1)
			continue
		}
		lost := p.loss.lose()
		if started, ended := p.runs.record(lost); started {
			p.stats.bursts.Add(1)
		} else if ended > 0 {
			p.stats.burstMax.raise(ended)
		}
		if lost {
			p.stats.lost.Add(1)
			if udp {
				p.stats.udpLost.Add(1)
			}
			p.stats.burstMax.raise(p.runs.current)
			continue
		}
		sent, linkFree := now, p.linkFree
		if nsPerByte > 0 {
			// Serialisation: a token bucket one packet deep, so the packet
			// starts when the link is free and takes its size over the rate.
			sent = max(now, linkFree) + int64(float64(n)*nsPerByte)
			linkFree = sent
		}
		d := delay
		if jitter > 0 {
			d = max(0, delay+int64(jitter*p.rng.NormFloat64()))
		}
		release := max(sent+d, p.lastRelease)

		p.mu.Lock()
		if p.n == len(p.ring) {
			p.mu.Unlock()
			p.stats.queueFull.Add(1)
			continue
		}
		s := &p.ring[(p.head+p.n)%len(p.ring)]
		if s.buf == nil {
			s.buf = make([]byte, 0, maxPacket)
		}
		s.buf = append(s.buf[:0], pkt...)
		s.release = release
		p.n++
		wasEmpty := p.n == 1
		p.mu.Unlock()
		p.linkFree, p.lastRelease = linkFree, release
		if wasEmpty {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		}
	}
}

func (p *pump) write(out io.Writer) {
	var tick [8]byte
	for {
		p.mu.Lock()
		if p.n == 0 {
			p.mu.Unlock()
			select {
			case <-p.kick:
				continue
			case <-p.done:
				return
			}
		}
		s := &p.ring[p.head] // the reader leaves held slots alone
		p.mu.Unlock()

		if now := p.clock.now(); s.release > now {
			spec := unix.ItimerSpec{Value: unix.NsecToTimespec(s.release)}
			var err error
			cerr := p.timerConn.Control(func(fd uintptr) {
				err = unix.TimerfdSettime(int(fd), unix.TFD_TIMER_ABSTIME, &spec, nil)
			})
			if err = cmp.Or(cerr, err); err != nil {
				select {
				case <-p.done:
					return
				default:
				}
				p.stats.writeErrors.Add(1)
				time.Sleep(time.Duration(s.release - now)) // should not happen; degrade, do not spin
				continue
			}
			if _, err := p.timer.Read(tick[:]); err != nil {
				return // closed by stop
			}
			continue
		}
		if _, err := out.Write(s.buf); err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			p.stats.writeErrors.Add(1)
		} else {
			p.stats.out.Add(1)
			p.stats.late.record(p.clock.now() - s.release)
		}
		p.mu.Lock()
		p.head = (p.head + 1) % len(p.ring)
		p.n--
		p.mu.Unlock()
	}
}

// isUDP reports whether an IPv4 or IPv6 packet carries UDP (IPv6: as its
// first next header; extension headers are not followed).
func isUDP(pkt []byte) bool {
	if len(pkt) < 1 {
		return false
	}
	switch pkt[0] >> 4 {
	case 4:
		return len(pkt) > 9 && pkt[9] == unix.IPPROTO_UDP
	case 6:
		return len(pkt) > 6 && pkt[6] == unix.IPPROTO_UDP
	}
	return false
}

// Stats counts what one direction of a region's link did with its packets.
type Stats struct {
	In        uint64 // packets read from the sending side
	Out       uint64 // packets written to the receiving side
	Lost      uint64 // dropped by the loss model
	Blocked   uint64 // UDP dropped for Region.BlockUDP
	QueueFull uint64 // dropped because the queue held Config.QueueLimit packets (drop-tail)
	// UDPIn and UDPLost are the UDP packets (QUIC) among In and Lost, the
	// rest being TCP: the loss model treats both alike, these show it did.
	UDPIn, UDPLost uint64
	// Bursts counts the runs of consecutive packets lost by the loss model
	// (Lost/Bursts is the mean run, the configured LossBurst in
	// expectation); LongestBurst is the longest.
	Bursts, LongestBurst uint64
	Held                 int // packets in the queue now
	// ReadErrors and WriteErrors count failed reads and writes on the TUN devices.
	ReadErrors, WriteErrors uint64
	// Late is how long after its release time each packet was written: the
	// pump's own delay on top of the configured one (timer wake-up, the
	// write). It does not include the kernel's time to hand the packet to the
	// reader, which only an end-to-end measurement sees.
	Late Lateness
}

// Lateness summarises the pump's own delay over the packets written.
type Lateness struct {
	Mean, P50, P99, Max time.Duration
	// Sum and Count are the total delay and the packets it is over, so that
	// a phase's mean is the difference of two summaries (After).
	Sum   time.Duration
	Count uint64
}

// After is the lateness of the packets written between earlier and l
// (two summaries of one pump): their count, sum and mean; the percentiles
// and the maximum are the whole run's and are left out.
func (l Lateness) After(earlier Lateness) Lateness {
	d := Lateness{Sum: l.Sum - earlier.Sum, Count: l.Count - earlier.Count}
	if d.Count > 0 {
		d.Mean = d.Sum / time.Duration(d.Count)
	}
	return d
}

func (s Stats) String() string {
	return fmt.Sprintf("in %d, out %d, lost %d, blocked %d, queue full %d, held %d; late mean %v p50 ≤%v p99 ≤%v max %v",
		s.In, s.Out, s.Lost, s.Blocked, s.QueueFull, s.Held, s.Late.Mean, s.Late.P50, s.Late.P99, s.Late.Max)
}

// MeanBurst is the mean run of consecutive losses, 0 without loss.
func (s Stats) MeanBurst() float64 {
	if s.Bursts == 0 {
		return 0
	}
	return float64(s.Lost) / float64(s.Bursts)
}

type pumpCounters struct {
	in, out, lost, blocked, queueFull, readErrors, writeErrors atomic.Uint64
	udpIn, udpLost, bursts                                     atomic.Uint64
	burstMax                                                   maxCounter
	late                                                       lateHistogram
}

// maxCounter is the largest value seen.
type maxCounter struct{ v atomic.Uint64 }

func (m *maxCounter) raise(n uint64) {
	for cur := m.v.Load(); n > cur && !m.v.CompareAndSwap(cur, n); cur = m.v.Load() {
	}
}

func (p *pump) Stats() Stats {
	c := &p.stats
	p.mu.Lock()
	held := p.n
	p.mu.Unlock()
	return Stats{
		In: c.in.Load(), Out: c.out.Load(), Lost: c.lost.Load(), Blocked: c.blocked.Load(),
		QueueFull: c.queueFull.Load(), Held: held,
		UDPIn: c.udpIn.Load(), UDPLost: c.udpLost.Load(), Bursts: c.bursts.Load(), LongestBurst: c.burstMax.v.Load(),
		ReadErrors: c.readErrors.Load(), WriteErrors: c.writeErrors.Load(),
		Late: c.late.summary(),
	}
}

// lateHistogram counts lateness in power-of-two microsecond buckets: bucket
// i holds [2^(i-1), 2^i) µs, bucket 0 under 1 µs. Percentiles are bucket
// upper bounds.
type lateHistogram struct {
	buckets  [32]atomic.Uint64
	count    atomic.Uint64
	sum, max atomic.Int64 // ns
}

func (h *lateHistogram) record(ns int64) {
	ns = max(ns, 0)
	h.buckets[min(bits.Len64(uint64(ns/1000)), len(h.buckets)-1)].Add(1)
	h.count.Add(1)
	h.sum.Add(ns)
	for m := h.max.Load(); ns > m && !h.max.CompareAndSwap(m, ns); m = h.max.Load() {
	}
}

func (h *lateHistogram) summary() Lateness {
	n := h.count.Load()
	if n == 0 {
		return Lateness{}
	}
	sum := h.sum.Load()
	l := Lateness{Mean: time.Duration(sum / int64(n)), Max: time.Duration(h.max.Load()), Sum: time.Duration(sum), Count: n}
	quantile := func(q float64) time.Duration {
		want := uint64(math.Ceil(q * float64(n)))
		var seen uint64
		for i := range h.buckets {
			if seen += h.buckets[i].Load(); seen >= want {
				return time.Duration(1<<i) * time.Microsecond
			}
		}
		return l.Max
	}
	l.P50, l.P99 = quantile(0.5), quantile(0.99)
	return l
}
