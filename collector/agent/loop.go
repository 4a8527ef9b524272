package agent

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Loop runs Config's test Count times on Concurrency workers, each
// starting a run every Interval, and sends each result with Sender (or,
// with DryRun, writes its message as one JSON line to Out).
type Loop struct {
	Config      *Config
	Sender      *Sender
	Count       int           // runs in all; 0: until ctx ends
	Concurrency int           // workers, 1 to MaxConcurrency
	Interval    time.Duration // positive
	DryRun      bool
	Out         io.Writer
	Logger      *slog.Logger
}

// MaxConcurrency is the most workers a Loop runs at once.
const MaxConcurrency = 64

// Validate reports the first problem with l's fields or its Config's, if
// any. Run calls it.
func (l *Loop) Validate() error {
	switch {
	case l.Count < 0:
		return fmt.Errorf("agent: Count %d: want 0 (until interrupted) or more", l.Count)
	case l.Interval <= 0:
		return fmt.Errorf("agent: Interval %v: want a positive duration", l.Interval)
	case l.Concurrency < 1 || l.Concurrency > MaxConcurrency:
		return fmt.Errorf("agent: Concurrency %d: want 1 to %d", l.Concurrency, MaxConcurrency)
	}
	return l.Config.Validate()
}

// Run runs the loop until Count runs are done or ctx ends. It fails when
// the collector refuses the agent itself, or when runs failed or were
// refused (with a Count).
func (l *Loop) Run(ctx context.Context) error {
	if err := l.Validate(); err != nil {
		return err
	}
	log := l.Logger
	if log == nil {
		log = slog.Default()
	}
	var (
		started, failed, refused atomic.Int64
		out                      sync.Mutex
		wg                       sync.WaitGroup
		fatal                    = make(chan error, l.Concurrency)
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// take claims the next run; more says whether any is left to claim.
	take := func() bool { return l.Count == 0 || started.Add(1) <= int64(l.Count) }
	more := func() bool { return l.Count == 0 || started.Load() < int64(l.Count) }
	for w := range l.Concurrency {
		wg.Go(func() {
			// Workers start spread over one l.Interval, so that their runs
			// do not all measure the same moments.
			if !sleepCtx(ctx, time.Duration(w)*l.Interval/time.Duration(l.Concurrency)) {
				return
			}
			for take() {
				start := time.Now()
				res, err := l.Config.Run(ctx)
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					failed.Add(1)
					log.Error("run failed", "err", err)
				case l.DryRun:
					msg, err := res.Envelope()
					if err != nil {
						failed.Add(1)
						log.Error("run failed", "err", err)
						break
					}
					out.Lock()
					l.Out.Write(append(msg, '\n'))
					out.Unlock()
				default:
					err := l.Sender.Send(ctx, res)
					if _, ok := errors.AsType[*RefusedError](err); ok {
						refused.Add(1) // Send has logged it
					} else if err == nil {
						log.Info("run delivered", "run", hex.EncodeToString(res.Report.RunID[:]), "took", time.Since(start).Round(time.Millisecond).String())
					} else if ctx.Err() == nil {
						fatal <- err // the collector refuses the agent itself
						cancel()
						return
					}
				}
				if !more() || !sleepCtx(ctx, time.Until(start.Add(l.Interval))) {
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-fatal:
		return err
	default:
	}
	if n := failed.Load() + refused.Load(); n > 0 && l.Count > 0 {
		return fmt.Errorf("agent: %d of %d runs failed or were refused (see the log)", n, l.Count)
	}
	return nil
}

// sleepCtx waits d or until ctx ends, and reports whether it waited d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
