package beacon

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// protocolDoc is PROTOCOL.md, and its tables by the heading above them:
// each table's rows, the header row left out, as trimmed cells.
type protocolDoc struct {
	text   string // with every run of white space one space
	tables map[string][][]string
}

func readProtocol(t *testing.T) protocolDoc {
	t.Helper()
	b, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	d := protocolDoc{text: strings.Join(strings.Fields(string(b)), " "), tables: map[string][][]string{}}
	heading, header := "", false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "#"):
			heading, header = strings.TrimSpace(strings.TrimLeft(line, "#")), true
		case strings.HasPrefix(line, "|---"):
		case strings.HasPrefix(line, "|"):
			if header {
				header = false
				continue
			}
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			d.tables[heading] = append(d.tables[heading], cells)
		}
	}
	return d
}

// table is the table under the heading that starts with prefix.
func (d protocolDoc) table(t *testing.T, prefix string) map[string][]string {
	t.Helper()
	for h, rows := range d.tables {
		if strings.HasPrefix(h, prefix) {
			m := make(map[string][]string, len(rows))
			for _, r := range rows {
				m[strings.Trim(r[0], "`")] = r
			}
			return m
		}
	}
	t.Fatalf("PROTOCOL.md has no table under a heading %q", prefix)
	return nil
}

// spellings are the ways PROTOCOL.md writes n: 16777216, 16,777,216 and
// 16 MiB; 32768, 32,768 and 32 KiB.
func spellings(n int) []string {
	s := []string{strconv.Itoa(n)}
	if n >= 1000 {
		digits, c := strconv.Itoa(n), ""
		for i, r := range digits {
			if i > 0 && (len(digits)-i)%3 == 0 {
				c += ","
			}
			c += string(r)
		}
		s = append(s, c)
	}
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		s = append(s, fmt.Sprintf("%d MiB", n>>20))
	case n >= 1<<10 && n%(1<<10) == 0:
		s = append(s, fmt.Sprintf("%d KiB", n>>10))
	}
	return s
}

// containsRange reports whether s states the range lo to hi in one of the
// spellings of hi.
func containsRange(s string, lo, hi int) bool {
	for _, h := range spellings(hi) {
		if strings.Contains(s, fmt.Sprintf("%d to %s", lo, h)) {
			return true
		}
	}
	return false
}

// protocolConstants are the constants PROTOCOL.md may name in the form
// "20 (`MaxParallel`)"; each such mention must state the value.
var protocolConstants = map[string]int{
	"MaxParallel":      MaxParallel,
	"MaxWarmup":        MaxWarmup,
	"MaxSamples":       MaxSamples,
	"MaxReportBytes":   MaxReportBytes,
	"MaxBytes":         MaxBytes,
	"MaxDurationMS":    MaxDurationMS,
	"MaxMainThread":    MaxMainThread,
	"MaxScriptErrors":  MaxScriptErrors,
	"MaxHandshakes":    MaxHandshakes,
	"RequestTimeoutMS": RequestTimeoutMS,
	"DefaultParallel":  DefaultParallel,
	"DefaultWarmup":    DefaultWarmup,
	"Version":          Version,
}

var namedNumber = regexp.MustCompile("([0-9][0-9,]*)( KiB| MiB)? \\(`([A-Za-z]+)`\\)")

// TestProtocolStatesConstants fails when PROTOCOL.md states a limit,
// default or name other than the package's constant for it.
func TestProtocolStatesConstants(t *testing.T) {
	doc := readProtocol(t)

	t.Run("named", func(t *testing.T) {
		found := 0
		for _, m := range namedNumber.FindAllStringSubmatch(doc.text, -1) {
			v, ok := protocolConstants[m[3]]
			if !ok {
				continue // a benchmark or a test named after a number
			}
			found++
			if !slices.Contains(spellings(v), m[1]+m[2]) {
				t.Errorf("PROTOCOL.md says %q: %s is %d", m[0], m[3], v)
			}
		}
		if found < 5 {
			t.Errorf("PROTOCOL.md names %d constants beside their values; the pattern no longer matches the text", found)
		}
	})

	t.Run("embedding", func(t *testing.T) {
		// The table is written from scriptParamList (go generate): here,
		// that it was, and that the written rows read back as the list.
		b, err := os.ReadFile("PROTOCOL.md")
		if err != nil {
			t.Fatal(err)
		}
		if fresh, err := WriteProtocolTables(string(b)); err != nil {
			t.Fatal(err)
		} else if fresh != string(b) {
			t.Error("PROTOCOL.md's embedding table is not what scriptParamList writes: run go generate ./beacon")
		}
		rows := doc.table(t, "Embedding")
		for _, p := range scriptParamList {
			r, ok := rows[p.Name]
			if !ok {
				t.Errorf("the embedding table has no row for parameter %s", p.Name)
				continue
			}
			delete(rows, p.Name)
			if p.hi == 0 {
				continue
			}
			if r[1] != fmt.Sprintf("`%d`", p.def) {
				t.Errorf("the embedding table gives %s the default %s, want `%d`", p.Name, r[1], p.def)
			}
			if !containsRange(r[2], p.lo, p.hi) {
				t.Errorf("the embedding table's %s: %q, want %d to %v", p.Name, r[2], p.lo, spellings(p.hi))
			}
		}
		for name := range rows {
			t.Errorf("the embedding table has a row for %s, which ScriptParams does not have", name)
		}
		if site := fmt.Sprintf("[A-Za-z0-9._-]{1,%d}", maxSiteLen); strings.Count(doc.text, site) < 2 {
			t.Errorf("PROTOCOL.md gives the site's form other than %s (embedding and report)", site)
		}
	})

	t.Run("par", func(t *testing.T) {
		rows := doc.table(t, "`par`")
		for key, name := range map[string]string{"n": "parallel", "w": "warmup", "b": "bytes"} {
			i := slices.IndexFunc(scriptParamList, func(p ScriptParam) bool { return p.Name == name })
			p := scriptParamList[i]
			if r, ok := rows[key]; !ok || !containsRange(r[2], p.lo, p.hi) {
				t.Errorf("par.%s: %q, want %d to %v", key, r, p.lo, spellings(p.hi))
			}
		}
	})

	t.Run("sv", func(t *testing.T) {
		var names []string
		for h, rows := range doc.tables {
			if strings.HasPrefix(h, "`sv`") {
				for _, r := range rows {
					names = append(names, strings.Trim(r[0], "`"))
				}
			}
		}
		if !slices.Equal(names, ServerTimingMetrics()) {
			t.Errorf("the sv table's keys are %q, want ServerTimingMetrics %q", names, ServerTimingMetrics())
		}
		rows := doc.table(t, "`sv`")
		for _, m := range serverTimingMetrics {
			from := "desc"
			if m.kind == metricDuration {
				from = "dur"
			}
			if want := fmt.Sprintf("`%s;%s=`", m.name, from); rows[m.name] == nil || rows[m.name][1] != want {
				t.Errorf("the sv table's %s comes from %q, want %s", m.name, rows[m.name], want)
			}
		}
	})

	t.Run("prose", func(t *testing.T) {
		s := func(n int) string { return spellings(n)[len(spellings(n))-1] }
		count := fmt.Sprintf("1e%d", len(strconv.Itoa(maxCount))-1) // 1e9
		if f, _ := strconv.ParseFloat(count, 64); int(f) != maxCount {
			count = s(maxCount)
		}
		for _, phrase := range []string{
			fmt.Sprintf("wire format (v%d)", Version),
			fmt.Sprintf("## Wire format v%d", Version),
			fmt.Sprintf("wire-format version: `%d`", Version),
			fmt.Sprintf("aborted after %d s", RequestTimeoutMS/1000),
			fmt.Sprintf("`timeout` (%d s)", RequestTimeoutMS/1000),
			fmt.Sprintf("every duration is at most %s", s(MaxDurationMS)),
			fmt.Sprintf("0 to %s (see below)", s(MaxMainThread)),
			fmt.Sprintf("body over %s", s(MaxReportBytes)),
			fmt.Sprintf("bodies over %s", s(MaxReportBytes)),
			fmt.Sprintf("query over %s", s(maxConfigQuery)),
			fmt.Sprintf("≤ %d bytes", maxOriginLen),
			fmt.Sprintf("≤ %d pairs; brand ≤ %d", maxBrands, maxTextLen),
			fmt.Sprintf("1 to %d printable ASCII, no space", maxTextLen),
			"0 to " + count,
			"1-based, 1 to " + count,
			fmt.Sprintf("`q` unique in `[0, %d)`", MaxHandshakes),
		} {
			if !strings.Contains(doc.text, phrase) {
				t.Errorf("PROTOCOL.md does not say %q", phrase)
			}
		}
	})
}

// The embedding's table says which parameters come back in par.
func TestEmbeddingTableMarksDesignParams(t *testing.T) {
	withDesignParams(t)
	rows := map[string]string{}
	for line := range strings.Lines(embeddingTable()) {
		if cells := strings.Split(line, "|"); len(cells) > 3 {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[3]
		}
	}
	for name, want := range map[string]bool{"zgap": true, "zpause": true, "parallel": false, "bytes": false} {
		if got := strings.Contains(rows[name], "reported in `par` as `"+name+"`"); got != want {
			t.Errorf("the row of %s: %q; marked as reported in par: %v, want %v", name, rows[name], got, want)
		}
	}
}

// TestServerTimingMetricsAreWireKeys ties the metric names to the sample's
// "sv" object: each metric alone in an sv is read by both decoding paths
// into a field of ServerTiming that differs from NoServerTiming's, Encode
// writes it back under its name, and the agent's reading of the header
// (ReadMetric) sets the same field from dur or desc.
func TestServerTimingMetricsAreWireKeys(t *testing.T) {
	for _, m := range serverTimingMetrics {
		t.Run(m.name, func(t *testing.T) {
			var value any
			var header string // the metric's parameter in a Server-Timing entry
			switch m.kind {
			case metricProto:
				value, header = "h3", "h3"
			case metricDuration:
				value, header = 12.5, "12.5"
			case metricCount:
				value, header = 1, "1"
			case metricText:
				value, header = "c9", "c9"
			}
			v := validReport()
			sampleAt(v, 3)["sv"] = map[string]any{m.name: value}
			canonical := marshal(t, v)
			escaped := []byte(strings.Replace(string(canonical), `"site":"shop"`, `"site":"\u0073hop"`, 1))
			if _, fast := fastDecode(canonical, arenas.Get().(*arena)); !fast {
				t.Error("the canonical report took the general path")
			}
			var read []ServerTiming
			for _, b := range [][]byte{canonical, escaped} {
				r, err := Decode(b)
				if err != nil {
					t.Fatal(err)
				}
				read = append(read, r.Samples[3].Server)
			}
			st := read[0]
			if read[1] != st {
				t.Errorf("the two paths read %+v and %+v", st, read[1])
			}
			none := NoServerTiming()
			none.Present = true
			if st == none {
				t.Fatalf("%s=%v left every field unsent: %+v", m.name, value, st)
			}
			b, err := appendServer(nil, &st)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"`+m.name+`":`) {
				t.Errorf("Encode leaves out %s: %s", m.name, b)
			}
			agent := NoServerTiming()
			agent.Present = true
			dur, desc := &header, &header
			if m.kind == metricDuration {
				desc = nil
			} else {
				dur = nil
			}
			if !agent.ReadMetric(m.name, dur, desc) || agent != st {
				t.Errorf("ReadMetric(%s) gave %+v, want %+v", m.name, agent, st)
			}
		})
	}
}

var buildIdent = regexp.MustCompile(`__H3RUM_[A-Z0-9_]*__`)

// TestScriptDefine checks the sources against the build's constants: each
// one they use has a value, none retypes a metric name, and the integer
// parameters have the ranges the script's reading of them assumes.
func TestScriptDefine(t *testing.T) {
	define := ScriptDefine()
	used := 0
	for _, f := range []string{"src/core.js", "src/h3rum.js"} {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range buildIdent.FindAllString(string(src), -1) {
			used++
			if _, ok := define[id]; !ok {
				t.Errorf("%s uses %s, which ScriptDefine has no value for", f, id)
			}
		}
		for _, name := range ServerTimingMetrics() {
			if strings.Contains(string(src), "'"+name+"'") || strings.Contains(string(src), `"`+name+`"`) {
				t.Errorf("%s spells the metric %q: use __H3RUM_SV_%s__", f, name, strings.ToUpper(name))
			}
		}
	}
	if used == 0 {
		t.Error("the sources use none of ScriptDefine's identifiers")
	}
	// core.js num reads an integer from 0 to hi; parallel's "|| default"
	// makes its 0 the default, so its range starts at 1.
	for _, p := range scriptParamList {
		if p.hi == 0 {
			continue
		}
		if want := map[bool]int{true: 1, false: 0}[p.Name == "parallel"]; p.lo != want || p.def < p.lo || p.def > p.hi {
			t.Errorf("parameter %s: %d to %d, default %d; the script reads it from %d", p.Name, p.lo, p.hi, p.def, want)
		}
	}
	if most, _ := strconv.Atoi(strings.Repeat("9", MaxCountDigits)); most > maxCount {
		t.Errorf("MaxCountDigits %d reads counts above maxCount %d", MaxCountDigits, maxCount)
	}
	if v, ok := define["__H3RUM_BYTES_MAX_BITS__"]; !ok || v != strconv.Itoa(len(strconv.FormatInt(MaxBytes, 2))-1) {
		t.Errorf("__H3RUM_BYTES_MAX_BITS__ is %q for MaxBytes %d", v, MaxBytes)
	}
	for k, v := range define {
		if !buildIdent.MatchString(k) || v == "" {
			t.Errorf("define %s = %q", k, v)
		}
	}
}
