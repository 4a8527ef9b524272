// Command h3rum runs the h3rum collector and its tools: `serve` runs the two
// test origins, the beacon endpoint and the dashboard; `migrate` applies the
// ClickHouse schema; `report` prints regional HTTP/3-vs-HTTP/2 percentiles.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/h3rum/h3rum/collector/internal/cli"
	"github.com/h3rum/h3rum/collector/origin"
)

func main() {
	origin.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

const usage = `usage: h3rum <command> [flags]

commands:
  serve     run the H3 and H2 test origins, the beacon endpoint and the dashboard
  migrate   apply the ClickHouse schema and exit
  check     compare every table filled from samples with samples, hour by hour
  report    print p50…p99 by region × protocol with the H3 − H2 difference
  lab       emulate regions on this machine (root), visit them with Chromium and check the report against them
  agent     run the beacon's test from this machine, with full, resumed and 0-RTT handshakes, and report it
  embed     print the script tag a site embeds, configured by its URL (--pin: this version, with integrity=)
  version   print the version

Run "h3rum <command> -h" for the flags of a command. Every flag can also be
set through the environment: --flush-interval is H3RUM_FLUSH_INTERVAL.
`

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, stdout, stderr)
	case "check":
		return runCheck(ctx, rest, stdout, stderr)
	case "report":
		return runReport(ctx, rest, stdout, stderr)
	case "lab":
		return runLab(ctx, rest, stdout, stderr)
	case "agent":
		return runAgent(ctx, rest, stdout, stderr)
	case "embed":
		return runEmbed(ctx, rest, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "h3rum", version)
		return nil
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprintf(stderr, "h3rum: unknown command %q\n\n%s", cmd, usage)
		return errUsage
	}
}

// errUsage marks a usage error whose message was already printed.
var errUsage = errors.New("usage")

func exitCode(err error, stderr io.Writer) int {
	var ue cli.UsageError
	switch {
	case err == nil, errors.Is(err, cli.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "h3rum:", ue.Msg)
		return 2
	default:
		fmt.Fprintln(stderr, "h3rum:", err)
		return 1
	}
}
