// Command build writes queries/assets/dashboard.js and dashboard.css from
// queries/web; run it with `go generate ./queries` from the module root,
// after `npm ci` in queries/web.
package main

import (
	"fmt"
	"os"

	"github.com/h3rum/h3rum/queries/internal/dashbuild"
)

func main() {
	// go generate runs in the package directory (queries/).
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
