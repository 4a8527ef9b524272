package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"strings"
)

// parseFlags parses args into fs, then fills every flag not given on the
// command line from its H3RUM_* environment variable. Problems come back as
// usage errors (exit 2) naming the flag or variable.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	// Parse quietly: a bad flag is one line (below), -h the full list.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return errHelp
		}
		return usagef("%s: %v (h3rum %s -h lists the flags)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = usagef("%s=%q: %v", env, v, e)
			}
		}
	})
	return err
}

// onCommandLine reports whether args set the flag name ("-name",
// "--name", "--name=…"), not from the environment.
func onCommandLine(args []string, name string) bool {
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

func envName(flagName string) string {
	return "H3RUM_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// listFlag is a comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = nil
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// logFlags are the logging flags every command shares.
type logFlags struct {
	format, level string
}

func (l *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.format, "log-format", "text", "log format: text or json")
	fs.StringVar(&l.level, "log-level", "info", "log level: debug, info, warn or error")
}

func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usagef("--log-level %q: want debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch l.format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, usagef("--log-format %q: want text or json", l.format)
	}
}
