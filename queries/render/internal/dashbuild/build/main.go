// Command build writes queries/render/assets/dashboard.js and
// dashboard.css from queries/render/web; run it with `go generate
// ./queries/render` from the module root, after `npm ci` in
// queries/render/web.
package main

import (
	"fmt"
	"os"

	"github.com/h3rum/h3rum/queries/render/internal/dashbuild"
)

func main() {
	// go generate runs in the package directory (queries/render/).
	out, err := dashbuild.Write("web", "assets")
	if err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	for _, f := range []struct {
		name string
		b    []byte
	}{{"assets/dashboard.js", out.JS}, {"assets/dashboard.css", out.CSS}} {
		fmt.Printf("%s: %d bytes, gzip %d\n", f.name, len(f.b), dashbuild.GzipSize(f.b))
	}
}
