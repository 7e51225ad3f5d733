package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// DefaultLanguage is the text-search configuration of a campaign that
// names none.
const DefaultLanguage = "english"

// languageCodes maps ISO 639-1 codes to PostgreSQL's text-search
// configurations; a configuration's own name ("german") is accepted too.
var languageCodes = map[string]string{
	"ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish", "nl": "dutch",
	"en": "english", "fi": "finnish", "fr": "french", "de": "german", "el": "greek", "hi": "hindi",
	"hu": "hungarian", "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian",
	"ne": "nepali", "no": "norwegian", "nb": "norwegian", "pt": "portuguese", "ro": "romanian",
	"ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish", "ta": "tamil", "tr": "turkish",
	"yi": "yiddish",
}

// textConfig returns the text-search configuration named by lang: a code
// ("de", "de-AT") or a configuration's name ("german"); "" is the default.
func textConfig(lang string) string {
	l := strings.ToLower(strings.TrimSpace(lang))
	if l == "" {
		return DefaultLanguage
	}
	if base, _, ok := strings.Cut(l, "-"); ok && len(base) == 2 {
		l = base
	}
	if c, ok := languageCodes[l]; ok {
		return c
	}
	return l
}

// SetLanguage sets the language the campaign's chunks are searched in: a
// code ("de") or the name of a PostgreSQL text-search configuration
// ("german"); "" restores the default, english. Stemming and stop words
// follow it, for the chunks and session-log lines already written (they
// are re-indexed, the chunks with their word statistics, in one
// transaction) and for the questions asked. With the offline embedder,
// chunks embedded before the change keep their vectors until they are
// embedded again (`glyphoxa migrate --reembed`); an import that names the
// language sets it before its sessions are chunked.
func (c *Campaign) SetLanguage(ctx context.Context, lang string) error {
	cfg := textConfig(lang)
	return c.InTx(ctx, "", func(tc *Campaign) error {
		var exists bool
		if err := tc.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = $1)`, cfg).Scan(&exists); err != nil {
			return fmt.Errorf("looking up text-search configuration %q: %w", cfg, err)
		}
		if !exists {
			return fmt.Errorf("%w: unknown language %q (no text-search configuration %q)", memory.ErrInvalid, lang, cfg)
		}
		tag, err := tc.db.Exec(ctx, `UPDATE campaigns SET text_config = $2::regconfig
			WHERE id = $1 AND text_config <> $2::regconfig`, tc.id, cfg)
		if err != nil {
			return fmt.Errorf("setting the language of campaign %q: %w", tc.id, err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		if _, err := tc.db.Exec(ctx, `UPDATE chunks SET content = content WHERE campaign_id = $1`, tc.id); err != nil {
			return fmt.Errorf("re-indexing the chunks of campaign %q: %w", tc.id, err)
		}
		if _, err := tc.db.Exec(ctx, `UPDATE transcript_entries SET tsv = to_tsvector($2::regconfig, text) WHERE campaign_id = $1`,
			tc.id, cfg); err != nil {
			return fmt.Errorf("re-indexing the session log of campaign %q: %w", tc.id, err)
		}
		return nil
	})
}

// Language returns the text-search configuration the campaign's chunks
// are searched in.
func (c *Campaign) Language(ctx context.Context) (string, error) {
	return c.l2.language(ctx)
}

// Language returns the text-search configuration the campaign's chunks
// are searched in (as [Campaign.Language]), for readers that hold only
// the index.
func (x *SemanticIndex) Language(ctx context.Context) (string, error) { return x.language(ctx) }

func (x *SemanticIndex) language(ctx context.Context) (string, error) {
	var cfg string
	err := x.db.QueryRow(ctx, `SELECT text_config::text FROM campaigns WHERE id = $1`, x.campaign).Scan(&cfg)
	if errors.Is(err, pgx.ErrNoRows) {
		return DefaultLanguage, nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the language of campaign %q: %w", x.campaign, err)
	}
	return cfg, nil
}
