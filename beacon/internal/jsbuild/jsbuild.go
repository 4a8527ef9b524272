// Package jsbuild bundles and minifies the beacon's JavaScript with esbuild
// and precompresses it, for go generate and for the staleness test.
package jsbuild

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
	"github.com/h3rum/h3rum/beacon/internal/precompress"
)

// Output is the built script and its precompressed forms.
type Output struct {
	JS, Gzip, Brotli []byte
}

// Files maps the names written into dist/ to their contents.
func (o Output) Files() map[string][]byte {
	return map[string][]byte{
		"h3rum.js":    o.JS,
		"h3rum.js.gz": o.Gzip,
		"h3rum.js.br": o.Brotli,
	}
}

// CompileHint is the built script's first line: V8's explicit compile hint
// (Chrome 136+; other engines ignore the comment). V8 then compiles every
// function while the script streams in, off the main thread, instead of
// each one on the main thread at its first call. A sampled visit calls
// nearly all of them, so this takes main-thread time off the page
// (BenchmarkE2EMainThreadCPU measures it).
const CompileHint = "//# allFunctionsCalledOnLoad\n"

// buildConstant matches an identifier of the form the build replaces
// (beacon.ScriptDefine), left over in the output when define lacks it.
var buildConstant = regexp.MustCompile(`__H3RUM_[A-Z0-9_]*__`)

// Build bundles entry (src/h3rum.js and what it imports) into one minified
// IIFE after CompileHint, with each identifier of define replaced by its
// value, a JSON literal (beacon.ScriptDefine). The result depends only on
// the sources, define and the esbuild version.
//
// Each source is read through esbuild's define on its own first and only
// then bundled and minified, so that the minifier sees the values as if
// typed there. Defined while bundling, they would cost bytes: the minifier
// picks short names by the characters of the source, the identifiers' own
// letters among them, and an object value would become a module of its
// own, its variable a statement apart.
func Build(entry string, define map[string]string) (Output, error) {
	res := api.Build(api.BuildOptions{
		Banner:            map[string]string{"js": strings.TrimSuffix(CompileHint, "\n")},
		EntryPoints:       []string{entry},
		Bundle:            true,
		Format:            api.FormatIIFE,
		Target:            api.ES2020,
		Platform:          api.PlatformBrowser,
		MinifyWhitespace:  true,
		MinifyIdentifiers: true,
		MinifySyntax:      true,
		LegalComments:     api.LegalCommentsNone,
		Charset:           api.CharsetUTF8,
		Write:             false,
		LogLevel:          api.LogLevelSilent,
		Plugins:           []api.Plugin{definePlugin(define)},
	})
	if len(res.Errors) > 0 {
		return Output{}, fmt.Errorf("bundling %s: %s", entry, messages(res.Errors))
	}
	if len(res.OutputFiles) != 1 {
		return Output{}, fmt.Errorf("bundling %s: got %d output files, want 1", entry, len(res.OutputFiles))
	}
	out := Output{JS: res.OutputFiles[0].Contents}
	// An identifier define lacks would be a global the page does not have.
	if left := buildConstant.FindAll(out.JS, -1); len(left) > 0 {
		return Output{}, fmt.Errorf("bundling %s: no value for %s", entry, left[0])
	}
	var err error
	if out.Gzip, err = precompress.Gzip(out.JS); err != nil {
		return Output{}, err
	}
	if out.Brotli, err = precompress.Brotli(out.JS); err != nil {
		return Output{}, err
	}
	return out, nil
}

// definePlugin loads each JavaScript source with define applied and
// nothing else changed (module syntax, names and layout are left to the
// bundling).
func definePlugin(define map[string]string) api.Plugin {
	return api.Plugin{
		Name: "define",
		Setup: func(b api.PluginBuild) {
			b.OnLoad(api.OnLoadOptions{Filter: `\.js$`, Namespace: "file"}, func(args api.OnLoadArgs) (api.OnLoadResult, error) {
				src, err := os.ReadFile(args.Path)
				if err != nil {
					return api.OnLoadResult{}, fmt.Errorf("reading %s: %w", args.Path, err)
				}
				res := api.Transform(string(src), api.TransformOptions{
					Define:     define,
					Loader:     api.LoaderJS,
					Target:     api.ESNext,
					Sourcefile: args.Path,
					LogLevel:   api.LogLevelSilent,
				})
				if len(res.Errors) > 0 {
					return api.OnLoadResult{Errors: res.Errors}, nil
				}
				js := string(res.Code)
				return api.OnLoadResult{Contents: &js, Loader: api.LoaderJS, ResolveDir: filepath.Dir(args.Path)}, nil
			})
		},
	}
}

func messages(ms []api.Message) string {
	s := make([]string, 0, len(ms))
	for _, m := range ms {
		t := m.Text
		if m.Location != nil {
			t = fmt.Sprintf("%s:%d:%d: %s", m.Location.File, m.Location.Line, m.Location.Column, m.Text)
		}
		s = append(s, t)
	}
	return strings.Join(s, "; ")
}

// Write builds entry and writes the output files into dir.
func Write(entry, dir string, define map[string]string) (Output, error) {
	out, err := Build(entry, define)
	if err != nil {
		return out, err
	}
	for name, b := range out.Files() {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return out, fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return out, nil
}
