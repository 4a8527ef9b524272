package cli

import "testing"

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
