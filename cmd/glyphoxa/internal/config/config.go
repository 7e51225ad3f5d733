// Package config loads and validates glyphoxa's YAML configuration.
//
// Values may reference environment variables as ${VAR} or ${VAR:-default},
// and GLYPHOXA_* variables override the secrets and endpoints (see
// [Overrides]). Unknown keys, wrong types and missing required values are
// errors that name the key and what is expected.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults.
const (
	DefaultEmbeddingDimensions = 384
	DefaultReviewThreshold     = 0.7
)

// Config is the whole configuration file.
type Config struct {
	Memory Memory `yaml:"memory"`
}

// Memory configures the PostgreSQL memory store.
type Memory struct {
	// PostgresDSN is the database, e.g. postgres://user:pw@host:5432/glyphoxa.
	PostgresDSN string `yaml:"postgres_dsn"`
	// EmbeddingDimensions must match the embedding model (384 for the
	// built-in offline embedder, 1536 for text-embedding-3-small, 768 for
	// nomic-embed-text).
	EmbeddingDimensions int `yaml:"embedding_dimensions"`
	// ReviewThreshold is the confidence below which new facts wait for the DM.
	ReviewThreshold float64 `yaml:"review_threshold"`
	// RecentWindow is how much recent transcript an NPC hears.
	RecentWindow Duration `yaml:"recent_window"`
}

// Duration is a time.Duration written as "30s", "5m", "1h30m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: expected a duration such as 30s or 5m", n.Line)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use 30s, 5m, 1h30m)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// Std returns the value as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Default returns the configuration used when no file is given.
func Default() Config {
	return Config{Memory: Memory{
		EmbeddingDimensions: DefaultEmbeddingDimensions,
		ReviewThreshold:     DefaultReviewThreshold,
		RecentWindow:        Duration(5 * time.Minute),
	}}
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid configuration")

// Load reads the file at path (see [Parse]).
func Load(path string, getenv func(string) string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading configuration: %w", err)
	}
	defer f.Close()
	return Parse(f, path, getenv)
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Parse reads a configuration, expands ${VAR} references with getenv, applies
// the GLYPHOXA_* overrides and the defaults, and validates the result.
func Parse(r io.Reader, name string, getenv func(string) string) (Config, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return Config{}, fmt.Errorf("reading %s: %w", name, err)
	}
	var missing []string
	expanded := envRef.ReplaceAllStringFunc(string(raw), func(m string) string {
		sub := envRef.FindStringSubmatch(m)
		if v := getenv(sub[1]); v != "" {
			return v
		}
		if sub[2] != "" {
			return sub[3]
		}
		missing = append(missing, sub[1])
		return ""
	})
	cfg := Default()
	dec := yaml.NewDecoder(bytes.NewReader([]byte(expanded)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%s: %w: %s", name, ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	ApplyOverrides(&cfg, getenv)
	if err := cfg.Validate(); err != nil {
		if len(missing) > 0 {
			return Config{}, fmt.Errorf("%s: %w (unset environment variables: %s)", name, err, strings.Join(missing, ", "))
		}
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// Overrides lists the environment variables that override configuration
// keys, for secrets and endpoints that should not live in the file.
func Overrides() map[string]string {
	return map[string]string{
		"GLYPHOXA_DSN": "memory.postgres_dsn",
	}
}

// ApplyOverrides sets keys from the GLYPHOXA_* environment variables.
func ApplyOverrides(c *Config, getenv func(string) string) {
	if v := getenv("GLYPHOXA_DSN"); v != "" {
		c.Memory.PostgresDSN = v
	}
}

// Validate checks the values; the error names the key and what it expects.
func (c Config) Validate() error {
	m := c.Memory
	switch {
	case m.EmbeddingDimensions <= 0 || m.EmbeddingDimensions > 16000:
		return fmt.Errorf("%w: memory.embedding_dimensions must be between 1 and 16000, got %d", ErrInvalid, m.EmbeddingDimensions)
	case m.ReviewThreshold < 0 || m.ReviewThreshold > 1:
		return fmt.Errorf("%w: memory.review_threshold must be between 0 and 1, got %v", ErrInvalid, m.ReviewThreshold)
	case m.RecentWindow < 0:
		return fmt.Errorf("%w: memory.recent_window must not be negative", ErrInvalid)
	}
	return nil
}
