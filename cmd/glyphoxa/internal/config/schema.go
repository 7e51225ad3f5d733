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
// unknown keys and wrongly typed values, each by its dotted path and line, in
// words a self-hoster reads: "memory.embedding_dimension (line 5): unknown
// key; did you mean embedding_dimensions?".
//
// subst holds the original text of values substituted from the
// environment: an error names its variables, never the value.
func checkSchema(n *yaml.Node, v any, subst map[*yaml.Node]string) error {
	ps := walk(n, reflect.TypeOf(v), "", subst)
	switch len(ps) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: %s", ErrInvalid, ps[0])
	}
	return fmt.Errorf("%w: %d problems:\n  %s", ErrInvalid, len(ps), strings.Join(ps, "\n  "))
}

// problem is one finding of walk.
func problem(format string, args ...any) []string { return []string{fmt.Sprintf(format, args...)} }

// walk returns every problem of n against t: each unknown key and each
// wrongly typed value, so that one run names them all.
func walk(n *yaml.Node, t reflect.Type, path string, subst map[*yaml.Node]string) []string {
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
			return problem("%s: expected a duration such as 30s or 5m", where())
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			return problem("%s: not a duration (write 600ms, 30s, 5m or 1h30m)%s", where(), got())
		}
		return nil
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return problem("%s: expected a section of keys", where())
		}
		var ps []string
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
				ps = append(ps, problem("%s (line %d): unknown key%s", sub, k.Line, hint)...)
				continue
			}
			ps = append(ps, walk(val, ft, sub, subst)...)
		}
		return ps
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return problem("%s: expected a list", where())
		}
		var ps []string
		for i, c := range n.Content {
			ps = append(ps, walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), subst)...)
		}
		return ps
	case t.Kind() == reflect.Map || t.Kind() == reflect.Interface:
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return problem("%s: expected a single value, not a list or section", where())
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		if n.ShortTag() != "!!int" {
			return problem("%s: expected a whole number%s", where(), got())
		}
	case reflect.Float32, reflect.Float64:
		if tag := n.ShortTag(); tag != "!!int" && tag != "!!float" {
			return problem("%s: expected a number%s", where(), got())
		}
	case reflect.Bool:
		if n.ShortTag() != "!!bool" {
			return problem("%s: expected true or false%s", where(), got())
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
