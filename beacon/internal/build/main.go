// Command build writes beacon/dist from beacon/src, and PROTOCOL.md's
// tables that follow the package's definitions; run it with
// `go generate ./beacon` from the module root.
package main

import (
	"fmt"
	"os"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/internal/jsbuild"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
}

func run() error {
	// go generate runs in the package directory (beacon/).
	out, err := jsbuild.Write("src/h3rum.js", "dist", beacon.ScriptDefine())
	if err != nil {
		return err
	}
	fmt.Printf("dist/h3rum.js: %d bytes, gzip %d, brotli %d\n", len(out.JS), len(out.Gzip), len(out.Brotli))
	doc, err := os.ReadFile("PROTOCOL.md")
	if err != nil {
		return fmt.Errorf("reading PROTOCOL.md: %w", err)
	}
	tables, err := beacon.WriteProtocolTables(string(doc))
	if err != nil {
		return err
	}
	if tables != string(doc) {
		if err := os.WriteFile("PROTOCOL.md", []byte(tables), 0o644); err != nil {
			return fmt.Errorf("writing PROTOCOL.md: %w", err)
		}
		fmt.Println("PROTOCOL.md: tables written")
	}
	return nil
}
