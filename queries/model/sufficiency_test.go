package model

import (
	"errors"
	"strings"
	"testing"
)

// The run cap holds what p99 needs twice over (Options.MaxRunsPerGroup
// says why); a cap below p99's need is refused.
func TestRunCap(t *testing.T) {
	if minRunCap() != 1500 || DefaultMaxRunsPerGroup != 2*minRunCap() {
		t.Errorf("cap: minimum %d, default %d; want 1500 and twice that", minRunCap(), DefaultMaxRunsPerGroup)
	}
	for _, tc := range []struct {
		cap int
		ok  bool
	}{{minRunCap() - 1, false}, {2, false}, {minRunCap(), true}, {0, true}} {
		o := Options{MaxRunsPerGroup: tc.cap}
		err := o.Validate()
		if (err == nil) != tc.ok || (err != nil && (!errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "p99 1500 runs"))) {
			t.Errorf("MaxRunsPerGroup %d: err = %v, want ok %v", tc.cap, err, tc.ok)
		}
	}
}
