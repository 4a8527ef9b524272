package origin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"syscall"
)

// sockets are the bound sockets of one origin.
type sockets struct {
	tcp []net.Listener
	udp []*net.UDPConn
}

func (s *sockets) close() {
	for _, l := range s.tcp {
		l.Close()
	}
	for _, c := range s.udp {
		c.Close()
	}
	s.tcp, s.udp = nil, nil
}

// addrPort is the first TCP address bound, which is also the UDP address
// of the H3 origin.
func (s *sockets) addrPort() netip.AddrPort {
	if len(s.tcp) == 0 {
		return netip.AddrPort{}
	}
	if a, ok := s.tcp[0].Addr().(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// bindOrigin binds the sockets of one origin on addr: TCP, and with udp
// also UDP on the same port. An empty host binds the wildcard address,
// which on Linux is dual-stack (IPv4 and IPv6) for both TCP and UDP.
// "localhost" binds 127.0.0.1 and ::1 separately, because browsers try ::1
// first for localhost; a host without IPv6 keeps only 127.0.0.1, with a
// warning. Port 0 picks a free port that is free on every socket.
func bindOrigin(ctx context.Context, addr string, udp bool, logger *slog.Logger) (sockets, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return sockets{}, fmt.Errorf("address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return sockets{}, fmt.Errorf("address %q: port is not a number", addr)
	}
	hosts := []string{host}
	if host == "localhost" {
		hosts = []string{"127.0.0.1", "::1"}
	}
	for try := 0; ; try++ {
		s, err := bindAll(ctx, hosts, port, udp, logger)
		if err == nil {
			return s, nil
		}
		// With port 0 the first socket's port may be taken on another
		// address or on UDP; pick again.
		if port == 0 && errors.Is(err, syscall.EADDRINUSE) && try < 20 {
			continue
		}
		return sockets{}, err
	}
}

func bindAll(ctx context.Context, hosts []string, port int, udp bool, logger *slog.Logger) (sockets, error) {
	var lc net.ListenConfig
	var s sockets
	for i, h := range hosts {
		addr := net.JoinHostPort(h, strconv.Itoa(port))
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			if i > 0 && (errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT)) {
				logger.Warn("cannot bind localhost's IPv6 address, serving IPv4 only", "addr", addr, "err", err)
				continue
			}
			s.close()
			return s, fmt.Errorf("listening on tcp %s: %w", addr, err)
		}
		s.tcp = append(s.tcp, ln)
		if port == 0 {
			port = ln.Addr().(*net.TCPAddr).Port
			addr = net.JoinHostPort(h, strconv.Itoa(port))
		}
		if !udp {
			continue
		}
		pc, err := lc.ListenPacket(ctx, "udp", addr)
		if err != nil {
			s.close()
			return s, fmt.Errorf("listening on udp %s: %w", addr, err)
		}
		s.udp = append(s.udp, pc.(*net.UDPConn))
	}
	return s, nil
}

// quicBufferSize is the UDP socket buffer size quic-go asks for.
const quicBufferSize = 7 << 20

// checkUDPBuffers grows every UDP socket's buffers to what quic-go wants
// (which then leaves them alone) and warns once, with the smallest sizes
// granted, if the kernel refuses.
func (s *Server) checkUDPBuffers() {
	if len(s.h3Socks.udp) == 0 {
		return
	}
	rcv, snd := quicBufferSize, quicBufferSize
	for _, c := range s.h3Socks.udp {
		_ = c.SetReadBuffer(quicBufferSize)
		_ = c.SetWriteBuffer(quicBufferSize)
		forceUDPBuffers(c, quicBufferSize)
		r, w, err := udpBufferSizes(c)
		if err != nil {
			s.logger.Debug("cannot read UDP buffer sizes", "addr", c.LocalAddr().String(), "err", err)
			continue
		}
		rcv, snd = min(rcv, r), min(snd, w)
	}
	if rcv < quicBufferSize || snd < quicBufferSize {
		s.logger.Warn("the kernel limits UDP buffers below what QUIC needs under load; raise them with "+
			"sysctl -w net.core.rmem_max=7500000 net.core.wmem_max=7500000",
			"receive_kib", rcv/1024, "send_kib", snd/1024, "wanted_kib", quicBufferSize/1024)
	}
}

func addrList(ls []net.Listener) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Addr().String()
	}
	return out
}

func udpList(cs []*net.UDPConn) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.LocalAddr().String()
	}
	return out
}
