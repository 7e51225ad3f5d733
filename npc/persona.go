package npc

import (
	"errors"
	"fmt"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Persona is an NPC's character sheet. It lives in the NPC's knowledge-graph
// entity (name, aliases, attributes), so the DM can change it at run time and
// the next turn uses the change.
type Persona struct {
	// ID is the NPC's entity id in the campaign's knowledge graph.
	ID string `yaml:"id" json:"id"`
	// Campaign, in the configuration, names the campaign the NPC belongs
	// to; empty means every campaign the bot plays.
	Campaign      string   `yaml:"campaign,omitempty" json:"-"`
	Name          string   `yaml:"name" json:"name"`
	Aliases       []string `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	Personality   string   `yaml:"personality,omitempty" json:"personality,omitempty"`
	Appearance    string   `yaml:"appearance,omitempty" json:"appearance,omitempty"`
	SpeakingStyle string   `yaml:"speaking_style,omitempty" json:"speaking_style,omitempty"`
	Goals         []string `yaml:"goals,omitempty" json:"goals,omitempty"`
	Voice         Voice    `yaml:"voice,omitempty" json:"voice,omitempty"`
	// KnowledgeScope lists the relationship types the NPC's knowledge
	// travels along (see memory.VisibilityScope); empty means the default.
	KnowledgeScope []string `yaml:"knowledge_scope,omitempty" json:"knowledge_scope,omitempty"`
	// SecretKnowledge holds facts only this NPC knows and guards.
	SecretKnowledge []string `yaml:"secret_knowledge,omitempty" json:"secret_knowledge,omitempty"`
	// Engine is how the NPC hears and speaks: [EngineCascaded] (the
	// default) or [EngineS2S].
	Engine Engine `yaml:"engine,omitempty" json:"engine,omitempty"`
	// S2S configures the speech-to-speech engine; it is used when Engine
	// is [EngineS2S] and kept, unused, otherwise (so a DM can switch back
	// and forth).
	S2S S2S `yaml:"s2s,omitempty" json:"s2s,omitempty"`
}

// Engine names an NPC's voice engine.
type Engine string

// The voice engines.
const (
	// EngineCascaded transcribes the player, answers with the LLM and
	// speaks the answer with text-to-speech.
	EngineCascaded Engine = "cascaded"
	// EngineS2S hands the player's audio to a realtime speech-to-speech
	// model that answers in audio itself (package voice/realtime).
	EngineS2S Engine = "s2s"
)

// Effective is the engine in use: the empty engine is [EngineCascaded].
func (e Engine) Effective() Engine {
	if e == "" {
		return EngineCascaded
	}
	return e
}

// S2S selects an NPC's realtime speech-to-speech model and voice.
type S2S struct {
	// Model is the realtime model (e.g. "gpt-realtime"); empty uses the
	// configured default.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Voice is the model's voice (e.g. "marin", "cedar", "ash"); empty
	// uses the configured default.
	Voice string `yaml:"voice,omitempty" json:"voice,omitempty"`
}

// Voice selects how an NPC sounds.
type Voice struct {
	// Provider is a TTS provider name (espeak, openai, elevenlabs); empty
	// uses the configured default.
	Provider string `yaml:"provider,omitempty" json:"provider,omitempty"`
	// ID is the provider's voice (e.g. "en-gb+m3" for espeak, "onyx" for
	// OpenAI, a voice id for ElevenLabs).
	ID string `yaml:"id,omitempty" json:"id,omitempty"`
	// Speed scales the speaking rate; 0 means 1.
	Speed float64 `yaml:"speed,omitempty" json:"speed,omitempty"`
}

// Entity attribute keys that hold a persona.
const (
	attrPersonality    = "personality"
	attrAppearance     = "appearance"
	attrSpeakingStyle  = "speaking_style"
	attrGoals          = "goals"
	attrVoice          = "voice"
	attrKnowledgeScope = "knowledge_scope"
	attrEngine         = "engine"
	attrS2S            = "s2s"
)

// ErrInvalidPersona is wrapped by persona validation errors.
var ErrInvalidPersona = errors.New("invalid persona")

// Validate checks a persona read from configuration or a campaign file.
func (p Persona) Validate() error {
	switch {
	case strings.TrimSpace(p.ID) == "":
		return fmt.Errorf("%w: an NPC needs an id (its knowledge-graph entity id)", ErrInvalidPersona)
	case strings.TrimSpace(p.Name) == "":
		return fmt.Errorf("%w: NPC %q needs a name", ErrInvalidPersona, p.ID)
	case p.Voice.Speed < 0 || p.Voice.Speed > 4:
		return fmt.Errorf("%w: NPC %q: voice.speed %v must be within 0..4", ErrInvalidPersona, p.ID, p.Voice.Speed)
	case p.Engine != "" && p.Engine != EngineCascaded && p.Engine != EngineS2S:
		return fmt.Errorf("%w: NPC %q: engine %q must be %q or %q", ErrInvalidPersona, p.ID, p.Engine, EngineCascaded, EngineS2S)
	case !validS2SName(p.S2S.Model):
		return fmt.Errorf("%w: NPC %q: s2s.model %q may hold only letters, digits and . _ - (at most 100)", ErrInvalidPersona, p.ID, p.S2S.Model)
	case !validS2SName(p.S2S.Voice):
		return fmt.Errorf("%w: NPC %q: s2s.voice %q may hold only letters, digits and . _ - (at most 100)", ErrInvalidPersona, p.ID, p.S2S.Voice)
	}
	return nil
}

// validS2SName reports whether s is empty or a plausible model or voice
// name: these go into a URL query and a JSON event, so spaces, slashes and
// control characters are mistakes.
func validS2SName(s string) bool {
	if len(s) > 100 {
		return false
	}
	for _, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

// Entity returns the knowledge-graph entity that stores the persona.
func (p Persona) Entity() memory.Entity {
	attrs := map[string]any{}
	setStr := func(k, v string) {
		if v != "" {
			attrs[k] = v
		}
	}
	setStr(attrPersonality, p.Personality)
	setStr(attrAppearance, p.Appearance)
	setStr(attrSpeakingStyle, p.SpeakingStyle)
	if len(p.Goals) > 0 {
		attrs[attrGoals] = toAny(p.Goals)
	}
	if len(p.KnowledgeScope) > 0 {
		attrs[attrKnowledgeScope] = toAny(p.KnowledgeScope)
	}
	if len(p.SecretKnowledge) > 0 {
		attrs[memory.AttrSecretKnowledge] = toAny(p.SecretKnowledge)
	}
	if p.Voice != (Voice{}) {
		v := map[string]any{}
		if p.Voice.Provider != "" {
			v["provider"] = p.Voice.Provider
		}
		if p.Voice.ID != "" {
			v["id"] = p.Voice.ID
		}
		if p.Voice.Speed != 0 {
			v["speed"] = p.Voice.Speed
		}
		attrs[attrVoice] = v
	}
	if p.Engine != "" {
		attrs[attrEngine] = string(p.Engine)
	}
	if p.S2S != (S2S{}) {
		v := map[string]any{}
		if p.S2S.Model != "" {
			v["model"] = p.S2S.Model
		}
		if p.S2S.Voice != "" {
			v["voice"] = p.S2S.Voice
		}
		attrs[attrS2S] = v
	}
	return memory.Entity{ID: p.ID, Type: memory.EntityNPC, Name: p.Name, Aliases: p.Aliases, Attributes: attrs}
}

// PersonaFromEntity reads a persona back from its entity. Attributes written
// by hand (a string where a list is expected, say) are read leniently.
func PersonaFromEntity(e memory.Entity) Persona {
	p := Persona{ID: e.ID, Name: e.Name, Aliases: e.Aliases}
	p.Personality = str(e.Attributes[attrPersonality])
	p.Appearance = str(e.Attributes[attrAppearance])
	p.SpeakingStyle = str(e.Attributes[attrSpeakingStyle])
	p.Goals = strs(e.Attributes[attrGoals])
	p.KnowledgeScope = strs(e.Attributes[attrKnowledgeScope])
	p.SecretKnowledge = strs(e.Attributes[memory.AttrSecretKnowledge])
	if v, ok := e.Attributes[attrVoice].(map[string]any); ok {
		p.Voice.Provider = str(v["provider"])
		p.Voice.ID = str(v["id"])
		if f, ok := v["speed"].(float64); ok {
			p.Voice.Speed = f
		}
	}
	p.Engine = Engine(strings.ToLower(strings.TrimSpace(str(e.Attributes[attrEngine]))))
	if v, ok := e.Attributes[attrS2S].(map[string]any); ok {
		p.S2S.Model = strings.TrimSpace(str(v["model"]))
		p.S2S.Voice = strings.TrimSpace(str(v["voice"]))
	}
	return p
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

func strs(v any) []string {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s := strings.TrimSpace(str(e)); s != "" {
				out = append(out, s)
			}
		}
		return out
	case []string:
		return x
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		return []string{x}
	default:
		return nil
	}
}

// Names returns the persona's name and aliases.
func (p Persona) Names() []string { return append([]string{p.Name}, p.Aliases...) }
