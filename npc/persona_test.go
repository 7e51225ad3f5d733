package npc

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestPersonaEngineValidate(t *testing.T) {
	base := Persona{ID: "grimjaw", Name: "Grimjaw"}
	for _, tc := range []struct {
		name    string
		edit    func(*Persona)
		wantErr string // substring naming the problem; empty for valid
	}{
		{"default engine", func(*Persona) {}, ""},
		{"cascaded", func(p *Persona) { p.Engine = EngineCascaded }, ""},
		{"s2s with model and voice", func(p *Persona) { p.Engine = EngineS2S; p.S2S = S2S{Model: "gpt-realtime", Voice: "marin"} }, ""},
		{"s2s with defaults", func(p *Persona) { p.Engine = EngineS2S }, ""},
		{"cascaded keeps unused s2s settings", func(p *Persona) { p.Engine = EngineCascaded; p.S2S.Voice = "ash" }, ""},
		{"unknown engine", func(p *Persona) { p.Engine = "speech2speech" }, `engine "speech2speech" must be "cascaded" or "s2s"`},
		{"upper-case engine", func(p *Persona) { p.Engine = "S2S" }, `engine "S2S"`},
		{"model with a space", func(p *Persona) { p.Engine = EngineS2S; p.S2S.Model = "gpt realtime" }, `s2s.model "gpt realtime"`},
		{"model with a query", func(p *Persona) { p.S2S.Model = "gpt-realtime&x=1" }, `s2s.model`},
		{"voice with a slash", func(p *Persona) { p.Engine = EngineS2S; p.S2S.Voice = "../marin" }, `s2s.voice "../marin"`},
		{"voice too long", func(p *Persona) { p.S2S.Voice = strings.Repeat("a", 101) }, `s2s.voice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			tc.edit(&p)
			err := p.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Validate() = nil, want an error naming %s", tc.wantErr)
			case tc.wantErr != "" && (!errors.Is(err, ErrInvalidPersona) || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "grimjaw")):
				t.Fatalf("Validate() = %v, want ErrInvalidPersona naming the NPC and %s", err, tc.wantErr)
			}
		})
	}
}

func TestPersonaEngineYAMLAndEntity(t *testing.T) {
	const src = `
id: grimjaw
name: Grimjaw
engine: s2s
s2s: {model: gpt-realtime, voice: cedar}
voice: {provider: espeak, id: en-gb+m3}
`
	var p Persona
	if err := yaml.Unmarshal([]byte(src), &p); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	want := S2S{Model: "gpt-realtime", Voice: "cedar"}
	if p.Engine != EngineS2S || p.S2S != want {
		t.Fatalf("decoded engine %q, s2s %+v; want s2s, %+v", p.Engine, p.S2S, want)
	}
	back := PersonaFromEntity(p.Entity())
	if !reflect.DeepEqual(back, Persona{ID: p.ID, Name: p.Name, Voice: p.Voice, Engine: p.Engine, S2S: p.S2S}) {
		t.Fatalf("entity round trip: %+v", back)
	}
	// A hand-edited entity: mixed case and stray spaces are read leniently.
	e := Persona{ID: "x", Name: "X"}.Entity()
	e.Attributes["engine"] = " S2S "
	e.Attributes["s2s"] = map[string]any{"voice": " ash "}
	if got := PersonaFromEntity(e); got.Engine != EngineS2S || got.S2S.Voice != "ash" || got.Validate() != nil {
		t.Fatalf("hand-edited entity read as engine %q voice %q (%v)", got.Engine, got.S2S.Voice, got.Validate())
	}
	if got := (Persona{}).Engine.Effective(); got != EngineCascaded {
		t.Fatalf("empty engine is %q, want cascaded", got)
	}
}
