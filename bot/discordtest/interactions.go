package discordtest

import (
	"fmt"
	"time"
)

// Member is who triggers an interaction.
type Member struct {
	UserID string
	Name   string
	Roles  []string
	// Admin gives the member the Administrator permission.
	Admin bool
}

func (m Member) json() map[string]any {
	perms := "0"
	if m.Admin {
		perms = "8"
	}
	roles := m.Roles
	if roles == nil {
		roles = []string{}
	}
	return map[string]any{"user": map[string]any{"id": m.UserID, "username": m.Name, "global_name": m.Name},
		"roles": roles, "permissions": perms, "joined_at": "2026-01-01T00:00:00Z"}
}

// Opt is a slash-command option value. Sub and Group nest.
type Opt map[string]any

// Sub is a subcommand with options.
func Sub(name string, opts ...Opt) Opt {
	return Opt{"name": name, "type": 1, "options": listOf(opts)}
}

// Group is a subcommand group.
func Group(name string, subs ...Opt) Opt {
	return Opt{"name": name, "type": 2, "options": listOf(subs)}
}

// Str is a string option.
func Str(name, value string) Opt { return Opt{"name": name, "type": 3, "value": value} }

// Bool is a boolean option.
func Bool(name string, value bool) Opt { return Opt{"name": name, "type": 5, "value": value} }

// Focused is a string option being typed, for autocomplete.
func Focused(name, value string) Opt {
	return Opt{"name": name, "type": 3, "value": value, "focused": true}
}

func listOf(opts []Opt) []map[string]any {
	out := make([]map[string]any, len(opts))
	for i, o := range opts {
		out[i] = o
	}
	return out
}

// Interaction is a payload to dispatch; ID and Token identify its REST
// callbacks.
type Interaction struct {
	ID, Token string
	Payload   map[string]any
}

// CallbackPath is the path of the interaction's initial response.
func (i Interaction) CallbackPath() string {
	return fmt.Sprintf("/interactions/%s/%s/callback", i.ID, i.Token)
}

// OriginalPath is the path editing the interaction's original response.
func (i Interaction) OriginalPath(appID string) string {
	return fmt.Sprintf("/webhooks/%s/%s/messages/@original", appID, i.Token)
}

// FollowupPath is the path of the interaction's follow-up messages.
func (i Interaction) FollowupPath(appID string) string {
	return fmt.Sprintf("/webhooks/%s/%s", appID, i.Token)
}

func (s *Server) interaction(typ int, guild, channel string, m Member, data map[string]any, message map[string]any) Interaction {
	id := s.NewID()
	tok := "tok" + id
	p := map[string]any{"id": id, "application_id": s.AppID, "type": typ, "data": data, "guild_id": guild,
		"channel_id": channel, "member": m.json(), "token": tok, "version": 1, "locale": "en-US"}
	if message != nil {
		p["message"] = message
	}
	s.born(tok)
	return Interaction{ID: id, Token: tok, Payload: p}
}

// Command builds a slash-command interaction.
func (s *Server) Command(guild, channel string, m Member, name string, opts ...Opt) Interaction {
	return s.interaction(2, guild, channel, m, map[string]any{"id": s.NewID(), "name": name, "type": 1, "options": listOf(opts)}, nil)
}

// Autocomplete builds an autocomplete interaction (one option Focused).
func (s *Server) Autocomplete(guild, channel string, m Member, name string, opts ...Opt) Interaction {
	return s.interaction(4, guild, channel, m, map[string]any{"id": s.NewID(), "name": name, "type": 1, "options": listOf(opts)}, nil)
}

// Button builds a button press on a message the bot sent.
func (s *Server) Button(guild, channel string, m Member, customID string) Interaction {
	msg := map[string]any{"id": s.NewID(), "channel_id": channel, "content": "", "timestamp": time.Now().Format(time.RFC3339),
		"author": map[string]any{"id": s.BotUser.ID, "username": s.BotUser.Username, "bot": true}}
	return s.interaction(3, guild, channel, m, map[string]any{"custom_id": customID, "component_type": 2}, msg)
}

// DMButton builds a button press on a message the bot sent to userID in a
// direct message: the interaction has no guild and names a user, not a
// member.
func (s *Server) DMButton(m Member, customID string) Interaction {
	i := s.Button("", DMChannel(m.UserID), m, customID)
	delete(i.Payload, "guild_id")
	delete(i.Payload, "member")
	i.Payload["user"] = m.json()["user"]
	return i
}

// ModalSubmit builds the submission of a modal with text input values.
func (s *Server) ModalSubmit(guild, channel string, m Member, customID string, values map[string]string) Interaction {
	var rows []map[string]any
	for id, v := range values {
		rows = append(rows, map[string]any{"type": 1, "components": []map[string]any{{"type": 4, "custom_id": id, "value": v}}})
	}
	return s.interaction(5, guild, channel, m, map[string]any{"custom_id": customID, "components": rows}, nil)
}

// Send dispatches an interaction to the bot.
func (s *Server) Send(i Interaction) error { return s.Dispatch("INTERACTION_CREATE", i.Payload) }
