package console

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
)

// classify maps a store error to a status and a message for the page: an
// outage is a 503 and a refusal a 403, in plain words, never the driver's.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, memory.ErrUnavailable):
		return http.StatusServiceUnavailable, msgUnavailable
	case errors.Is(err, memory.ErrForbidden):
		return http.StatusForbidden, "That part of the campaign's memory is for the DM only."
	case errors.Is(err, memory.ErrNotFound):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, memory.ErrInvalid):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusInternalServerError, "The memory store failed; the console's log says why."
}

// secretKey reports whether an attribute is for the DM's and the entity's
// eyes only: secret knowledge, the secret markers, anything named secret….
func secretKey(key string) bool {
	k := strings.ToLower(key)
	return k == memory.AttrSecretKnowledge || k == memory.AttrSecret || k == memory.AttrKnownBy || strings.HasPrefix(k, "secret")
}

// publicValue is v without what is secret at any depth: objects marked
// {"secret": true} and keys secretKey names; nil when v is secret whole.
func publicValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x[memory.AttrSecret] == true {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, y := range x {
			if secretKey(k) {
				continue
			}
			if p := publicValue(y); p != nil || y == nil {
				out[k] = p
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, y := range x {
			if p := publicValue(y); p != nil || y == nil {
				out = append(out, p)
			}
		}
		return out
	}
	return v
}

// isSecretFact reports whether only some NPCs may know a fact.
func isSecretFact(r memory.Relationship) bool { return r.Attributes[memory.AttrSecret] == true }

// playerVisible reports whether a player may see a fact: canon and not
// secret.
func playerVisible(r memory.Relationship) bool {
	return r.Status == memory.StatusActive && !isSecretFact(r)
}

// attr is one attribute for display.
type attr struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Secret bool   `json:"secret,omitempty"`
}

// attrs lists an entity's attributes in key order; for a player, the
// secret ones are left out entirely.
func attrs(e memory.Entity, dm bool) []attr {
	keys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []attr
	for _, k := range keys {
		v := e.Attributes[k]
		secret := secretKey(k)
		if !dm {
			if secret {
				continue
			}
			if v = publicValue(v); v == nil {
				continue
			}
		}
		out = append(out, attr{Key: k, Value: valueText(v), Secret: secret})
	}
	return out
}

// valueText renders an attribute value: strings as they are, lists joined
// by "; ", anything else as Go formats it.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = valueText(y)
		}
		return strings.Join(parts, "; ")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + valueText(x[k])
		}
		return strings.Join(parts, ", ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// provenance says where a fact came from.
func provenance(f memory.Relationship) string {
	parts := []string{fmt.Sprintf("confidence %.2f", f.Provenance.Confidence), string(f.Provenance.Source)}
	if f.Provenance.SessionID != "" {
		parts = append(parts, "session "+f.Provenance.SessionID)
	}
	if !f.Provenance.Timestamp.IsZero() {
		parts = append(parts, f.Provenance.Timestamp.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if f.Provenance.DMConfirmed {
		parts = append(parts, "DM-confirmed")
	}
	if p, ok := f.Attributes["proposed_by"].(string); ok {
		parts = append(parts, "proposed by "+p)
	}
	return strings.Join(parts, " · ")
}
