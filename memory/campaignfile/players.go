package campaignfile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Players maps a Discord user id to the entity id of the character that
// member plays (the file's `players:` key, e.g. `players: {"311111111111111111": thorin}`).
type Players map[string]string

// maxPlayerID bounds a user id (Discord's are 17 to 20 digits).
const maxPlayerID = 64

// checkPlayers reports a malformed player entry, or a character the file
// does not define (ents: entity id → line), naming line.
func checkPlayers(p Players, ents map[string]int, line int) error {
	for _, u := range slices.Sorted(func(yield func(string) bool) {
		for u := range p {
			if !yield(u) {
				return
			}
		}
	}) {
		ch := p[u]
		switch {
		case strings.HasPrefix(u, "<@") || strings.HasPrefix(u, "@"):
			return lineErr(line, "players: %s is a mention; write the member's bare Discord user id (e.g. \"311111111111111111\")", q(u))
		case strings.TrimSpace(u) == "" || strings.ContainsFunc(u, unicode.IsSpace) || len(u) > maxPlayerID || strings.ContainsRune(u, 0):
			return lineErr(line, "players: %s is not a Discord user id", q(u))
		case strings.TrimSpace(ch) == "":
			return lineErr(line, "players: %s plays no character (give an entity id)", q(u))
		}
		if _, ok := ents[ch]; !ok {
			return lineErr(line, "players: %s plays %s, which the file does not define", q(u), q(ch))
		}
	}
	return nil
}

// parsePlayers reads the players section (its lines, key included) that
// starts at line.
func parsePlayers(text string, line int) (Players, error) {
	var v struct {
		Players Players `yaml:"players"`
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&v); err != nil {
		return nil, lineErr(line, "players must map Discord user ids to character entity ids: %v", err)
	}
	return v.Players, nil
}

// playerSetter is a session store that records who plays whom (the
// PostgreSQL store does).
type playerSetter interface {
	SetPlayer(ctx context.Context, userID, entityID string) error
}

// applyPlayers records the file's players once their characters exist.
func applyPlayers(ctx context.Context, l1 any, p Players) error {
	if len(p) == 0 {
		return nil
	}
	ps, ok := l1.(playerSetter)
	if !ok {
		return nil
	}
	for _, u := range slices.Sorted(func(yield func(string) bool) {
		for u := range p {
			if !yield(u) {
				return
			}
		}
	}) {
		if err := ps.SetPlayer(ctx, u, p[u]); err != nil {
			return fmt.Errorf("importing the player %s: %w", u, err)
		}
	}
	return nil
}
