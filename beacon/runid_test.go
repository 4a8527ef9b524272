package beacon

import (
	"encoding/hex"
	"testing"
)

// Run ids of every script ever shipped decode: scripts before 1.3.0 drew
// each of the 32 hex digits from Math.random, later ones take 16 bytes from
// crypto.getRandomValues. Both are 32 lower-case hex digits with no
// structure (no version or variant bits), and cached copies of the old
// script keep sending theirs for months, so the decoder must never start
// checking for more than that.
func TestDecodeRunIDsOfEveryScript(t *testing.T) {
	for _, tt := range []struct{ name, id string }{
		{"Math.random (1.2.0 and before)", "af0f662e3934a2fa50c44d6e2bc6a885"},
		{"Math.random (1.2.0 and before)", "53facfb802ab5a1cd5815bb8e8f7b9a8"},
		{"PROTOCOL.md's example", "e8491c92aa73d993d142620d29c73bc1"},
		{"getRandomValues (1.3.0)", "00010f107f80feff000000000a0b0c0d"},
		{"all zero bytes", "00000000000000000000000000000000"},
		{"all one bits", "ffffffffffffffffffffffffffffffff"},
		{"not a UUID version 4", "0123456789abcdef0123456789abcdef"},
	} {
		r := validReport()
		r["id"] = tt.id
		got, err := Decode(marshal(t, r))
		if err != nil {
			t.Errorf("%s: id %s: %v", tt.name, tt.id, err)
			continue
		}
		if hex.EncodeToString(got.RunID[:]) != tt.id {
			t.Errorf("%s: id %s decoded as %x", tt.name, tt.id, got.RunID)
		}
	}
}
