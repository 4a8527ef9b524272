// Package udprelay is a test helper: a UDP relay that holds each datagram
// for a fixed delay, so that tests over loopback get a known round trip.
package udprelay

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"
)

// relayIdle is how long the relay keeps a client's upstream socket
// without traffic from the target.
const relayIdle = time.Second

// Delay relays datagrams between its clients and target, holding each
// one for delay in either direction, in order, until the test ends; it
// returns the relay's address. Each client address gets a socket of its
// own towards target (so the server sees one peer per client), closed
// after relayIdle without an answer. A test of HTTP/3 through it gets a
// known round trip of twice delay (loopback alone makes the handshake finish
// before a client has written anything).
func Delay(t testing.TB, target netip.AddrPort, delay time.Duration) netip.AddrPort {
	t.Helper()
	ln, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(target.Addr(), 0)))
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	type held struct {
		at time.Time
		p  []byte
	}
	type link struct {
		up   *net.UDPConn
		toUp chan held
	}
	var (
		mu     sync.Mutex
		links  = map[netip.AddrPort]*link{}
		closed bool
		wg     sync.WaitGroup
	)
	t.Cleanup(func() {
		mu.Lock()
		closed = true
		for from, l := range links {
			delete(links, from)
			close(l.toUp)
			l.up.Close()
		}
		mu.Unlock()
		ln.Close()
		wg.Wait()
	})
	// pump sends what ch holds, each datagram when its time has come.
	pump := func(ch <-chan held, send func([]byte)) {
		for h := range ch {
			time.Sleep(time.Until(h.at))
			send(h.p)
		}
	}
	hold := func(p []byte) held { return held{time.Now().Add(delay), append([]byte(nil), p...)} }
	wg.Go(func() {
		buf := make([]byte, 1<<16)
		for {
			n, from, err := ln.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed
			}
			h := hold(buf[:n])
			mu.Lock()
			if closed {
				mu.Unlock()
				return
			}
			l := links[from]
			if l == nil {
				up, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(target))
				if err != nil {
					mu.Unlock()
					t.Errorf("relay: %v", err)
					continue
				}
				l = &link{up: up, toUp: make(chan held, 1024)}
				links[from] = l
				toClient := make(chan held, 1024)
				wg.Go(func() { pump(l.toUp, func(p []byte) { up.Write(p) }) })
				wg.Go(func() { pump(toClient, func(p []byte) { ln.WriteToUDPAddrPort(p, from) }) })
				wg.Go(func() { // target → client, until idle or closed
					defer close(toClient)
					b := make([]byte, 1<<16)
					for {
						up.SetReadDeadline(time.Now().Add(relayIdle))
						n, err := up.Read(b)
						if errors.Is(err, os.ErrDeadlineExceeded) {
							mu.Lock()
							if links[from] == l {
								delete(links, from)
								close(l.toUp)
							}
							mu.Unlock()
							up.Close()
							return
						}
						if err != nil {
							return
						}
						select {
						case toClient <- hold(b[:n]):
						default: // a full queue drops, as a router's would
						}
					}
				})
			}
			select {
			case l.toUp <- h:
			default:
			}
			mu.Unlock()
		}
	})
	return ln.LocalAddr().(*net.UDPAddr).AddrPort()
}
