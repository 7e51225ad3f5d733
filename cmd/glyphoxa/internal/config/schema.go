package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/antzucaro/matchr"
	"gopkg.in/yaml.v3"
)

var durationType = reflect.TypeOf(Duration(0))

// checkSchema walks the YAML tree against the Config type and reports the
// first unknown key or wrongly typed value by its dotted path and line, in
// words a self-hoster reads: "memory.embedding_dimension (line 5): unknown
// key; did you mean embedding_dimensions?".
//
// subst holds the original text of values substituted from the
// environment: an error names its variables, never the value.
func checkSchema(n *yaml.Node, v any, subst map[*yaml.Node]string) error {
	return walk(n, reflect.TypeOf(v), "", subst)
}

func walk(n *yaml.Node, t reflect.Type, path string, subst map[*yaml.Node]string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.ShortTag() == "!!null" {
		return nil
	}
	// got is the value as an error shows it: quoted when typed in the
	// file, left out when it came from the environment.
	got := func() string { return ", got " + quote(n.Value) }
	from := ""
	if orig := subst[n]; orig != "" {
		got = func() string { return "" }
		from = ", from " + refs(envNames(orig))
	}
	where := func() string {
		if path == "" {
			return fmt.Sprintf("line %d%s", n.Line, from)
		}
		return fmt.Sprintf("%s (line %d%s)", path, n.Line, from)
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			return fmt.Errorf("%w: %s: expected a duration such as 30s or 5m", ErrInvalid, where())
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return fmt.Errorf("%w: %s: not a duration (write 600ms, 30s, 5m or 1h30m)%s", ErrInvalid, where(), got())
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%w: %s: expected a section of keys", ErrInvalid, where())
		}
		fields := map[string]reflect.Type{}
		var names []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			fields[tag] = f.Type
			names = append(names, tag)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			ft, ok := fields[k.Value]
			if !ok {
				hint := ""
				if s := closest(k.Value, names); s != "" {
					hint = "; did you mean " + s + "?"
				}
				return fmt.Errorf("%w: %s (line %d): unknown key%s", ErrInvalid, sub, k.Line, hint)
			}
			if err := walk(val, ft, sub, subst); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return fmt.Errorf("%w: %s: expected a list", ErrInvalid, where())
		}
		for i, c := range n.Content {
			if err := walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), subst); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() == reflect.Map || t.Kind() == reflect.Interface:
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%w: %s: expected a single value, not a list or section", ErrInvalid, where())
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		if n.ShortTag() != "!!int" {
			return fmt.Errorf("%w: %s: expected a whole number%s", ErrInvalid, where(), got())
		}
	case reflect.Float32, reflect.Float64:
		if tag := n.ShortTag(); tag != "!!int" && tag != "!!float" {
			return fmt.Errorf("%w: %s: expected a number%s", ErrInvalid, where(), got())
		}
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			return fmt.Errorf("%w: %s: expected true or false%s", ErrInvalid, where(), got())
		}
	}
	return nil
}

// closest suggests the known key nearest to a misspelt one.
func closest(key string, known []string) string {
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
