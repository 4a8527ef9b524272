// Package dashbuild bundles the dashboard's script and style sheet, with
// the npm libraries they import, into queries/render/assets with esbuild,
// for go generate and for the staleness test.
package dashbuild

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Output is the built script and style sheet.
type Output struct {
	JS, CSS []byte
}

// Banner opens both built files: they are generated, and from where.
const Banner = "/* Built from queries/render/web by go generate ./queries/render; edit the sources there. */"

// ErrNoModules is returned when web's npm packages are not installed.
var ErrNoModules = errors.New("the dashboard's npm packages are not installed")

// Build bundles web/src/dashboard.js and web/src/dashboard.css (and what
// they import from web/node_modules, installed by npm ci from
// web/package-lock.json). The result depends only on the sources, the
// locked packages and the esbuild version.
func Build(web string) (Output, error) {
	if _, err := os.Stat(filepath.Join(web, "node_modules", ".package-lock.json")); errors.Is(err, fs.ErrNotExist) {
		return Output{}, fmt.Errorf("%w: run npm ci in %s", ErrNoModules, web)
	}
	var out Output
	for _, f := range []struct {
		entry string
		dst   *[]byte
	}{{"src/dashboard.js", &out.JS}, {"src/dashboard.css", &out.CSS}} {
		b, err := bundle(web, f.entry)
		if err != nil {
			return Output{}, err
		}
		*f.dst = b
	}
	return out, nil
}

func bundle(web, entry string) ([]byte, error) {
	res := api.Build(api.BuildOptions{
		AbsWorkingDir: mustAbs(web),
		// The modules are strict already; the directive says so in the built
		// script too, for the whole file.
		Banner:            map[string]string{"js": Banner + "\n\"use strict\";", "css": Banner},
		EntryPoints:       []string{entry},
		Bundle:            true,
		Format:            api.FormatIIFE,
		Target:            api.ES2020,
		Engines:           []api.Engine{{Name: api.EngineChrome, Version: "100"}, {Name: api.EngineFirefox, Version: "100"}, {Name: api.EngineSafari, Version: "15"}},
		Platform:          api.PlatformBrowser,
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		// The libraries' licences stay, at the end of the file.
		LegalComments: api.LegalCommentsEndOfFile,
		Charset:       api.CharsetUTF8,
		Write:         false,
		LogLevel:      api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		msgs := make([]string, 0, len(res.Errors))
		for _, m := range res.Errors {
			s := m.Text
			if m.Location != nil {
				s = fmt.Sprintf("%s:%d:%d: %s", m.Location.File, m.Location.Line, m.Location.Column, m.Text)
			}
			msgs = append(msgs, s)
		}
		return nil, fmt.Errorf("bundling %s: %s", entry, strings.Join(msgs, "; "))
	}
	if len(res.OutputFiles) != 1 {
		return nil, fmt.Errorf("bundling %s: got %d output files, want 1", entry, len(res.OutputFiles))
	}
	return res.OutputFiles[0].Contents, nil
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// Write builds web and writes dashboard.js and dashboard.css into dir.
func Write(web, dir string) (Output, error) {
	out, err := Build(web)
	if err != nil {
		return out, err
	}
	for name, b := range map[string][]byte{"dashboard.js": out.JS, "dashboard.css": out.CSS} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return out, fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return out, nil
}

// GzipSize is the size of b gzipped at the best level, as budgets count it.
func GzipSize(b []byte) int {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	return buf.Len()
}
