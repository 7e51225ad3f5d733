package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strings"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

func cmdCorrect(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("correct", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id whose entities to restore")
	entities := fs.String("entities", "", "read the entities from this campaign file (import format) instead of the database")
	asJSON := fs.Bool("json", false, "print one JSON object per utterance, with the substitutions")
	useLLM := fs.Bool("llm", false, "also run the LLM pass (stage 2) through providers.llm")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" && *entities == "" {
		return usagef("--campaign is required (or --entities FILE.yaml)")
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	var es []correction.Entity
	if *entities != "" {
		f, err := os.Open(*entities)
		if err != nil {
			return err
		}
		cf, err := campaignfile.Parse(f, *entities)
		f.Close()
		if err != nil {
			return err
		}
		if *campaign != "" && *campaign != cf.Campaign {
			return usagef("--campaign %q does not match the file's campaign %q", *campaign, cf.Campaign)
		}
		es = correction.FromMemory(cf.MemoryEntities())
	} else {
		s, _, err := sf.openStore(ctx, e)
		if err != nil {
			return err
		}
		defer s.Close()
		c, err := openCampaign(ctx, s, *campaign)
		if err != nil {
			return err
		}
		if es, err = correction.LoadEntities(ctx, c.Graph()); err != nil {
			return err
		}
	}
	if len(es) == 0 {
		printf(e.stderr, "glyphoxa correct: campaign %q has no entities; text passes through unchanged\n", *campaign)
	}
	lang, err := correction.ParseLanguage(cfg.Providers.STT.Language)
	if err != nil {
		printf(e.stderr, "glyphoxa correct: %v; using the English word lists\n", err)
		lang = correction.English
	}
	m, err := correction.NewMatcher(correction.WithLanguage(lang),
		correction.WithPhoneticThreshold(cfg.Correction.PhoneticThreshold),
		correction.WithFuzzyThreshold(cfg.Correction.FuzzyThreshold))
	if err != nil {
		return err
	}
	opts := []correction.Option{correction.WithMatcher(m), correction.WithEntities(es),
		correction.WithLowConfidence(cfg.Correction.LowConfidence)}
	if *useLLM {
		if err := cfg.Require(config.NeedLLM); err != nil {
			return err
		}
		lc, err := newLLMCorrector(cfg)
		if err != nil {
			return err
		}
		opts = append(opts, correction.WithLLM(lc))
	}
	pipe, err := correction.NewPipeline(opts...)
	if err != nil {
		return err
	}
	emit := func(text string) error {
		u := correction.Utterance{Text: text}
		res := pipe.Correct(u)
		if pipe.HasLLM() {
			refined, err := pipe.Refine(ctx, u, res)
			if err != nil {
				printf(e.stderr, "glyphoxa correct: the LLM pass failed, keeping the phonetic result: %v\n", err)
			}
			res = refined
		}
		if !*asJSON {
			printf(e.stdout, "%s\n", res.Text)
			return nil
		}
		if res.Substitutions == nil {
			res.Substitutions = []correction.Substitution{}
		}
		return json.NewEncoder(e.stdout).Encode(res)
	}
	if fs.NArg() > 0 {
		return emit(strings.Join(fs.Args(), " "))
	}
	sc := bufio.NewScanner(e.stdin)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emit(strings.TrimRight(sc.Text(), "\r")); err != nil {
			return err
		}
	}
	return sc.Err()
}
