package sqltext

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		sql  string
		want string // "" for accepted, else a word of the error
	}{
		{"SELECT 1 FROM t WHERE a = @a", ""},
		{"SELECT '?' AS q, 'it''s ?' FROM t -- is it ?", ""},
		{"SELECT 'a\\'?' FROM t", ""},
		{"SELECT 1 FROM t WHERE a = ?", "position"},
		{"SELECT 1 FROM t WHERE a = '' OR b = ?", "position"},
		{"SELECT /*GROUP*/ FROM t", "marker"},
		{"SELECT 1 -- /*GROUP*/ in a comment\nFROM t", ""},
		{"SELECT 1 /* a lower-case comment */ FROM t", ""},
	} {
		err := Check("q.sql", c.sql)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v, want accepted", c.sql, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: %v, want an error about the %s", c.sql, err, c.want)
		}
	}
}

func TestParseAndRender(t *testing.T) {
	fsys := fstest.MapFS{
		"q/blocks.sql": {Data: []byte(`{{define "where"}}WHERE a = @a{{if .B}} AND b = @b{{end}}{{end}}`)},
		"q/one.sql":    {Data: []byte("SELECT x FROM t {{template \"where\" .}};\n")},
	}
	set, err := Parse(fsys, "q/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for b, want := range map[bool]string{false: "SELECT x FROM t WHERE a = @a", true: "SELECT x FROM t WHERE a = @a AND b = @b"} {
		got, err := Render(set, "q/one.sql", struct{ B bool }{b})
		if err != nil || got != want {
			t.Errorf("B=%v: %q, %v; want %q", b, got, err, want)
		}
	}
	if _, err := Render(set, "q/one.sql", struct{}{}); err == nil {
		t.Error("a field the data lacks rendered without an error")
	}
	if _, err := Parse(fstest.MapFS{"q/bad.sql": {Data: []byte("SELECT ? FROM t")}}, "q/*.sql"); err == nil {
		t.Error("a file binding by position parsed")
	}
}
