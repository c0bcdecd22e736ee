package registry_test

import (
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/registry"
)

type fakeOptions struct {
	registry.ServerOptions `yaml:",inline"`
	Level                  int `yaml:"level" default:"3"`
}

// TestRegister: an API registers once, is known to spec checks with its
// options, and builds with the endpoint's options, its declared defaults
// filling those left out.
// registerFake registers the fake API once per test binary: Register
// panics on a name registered twice, as it should for two real APIs, and
// -count=N runs the test N times.
// got is what the fake's New was last given.
var (
	registerFake sync.Once
	got          fakeOptions
)

func TestRegister(t *testing.T) {
	registerFake.Do(func() {
		registry.Register(registry.API[fakeOptions]{Name: "fake", NeedsURLs: true,
			New: func(srv pool.Server, o *fakeOptions) (*registry.Client, error) {
				got = *o
				return &registry.Client{Identity: "fake|" + srv.Model}, nil
			}})
	})
	if a, ok := specs.LookupAPI("fake"); !ok || !a.NeedsURLs {
		t.Fatalf("specs.LookupAPI(fake) = %+v, %t; want it, needing URLs", a, ok)
	}
	for _, tc := range []struct {
		name, endpoint, wantErr string
		want                    int
		wantThink               string
	}{
		{"defaults", "{api: fake, urls: [http://h]}", "", 3, "<think>"},
		{"set", "{api: fake, urls: [http://h], options: {level: 5, think_start: <t>}}", "", 5, "<t>"},
		{"misspelt", "{api: fake, urls: [http://h], options: {levle: 5}}", `unknown key "levle" (did you mean "level"?)`, 0, ""},
		{"misspelt shared", "{api: fake, urls: [http://h], options: {think_strat: x}}", `unknown key "think_strat" (did you mean "think_start"?)`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := specs.Parse("spec.yaml", []byte("version: 1\nname: r\nendpoints: {e: "+tc.endpoint+"}\n"), func(string) (string, bool) { return "", false })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse: err = %v; want %s", err, tc.wantErr)
				}
				return
			}
			if spec == nil {
				t.Fatalf("Parse: %v", err)
			}
			got = fakeOptions{}
			c, err := registry.New(spec, spec.Endpoint("e"), pool.Server{Model: "m"})
			if err != nil || c.Identity != "fake|m" || got.Level != tc.want || got.ThinkStart != tc.wantThink {
				t.Errorf("New = %+v, %v with level %d, think_start %q; want fake|m with level %d, think_start %q",
					c, err, got.Level, got.ThinkStart, tc.want, tc.wantThink)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("a second Register of fake did not panic")
		}
	}()
	registry.Register(registry.API[fakeOptions]{Name: "fake", New: func(pool.Server, *fakeOptions) (*registry.Client, error) { return nil, nil }})
}

// TestServerOptions_ThinkDefaults keeps the think_start and think_end
// defaults, which a tag must spell out, equal to conv's tags.
func TestServerOptions_ThinkDefaults(t *testing.T) {
	f, _ := reflect.TypeFor[registry.ServerOptions]().FieldByName("ThinkStart")
	g, _ := reflect.TypeFor[registry.ServerOptions]().FieldByName("ThinkEnd")
	if f.Tag.Get("default") != conv.ThinkStart || g.Tag.Get("default") != conv.ThinkEnd {
		t.Errorf("think_start/think_end default to %q/%q, want conv's %q/%q", f.Tag.Get("default"), g.Tag.Get("default"), conv.ThinkStart, conv.ThinkEnd)
	}
}
