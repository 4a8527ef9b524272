// Command build writes beacon/dist from beacon/src; run it with
// `go generate ./beacon` from the module root.
package main

import (
	"fmt"
	"os"

	"github.com/h3rum/h3rum/beacon"
	"github.com/h3rum/h3rum/beacon/internal/jsbuild"
)

func main() {
	// go generate runs in the package directory (beacon/).
	out, err := jsbuild.Write("src/h3rum.js", "dist", beacon.ScriptDefine())
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	fmt.Printf("dist/h3rum.js: %d bytes, gzip %d, brotli %d\n", len(out.JS), len(out.Gzip), len(out.Brotli))
}
