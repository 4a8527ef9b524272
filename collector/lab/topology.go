package lab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// CollectorAddr is the collector's address as every region sees it: on the
// collector namespace's loopback, reached from region i through its link.
var CollectorAddr = netip.MustParseAddr("198.18.0.1")

// namePrefix starts the name of every lab New names itself; Sweep looks for it.
const namePrefix = "h3lab-"

// Config describes a lab. Regions is required; the zero value of every other
// field is a working default.
type Config struct {
	// Regions are the emulated places, each given a namespace and a link to
	// the collector. At most MaxRegions.
	Regions []Region
	// Name prefixes the names of the lab's namespaces (NAME-c for the
	// collector, NAME-r-REGION for each region), so that two labs on one
	// machine do not collide: 1 to 40 of a-z, 0-9 and '-'. Default
	// "h3lab-PID-XXXX" (the process id and a random suffix), which Sweep
	// recognises.
	Name string
	// QueueLimit is the number of packets each direction of a link holds,
	// in flight or waiting for the link's rate, before it drops new ones.
	// Default DefaultQueueLimit.
	QueueLimit int
	// Seed seeds loss and jitter. Default 0: a random seed.
	Seed uint64

	failAt int // tests: New fails at this step (1-based), as if it had failed there
}

// Lab is a running set of namespaces: one for the collector and one per
// region, each region joined to the collector by a pair of TUN devices and a
// pump per direction in this process. Close removes it all.
type Lab struct {
	// Name prefixes every namespace of the lab.
	Name string
	// Collector is the collector's namespace; it answers at CollectorAddr.
	Collector Namespace
	// Regions are the regions' links, in the order of Config.Regions.
	Regions []*RegionLink

	clock      clock
	namespaces []Namespace // created so far, in order
	steps      int
	failAt     int

	closeOnce sync.Once
	closeErr  error
}

// RegionLink is one region's place in the lab.
type RegionLink struct {
	Region
	// Namespace is the region's namespace. Its only route leads to the
	// collector through the TUN device RegionIface.
	Namespace Namespace
	// Prefix is the region's /24 in 198.18.0.0/15, the range a lab GeoIP
	// database maps to Region.Country; Addr (.2 in Prefix) is the region's
	// address, the source of everything it sends.
	Prefix netip.Prefix
	Addr   netip.Addr
	// RegionIface is the TUN device in the region's namespace;
	// CollectorIface its peer in the collector's namespace, which holds .1
	// of Prefix.
	RegionIface, CollectorIface string

	regionTUN, collectorTUN *os.File
	up, down                *pump // region → collector, collector → region
}

// Stats returns the counters of both directions of the link.
func (r *RegionLink) Stats() (up, down Stats) {
	if r.up != nil {
		up = r.up.Stats()
	}
	if r.down != nil {
		down = r.down.Stats()
	}
	return up, down
}

var labNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)

// Validate checks the configuration as a whole.
func (c *Config) Validate() error {
	var errs []error
	for i := range c.Regions {
		if err := c.Regions[i].validate(); err != nil {
			errs = append(errs, fmt.Errorf("regions[%d]%s%w", i, label(c.Regions[i].Name), err))
		}
	}
	if err := validateList(c.Regions); err != nil {
		errs = append(errs, err)
	}
	if c.Name != "" && !labNameRE.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("name: %q is not 1 to 40 of a-z, 0-9 and '-'", c.Name))
	}
	if c.QueueLimit < 0 {
		errs = append(errs, fmt.Errorf("queue limit: %d is negative", c.QueueLimit))
	}
	return errors.Join(errs...)
}

// New builds the lab and starts its pumps. It needs root (CAP_NET_ADMIN and
// CAP_SYS_ADMIN), /dev/net/tun and the ip command. If it fails, or ctx ends
// while it builds, it removes whatever it had made before it returns; once it
// has returned a Lab, ctx no longer matters and the caller must Close it.
//
// To remove the lab on SIGINT and SIGTERM, build it under a context from
// signal.NotifyContext and Close it when that context ends:
//
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	l, err := lab.New(ctx, cfg)
//	if err != nil {
//		return err
//	}
//	defer l.Close()
//	… run the experiment until it is done or <-ctx.Done() …
//
// A process killed with SIGKILL leaves its namespaces behind; Sweep removes
// those of dead processes.
func New(ctx context.Context, cfg Config) (_ *Lab, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("lab configuration: %w", err)
	}
	name := cfg.Name
	if name == "" {
		name = fmt.Sprintf("%s%d-%04x", namePrefix, os.Getpid(), rand.N(1<<16))
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	l := &Lab{Name: name, Collector: Namespace(name + "-c"), clock: newClock(), failAt: cfg.failAt}
	defer func() {
		if err != nil {
			err = errors.Join(fmt.Errorf("building lab %s: %w", name, err), l.Close())
		}
	}()
	for i, r := range cfg.Regions {
		prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i + 1), 0}), 24)
		l.Regions = append(l.Regions, &RegionLink{
			Region:         r,
			Namespace:      Namespace(name + "-r-" + r.Name),
			Prefix:         prefix,
			Addr:           prefix.Addr().Next().Next(),
			RegionIface:    "lab0",
			CollectorIface: "lab" + strconv.Itoa(i+1),
		})
	}

	// Namespaces.
	for _, ns := range append([]Namespace{l.Collector}, l.regionNamespaces()...) {
		if err := l.step(ctx); err != nil {
			return nil, err
		}
		if ns.exists() {
			return nil, fmt.Errorf("network namespace %s exists already: is another lab named %s running?", ns, name)
		}
		if err := ns.create(ctx); err != nil {
			return nil, err
		}
		l.namespaces = append(l.namespaces, ns)
	}

	// TUN pairs, opened here so that this process pumps between them.
	for _, r := range l.Regions {
		if err := l.step(ctx); err != nil {
			return nil, err
		}
		if r.regionTUN, err = openTUN(r.Namespace, r.RegionIface); err != nil {
			return nil, err
		}
		if err := l.step(ctx); err != nil {
			return nil, err
		}
		if r.collectorTUN, err = openTUN(l.Collector, r.CollectorIface); err != nil {
			return nil, err
		}
	}

	// Addresses and routes. No IPv6 link-local addresses: nothing but the
	// lab's own traffic crosses the links.
	coll := []string{
		"link set lo up",
		"addr add " + CollectorAddr.String() + "/32 dev lo",
	}
	for _, r := range l.Regions {
		peer := r.Prefix.Addr().Next()
		coll = append(coll,
			"link set dev "+r.CollectorIface+" addrgenmode none mtu 1500 up",
			"addr add "+peer.String()+"/24 dev "+r.CollectorIface,
		)
	}
	if err := l.step(ctx); err != nil {
		return nil, err
	}
	if err := l.Collector.ip(ctx, coll...); err != nil {
		return nil, err
	}
	for _, r := range l.Regions {
		if err := l.step(ctx); err != nil {
			return nil, err
		}
		err := r.Namespace.ip(ctx,
			"link set lo up",
			"link set dev "+r.RegionIface+" addrgenmode none mtu 1500 up",
			"addr add "+r.Addr.String()+"/24 dev "+r.RegionIface,
			"route add default dev "+r.RegionIface+" src "+r.Addr.String(),
		)
		if err != nil {
			return nil, err
		}
	}

	// Pumps.
	for i, r := range l.Regions {
		if err := l.step(ctx); err != nil {
			return nil, err
		}
		s := seed + uint64(2*i)
		if r.up, err = newPump(r.Up, r.BlockUDP, cfg.QueueLimit, s, l.clock); err != nil {
			return nil, err
		}
		if r.down, err = newPump(r.Down, r.BlockUDP, cfg.QueueLimit, s+1, l.clock); err != nil {
			return nil, err
		}
		r.up.start(r.regionTUN, r.collectorTUN)
		r.down.start(r.collectorTUN, r.regionTUN)
	}
	return l, nil
}

// errInjected is the failure tests inject half-way through New.
var errInjected = errors.New("failure injected by a test")

// step counts New's steps, failing where a test asked, and checks ctx.
func (l *Lab) step(ctx context.Context) error {
	l.steps++
	if l.steps == l.failAt {
		return errInjected
	}
	return ctx.Err()
}

func (l *Lab) regionNamespaces() []Namespace {
	ns := make([]Namespace, len(l.Regions))
	for i, r := range l.Regions {
		ns[i] = r.Namespace
	}
	return ns
}

// Close stops the pumps, closes the TUN devices (which removes them) and
// deletes the namespaces, whatever state the lab is in: half-built, or with
// namespaces already deleted by someone else. It is safe to call more than
// once and from several goroutines; every call returns the first one's error.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() {
		var errs []error
		for _, r := range l.Regions {
			for _, p := range []*pump{r.up, r.down} {
				if p != nil {
					p.stop()
				}
			}
		}
		// Closing the devices ends the readers. It also releases the
		// namespaces, which their files hold alive even once unnamed.
		for _, r := range l.Regions {
			for _, f := range []*os.File{r.regionTUN, r.collectorTUN} {
				if f != nil {
					if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
						errs = append(errs, fmt.Errorf("closing %s: %w", f.Name(), err))
					}
				}
			}
		}
		for _, r := range l.Regions {
			for _, p := range []*pump{r.up, r.down} {
				if p != nil {
					p.wait()
				}
			}
		}
		for i := len(l.namespaces) - 1; i >= 0; i-- {
			if err := l.namespaces[i].remove(); err != nil {
				errs = append(errs, err)
			}
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// Sweep deletes the namespaces left behind by labs that New named itself
// ("h3lab-PID-…") and whose process no longer runs, as after a SIGKILL. It
// returns the names it deleted.
func Sweep() ([]Namespace, error) {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing network namespaces: %w", err)
	}
	var removed []Namespace
	var errs []error
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namePrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || unix.Kill(pid, 0) != unix.ESRCH {
			continue // not ours, or its process lives
		}
		ns := Namespace(e.Name())
		if err := ns.remove(); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, ns)
	}
	return removed, errors.Join(errs...)
}
