// Package cli is the command line's plumbing that h3rum's commands share:
// flags filled from H3RUM_* environment variables, usage errors (exit
// status 2) and the logging flags.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// ErrHelp marks a -h whose flag list was printed: exit status 0.
var ErrHelp = errors.New("help")

// UsageError is a bad flag or argument: one line, exit status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef formats a UsageError.
func Usagef(format string, a ...any) error { return UsageError{Msg: fmt.Sprintf(format, a...)} }

// Parse parses args into fs, then fills every flag not given on the
// command line from its H3RUM_* environment variable. Problems come back as
// usage errors (exit 2) naming the flag or variable.
func Parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	// Parse quietly: a bad flag is one line (below), -h the full list.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return ErrHelp
		}
		return Usagef("%s: %v (h3rum %s -h lists the flags)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return Usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := EnvName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = Usagef("%s=%q: %v", env, v, e)
			}
		}
	})
	return err
}

// OnCommandLine reports whether args set the flag name ("-name",
// "--name", "--name=…"), not from the environment.
func OnCommandLine(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// EnvName is the environment variable that fills the flag flagName.
func EnvName(flagName string) string {
	return "H3RUM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// List is a flag holding a comma-separated list.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }
func (l *List) Set(v string) error {
	*l = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// Seconds is a flag holding a time.Duration written as whole seconds, for
// settings the web writes in seconds (Alt-Svc's ma=, NEL's max_age). Name
// the unit in the usage as `seconds` so that -h shows it.
type Seconds time.Duration

func (s *Seconds) String() string { return strconv.FormatInt(int64(time.Duration(*s)/time.Second), 10) }
func (s *Seconds) Set(v string) error {
	d, err := wholeUnits(v, time.Second)
	*s = Seconds(d)
	return err
}

// Days is a flag holding a time.Duration written as whole days. Name the
// unit in the usage as `days` so that -h shows it.
type Days time.Duration

func (d *Days) String() string { return strconv.FormatInt(int64(time.Duration(*d)/(24*time.Hour)), 10) }
func (d *Days) Set(v string) error {
	t, err := wholeUnits(v, 24*time.Hour)
	*d = Days(t)
	return err
}

// wholeUnits parses an integer count of unit, as flag.Int would.
func wholeUnits(v string, unit time.Duration) (time.Duration, error) {
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		return 0, errors.New("parse error")
	}
	if n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
		return 0, errors.New("value out of range")
	}
	return time.Duration(n) * unit, nil
}

// LogFlags are the logging flags every command shares.
type LogFlags struct {
	format, level string
}

// Register adds the flags to fs.
func (l *LogFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
}

// Logger is the logger the flags ask for, writing to w.
func (l *LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(l.level)); err != nil {
		return nil, Usagef("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, Usagef("--log-format %q: want text or json", l.format)
	}
}
