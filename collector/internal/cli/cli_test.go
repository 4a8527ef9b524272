package cli

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// OnCommandLine finds a flag however it is spelled, and only as a flag.
func TestOnCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--report-token", "x"}, true},
		{[]string{"-report-token=x"}, true},
		{[]string{"--addr", "localhost:0", "--report-token=x"}, true},
		{[]string{"--report-token-file", "/etc/h3rum/report-token"}, false},
		{[]string{"--agent-token", "x"}, false},
		{[]string{"--", "--report-token"}, false},
		{nil, false},
	} {
		if got := OnCommandLine(tc.args, "report-token"); got != tc.want {
			t.Errorf("OnCommandLine(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

// Seconds and Days read and print whole units, and -h names the unit the
// usage back-quotes.
func TestUnitFlags(t *testing.T) {
	var secs, days time.Duration
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var((*Seconds)(&secs), "max-age", "ma= in `seconds`")
	fs.Var((*Days)(&days), "retention", "`days` to keep")
	if err := fs.Parse([]string{"--max-age", "86400", "--retention", "7"}); err != nil {
		t.Fatal(err)
	}
	if secs != 24*time.Hour || days != 7*24*time.Hour {
		t.Errorf("max age %v, retention %v; want 24h and 168h", secs, days)
	}
	if s := fs.Lookup("max-age").Value.String(); s != "86400" {
		t.Errorf("max age prints %q, want 86400", s)
	}
	for _, bad := range []string{"1.5", "1h", "99999999999999999"} {
		if err := fs.Set("retention", bad); err == nil {
			t.Errorf("--retention %s accepted", bad)
		}
	}
	var help strings.Builder
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if !strings.Contains(help.String(), "-max-age seconds") || !strings.Contains(help.String(), "-retention days") {
		t.Errorf("-h:\n%s\nwant the units as the flags' types", help.String())
	}
}
