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

// attr is one attribute for display.
type attr struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Secret bool   `json:"secret,omitempty"`
}

// attrs lists an entity's attributes in key order, as the viewer-bound
// read returned them (a player's has no secret left). Secret marks, for
// the DM, the attributes a player does not see: a secret key
// (memory.SecretKey) or a value marked secret as a whole.
func attrs(e memory.Entity) []attr {
	keys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []attr
	for _, k := range keys {
		v := e.Attributes[k]
		secret := memory.SecretKey(k) || (v != nil && memory.PublicValue(v) == nil)
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
