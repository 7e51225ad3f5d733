package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

// The Helm chart is rendered here without helm (no binary on the build
// machines): Go's text/template with the few sprig-like functions the
// templates use, as helm would. Its output is parsed and checked.

const chartDir = "../../deploy/helm/glyphoxa"

// renderChart renders every template of the chart with values.yaml, the
// overrides merged on top (one level deep per dotted key), and returns the
// manifests by kind.
func renderChart(t *testing.T, overrides map[string]any) map[string][]map[string]any {
	t.Helper()
	var chart map[string]any
	readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)
	var values map[string]any
	readYAML(t, filepath.Join(chartDir, "values.yaml"), &values)
	for k, v := range overrides {
		m := values
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			m = m[p].(map[string]any)
		}
		m[parts[len(parts)-1]] = v
	}
	data := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": "table", "Namespace": "games"},
		"Chart":   map[string]any{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
	}
	root := template.New("chart").Option("missingkey=error")
	root.Funcs(template.FuncMap{
		"include": func(name string, d any) (string, error) {
			var b bytes.Buffer
			err := root.ExecuteTemplate(&b, name, d)
			return b.String(), err
		},
		"nindent": func(n int, s string) string {
			pad := strings.Repeat(" ", n)
			return "\n" + pad + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+pad)
		},
		"quote": func(v any) string { return fmt.Sprintf("%q", fmt.Sprint(v)) },
		"default": func(def, v any) any {
			if v == nil || v == "" || v == false || v == 0 {
				return def
			}
			return v
		},
		"toYaml": func(v any) (string, error) {
			b, err := yaml.Marshal(v)
			return strings.TrimRight(string(b), "\n"), err
		},
	})
	files, err := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", chartDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := root.New(filepath.Base(f)).Parse(string(b)); err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
	}
	out := map[string][]map[string]any{}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "_") {
			continue
		}
		var b bytes.Buffer
		if err := root.ExecuteTemplate(&b, name, data); err != nil {
			t.Fatalf("rendering %s: %v", name, err)
		}
		dec := yaml.NewDecoder(&b)
		for {
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Fatalf("%s renders YAML that does not parse: %v\n%s", name, err, b.String())
			}
			if doc == nil {
				continue
			}
			for _, k := range []string{"apiVersion", "kind", "metadata"} {
				if doc[k] == nil {
					t.Errorf("%s: a manifest without %s", name, k)
				}
			}
			kind, _ := doc["kind"].(string)
			out[kind] = append(out[kind], doc)
		}
	}
	return out
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// dig walks a manifest along keys (string keys of maps, int indexes of
// lists) and fails the test when a step is missing.
func dig(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok || m[k] == nil {
				t.Fatalf("no %v in the manifest (at %v)", path[:i+1], p)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("no %v in the manifest (at %v)", path[:i+1], p)
			}
			v = l[k]
		}
	}
	return v
}

// byName finds the element of a list of maps whose "name" is name.
func byName(t *testing.T, list any, name string) map[string]any {
	t.Helper()
	l, _ := list.([]any)
	for _, x := range l {
		if m, ok := x.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	t.Fatalf("no %q in %v", name, list)
	return nil
}

func TestHelmChart(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		m := renderChart(t, nil)
		for _, kind := range []string{"StatefulSet", "ConfigMap", "Secret", "Service"} {
			if len(m[kind]) != 1 {
				t.Errorf("%d %s manifests, want 1 (kinds: %v)", len(m[kind]), kind, slices.Sorted(maps.Keys(m)))
			}
		}
	})

	m := renderChart(t, map[string]any{"replicas": 3, "secret.existingSecret": "glyphoxa-secrets", "console.enabled": true,
		"postgresql.enabled": true})
	if len(m["Secret"]) != 0 {
		t.Errorf("with an existing Secret the chart still creates one: %v", m["Secret"])
	}
	sts := m["StatefulSet"][0]
	pod := dig(t, sts, "spec", "template", "spec")
	c := dig(t, pod, "containers", 0)
	env := dig(t, c, "env")

	t.Run("one replica per Discord shard", func(t *testing.T) {
		if got := dig(t, sts, "spec", "replicas"); got != 3 {
			t.Errorf("replicas = %v, want 3", got)
		}
		id := byName(t, env, "GLYPHOXA_SHARD_ID")
		if got := dig(t, id, "valueFrom", "fieldRef", "fieldPath"); got != "metadata.labels['apps.kubernetes.io/pod-index']" {
			t.Errorf("GLYPHOXA_SHARD_ID comes from %v, want the pod's ordinal", got)
		}
		if got := byName(t, env, "GLYPHOXA_SHARD_COUNT")["value"]; got != "3" {
			t.Errorf("GLYPHOXA_SHARD_COUNT = %v, want \"3\"", got)
		}
	})
	t.Run("the config the ConfigMap holds is valid and reads its shard from the pod", func(t *testing.T) {
		text, _ := dig(t, m["ConfigMap"][0], "data", "config.yaml").(string)
		vars := map[string]string{"GLYPHOXA_SHARD_ID": "2", "GLYPHOXA_SHARD_COUNT": "3"}
		cfg, err := config.Parse(strings.NewReader(text), "config.yaml", func(k string) string { return vars[k] })
		if err != nil {
			t.Fatalf("the chart's config.yaml: %v\n%s", err, text)
		}
		if cfg.Discord.ShardID != 2 || cfg.Discord.ShardCount != 3 {
			t.Errorf("shard %d of %d, want 2 of 3", cfg.Discord.ShardID, cfg.Discord.ShardCount)
		}
		spool := byName(t, dig(t, c, "volumeMounts"), "spool")["mountPath"].(string)
		if !strings.HasPrefix(cfg.Lifecycle.SpoolDir, spool+"/") {
			t.Errorf("spool_dir %q is not on the spool volume mounted at %s", cfg.Lifecycle.SpoolDir, spool)
		}
		if cfg.Discord.Token != "" || cfg.Memory.PostgresDSN != "" {
			t.Error("the ConfigMap holds a secret")
		}
	})
	t.Run("secrets come from the Secret", func(t *testing.T) {
		if got := dig(t, c, "envFrom", 0, "secretRef", "name"); got != "glyphoxa-secrets" {
			t.Errorf("envFrom secret %v, want glyphoxa-secrets", got)
		}
		// The password is not spliced into the DSN (a URL): one holding
		// "@", "/" or "?" would break it. pgx reads PGPASSWORD.
		dsn := byName(t, env, "GLYPHOXA_DSN")["value"].(string)
		if !strings.HasPrefix(dsn, "postgres://glyphoxa@table-postgresql:5432/glyphoxa?") {
			t.Errorf("with postgresql.enabled the DSN %q does not point at the dependency as its user, without a password", dsn)
		}
		pw := byName(t, env, "PGPASSWORD")
		if dig(t, pw, "valueFrom", "secretKeyRef", "name") != "table-postgresql" || dig(t, pw, "valueFrom", "secretKeyRef", "key") != "password" {
			t.Errorf("the database password comes from %v", pw)
		}
		for _, e := range env.([]any) {
			if v, ok := e.(map[string]any)["value"].(string); ok && strings.Contains(strings.ToLower(e.(map[string]any)["name"].(string)), "token") {
				t.Errorf("a token in plain env: %v", v)
			}
		}
	})
	t.Run("probes ask /readyz and /healthz", func(t *testing.T) {
		if got := dig(t, c, "readinessProbe", "httpGet", "path"); got != "/readyz" {
			t.Errorf("readiness probe on %v, want /readyz", got)
		}
		if got := dig(t, c, "livenessProbe", "httpGet", "path"); got != "/healthz" {
			t.Errorf("liveness probe on %v, want /healthz", got)
		}
		args := fmt.Sprint(dig(t, c, "args"))
		if !strings.Contains(args, "--listen 0.0.0.0:9464") || !strings.Contains(args, "--console-listen 0.0.0.0:9465") {
			t.Errorf("serve args %s: want every interface for the probes and the console", args)
		}
		byName(t, dig(t, c, "ports"), "http")
		byName(t, dig(t, c, "ports"), "console")
	})
	t.Run("each replica keeps its spool on a volume", func(t *testing.T) {
		vct := dig(t, sts, "spec", "volumeClaimTemplates", 0)
		if dig(t, vct, "metadata", "name") != "spool" || dig(t, vct, "spec", "resources", "requests", "storage") != "1Gi" {
			t.Errorf("volume claim %v", vct)
		}
		if dig(t, pod, "securityContext", "fsGroup") != 10001 || dig(t, pod, "securityContext", "runAsUser") != 10001 {
			t.Errorf("the pod does not run as the image's user 10001 with the volume its group's: %v", dig(t, pod, "securityContext"))
		}
	})
	t.Run("the chart needs the Kubernetes that labels a pod with its index", func(t *testing.T) {
		var chart struct {
			KubeVersion string `yaml:"kubeVersion"`
		}
		readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)
		if chart.KubeVersion != ">=1.28.0-0" {
			t.Errorf("kubeVersion %q: the shard id reads apps.kubernetes.io/pod-index, set since Kubernetes 1.28 (empty before: every pod would be shard 0)", chart.KubeVersion)
		}
	})
	t.Run("the in-cluster PostgreSQL gets its extensions from the superuser", func(t *testing.T) {
		var values struct {
			PostgreSQL struct {
				Primary struct {
					InitDB struct {
						Scripts map[string]string `yaml:"scripts"`
					} `yaml:"initdb"`
				} `yaml:"primary"`
			} `yaml:"postgresql"`
		}
		readYAML(t, filepath.Join(chartDir, "values.yaml"), &values)
		var all strings.Builder
		for name, s := range values.PostgreSQL.Primary.InitDB.Scripts {
			if !strings.HasSuffix(name, ".sh") {
				t.Errorf("init script %s: the image runs .sql scripts as the chart's user, who may not create pgvector", name)
			}
			all.WriteString(s)
		}
		for _, w := range []string{`postgres "$POSTGRESQL_POSTGRES_PASSWORD"`, "CREATE EXTENSION IF NOT EXISTS vector;",
			"CREATE EXTENSION IF NOT EXISTS btree_gin;", "CREATE EXTENSION IF NOT EXISTS pg_trgm;"} {
			if !strings.Contains(all.String(), w) {
				t.Errorf("the postgresql dependency's init scripts lack %q: glyphoxa's role may not create pgvector, and its migration would fail", w)
			}
		}
	})
	t.Run("PostgreSQL is a dependency", func(t *testing.T) {
		var chart struct {
			Dependencies []struct{ Name, Condition string }
		}
		readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)
		if len(chart.Dependencies) != 1 || chart.Dependencies[0].Name != "postgresql" || chart.Dependencies[0].Condition != "postgresql.enabled" {
			t.Errorf("dependencies %+v, want postgresql under postgresql.enabled", chart.Dependencies)
		}
	})
}
