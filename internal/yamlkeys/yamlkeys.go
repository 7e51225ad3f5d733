// Package yamlkeys finds the keys of a YAML document that the Go type it
// is decoded into does not have, and says what was meant: the key, its
// line, the nearest valid key and every valid key at that place. Decoding
// a yaml.Node into a struct ignores unknown keys, and a strict decoder
// names the Go type instead of the document's words ("field aliasses not
// found in type campaignfile.Entity"); this is what campaign files and
// scenes check first.
package yamlkeys

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/antzucaro/matchr"
	"gopkg.in/yaml.v3"
)

// UnknownKeyError is a key the target type does not have.
type UnknownKeyError struct {
	// Path is where the key is, in the document's words:
	// "entities[2].aliasses".
	Path string
	// Line is the key's line in the document.
	Line int
	// Key is the unknown key; Suggest the nearest valid one ("" when none
	// is near); Valid every key allowed there, in declaration order.
	Key, Suggest string
	Valid        []string
}

func (e *UnknownKeyError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Detail()) }

// Detail is the error without its line.
func (e *UnknownKeyError) Detail() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: unknown key %q", e.Path, e.Key)
	if e.Suggest != "" {
		fmt.Fprintf(&b, "; did you mean %q?", e.Suggest)
	}
	fmt.Fprintf(&b, " (valid keys here: %s)", strings.Join(e.Valid, ", "))
	return b.String()
}

var (
	unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()
	timeType        = reflect.TypeOf(time.Time{})
)

// Check returns every key of n (a document node or its content) that the
// type of v does not have, in document order. Values of a type that
// decodes itself (a yaml.Unmarshaler), maps and interfaces are not looked
// into.
func Check(n *yaml.Node, v any) []*UnknownKeyError {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	var out []*UnknownKeyError
	walk(n, reflect.TypeOf(v), "", map[*yaml.Node]bool{}, &out)
	return out
}

func walk(n *yaml.Node, t reflect.Type, path string, seen map[*yaml.Node]bool, out *[]*UnknownKeyError) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || seen[n] || t == timeType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return
	}
	seen[n] = true
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields, names := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				where := path
				if where == "" {
					where = "top level"
				}
				*out = append(*out, &UnknownKeyError{Path: where, Line: k.Line, Key: k.Value,
					Suggest: closest(k.Value, names), Valid: names})
				continue
			}
			walk(val, ft, sub, seen, out)
		}
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), seen, out)
		}
	}
}

// fieldsOf returns the YAML keys of struct t and their types, inline
// structs included.
func fieldsOf(t reflect.Type) (map[string]reflect.Type, []string) {
	fields := map[string]reflect.Type{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := strings.Split(f.Tag.Get("yaml"), ",")
		if tag[0] == "-" {
			continue
		}
		if len(tag) > 1 && tag[1] == "inline" && f.Type.Kind() == reflect.Struct {
			sub, subNames := fieldsOf(f.Type)
			for _, n := range subNames {
				fields[n] = sub[n]
			}
			names = append(names, subNames...)
			continue
		}
		name := tag[0]
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
		names = append(names, name)
	}
	return fields, names
}

// closest is the valid key nearest to a misspelt one, or "": the fewest
// edits (a swap of two neighbours counts as one), when they are at most a
// third of the key (at least one), else the most similar by Jaro-Winkler
// from 0.85.
func closest(key string, known []string) string {
	key = strings.ToLower(key)
	best, bestDist := "", 0
	for _, k := range known {
		if d := matchr.DamerauLevenshtein(key, k); best == "" || d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" && bestDist <= max(1, len([]rune(key))/3) {
		return best
	}
	best, bestScore := "", 0.0
	for _, k := range known {
		if s := matchr.JaroWinkler(key, k, false); s > bestScore {
			best, bestScore = k, s
		}
	}
	if bestScore >= 0.85 {
		return best
	}
	return ""
}
