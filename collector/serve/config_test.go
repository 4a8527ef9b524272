package serve

import (
	"reflect"
	"slices"
	"testing"

	"github.com/h3rum/h3rum/collector/origin"
	"github.com/h3rum/h3rum/ingest"
	"github.com/h3rum/h3rum/ingest/access"
	"github.com/h3rum/h3rum/ingest/store"
	"github.com/h3rum/h3rum/queries/api"
)

// A setting has one home, the package that uses it; Config holds those
// packages' types and never re-declares their fields, so a zero means the
// same on both sides and nothing is copied.
func TestConfigDeclaresNoPackageSetting(t *testing.T) {
	owners := []reflect.Type{
		reflect.TypeFor[origin.Server](), reflect.TypeFor[origin.NEL](),
		reflect.TypeFor[ingest.Handler](), reflect.TypeFor[ingest.Pipeline](),
		reflect.TypeFor[api.Handler](), reflect.TypeFor[access.Clients](),
		reflect.TypeFor[store.Options](),
	}
	// Fields that share a name with a package's but are not settings.
	notSettings := map[string]string{
		"Logger": "the process's one log, handed to every part",
		"Ready":  "serve's start-up hook for tests, unlike Pipeline.Ready, a store-ready signal",
	}
	// What only serve decides. A new entry needs a reason no package can
	// own it; a setting a package uses belongs in that package's type.
	own := map[string]bool{"GeoIPDB": true, "ASNDB": true, "Role": true, "IngestURL": true}
	cfg := reflect.TypeFor[Config]()
	for i := range cfg.NumField() {
		f := cfg.Field(i)
		if !f.IsExported() {
			continue
		}
		if _, ok := notSettings[f.Name]; !ok {
			for _, o := range owners {
				if _, dup := o.FieldByName(f.Name); dup {
					t.Errorf("Config.%s re-declares %s.%s: embed or use the package's field", f.Name, o, f.Name)
				}
			}
		}
		switch k := f.Type.Kind(); {
		case k == reflect.Struct && slices.Contains(owners, f.Type):
		case k == reflect.Func || k == reflect.Interface || k == reflect.Pointer:
			// Dependencies and hooks (Logger, Stdout, Ready), not settings.
		case !own[f.Name]:
			t.Errorf("Config.%s (%s) is a setting serve declares itself; it belongs to the package that uses it", f.Name, f.Type)
		}
	}
}
