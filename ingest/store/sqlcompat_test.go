package store_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The tests run every statement on ClickHouse 18.16; deployments run 24.x.
// This check keeps the shipped SQL (ingest/store/ and queries/) inside what both
// versions accept, by rejecting constructs one of them lacks or reads
// differently (see the project's ClickHouse notes).
var notPortable = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`(?i)\bTTL\b`), "TTL is not on 18.16: retention drops partitions"},
	{regexp.MustCompile(`(?i)\bCODEC\s*\(`), "column codecs are not on 18.16"},
	{regexp.MustCompile(`(?i)\bLowCardinality\b`), "LowCardinality needs an experimental setting on 18.16"},
	{regexp.MustCompile(`(?i)\b(DateTime64|now64|Date32|SimpleAggregateFunction|IPv4|IPv6|Bool)\b`), "type not on 18.16"},
	{regexp.MustCompile(`(?i)\bMap\s*\(|\bJSON\b`), "Map/JSON types are not on 18.16"},
	{regexp.MustCompile(`(?i)\bOVER\s*\(`), "window functions are not on 18.16"},
	{regexp.MustCompile(`(?i)\bWITH\s+\w+\s+AS\s*\(`), "WITH name AS (SELECT …) CTEs are not on 18.16"},
	{regexp.MustCompile(`(?i)\bUNION\s+DISTINCT\b|\bWITH\s+FILL\b|\bSYNC\b`), "not on 18.16"},
	{regexp.MustCompile(`(?i)^\s*DELETE\b|\bDELETE\s+FROM\b`), "lightweight DELETE is not on 18.16"},
	{regexp.MustCompile(`(?i)\b(quantileBFloat16|quantileDD|toStartOfInterval)\w*\s*\(`), "function not on 18.16"},
	{regexp.MustCompile(`(?i)\b(GROUP|ORDER)\s+BY\s+\d`), "GROUP/ORDER BY <number> is a constant on 18.16, a position on 24.x"},
	{regexp.MustCompile(`\{\w+\s*:\s*\w+`), "{name:Type} query parameters are not on 18.16: bind with ?"},
	{regexp.MustCompile(`(?i)\bIN\s*\?`), "binding a slice to IN ? fails on 18.16: use has(?, col)"},
	{regexp.MustCompile(`(?i)\bINDEX\s+\w+\s+.*\bTYPE\b`), "skip indexes are not on 18.16"},
}

var sqlComment = regexp.MustCompile(`(?m)--.*$`)
var aliasRe = regexp.MustCompile(`(?i)\bAS\s+([A-Za-z_]\w*)`)

// fromRe finds the tables a statement reads, by name or, in the schema's
// templates, as {{.Local "samples"}} or {{.Name "samples"}}.
var fromRe = regexp.MustCompile(`(?i)\b(?:FROM|JOIN)\s+(?:\{\{\.(?:Local|Name) ")?(\w+)`)
var columnRe = regexp.MustCompile(`(?m)^\s+([a-z_][a-z0-9_]*)\s+[A-Z]\w*`)

func TestSQLIsPortable(t *testing.T) {
	// Columns of the tables: an alias that repeats one is resolved
	// differently by 18.16 and current versions.
	columns := map[string]map[string]bool{} // table → columns
	for table, f := range map[string]string{"samples": "schema/samples.sql", "samples_rollup": "schema/samples_rollup.sql"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		columns[table] = map[string]bool{}
		for _, m := range columnRe.FindAllStringSubmatch(string(b), -1) {
			columns[table][m[1]] = true
		}
	}
	if !columns["samples"]["duration_ms"] || !columns["samples_rollup"]["duration"] {
		t.Fatalf("column lists not parsed from the schema: %v", columns)
	}
	var files int
	for _, root := range []string{".", "../../queries"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sql") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			sql := sqlComment.ReplaceAllString(string(b), "")
			for _, rule := range notPortable {
				if loc := rule.re.FindString(sql); loc != "" {
					t.Errorf("%s: %q: %s", path, loc, rule.why)
				}
			}
			if (strings.Contains(path, "migrations") || strings.Contains(path, "schema") || strings.Contains(path, "cluster")) && strings.Contains(sql, "CREATE TABLE") {
				return nil // column definitions, not aliases
			}
			// An alias may not repeat a column of a table the statement reads.
			read := map[string]bool{}
			for _, m := range fromRe.FindAllStringSubmatch(sql, -1) {
				for c := range columns[m[1]] {
					read[c] = true
				}
			}
			for _, m := range aliasRe.FindAllStringSubmatch(sql, -1) {
				if read[m[1]] {
					t.Errorf("%s: alias %q repeats a column name; 18.16 and 24.x resolve it differently", path, m[1])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 5 {
		t.Fatalf("checked only %d .sql files", files)
	}
}
