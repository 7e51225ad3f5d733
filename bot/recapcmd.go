package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// maxRecapLines bounds the transcript handed to one recap.
const maxRecapLines = 600

func (b *Bot) recapCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	dm := isDM(g, i.Member)
	safe, set := c.boolean("player_safe")
	if !dm || !set {
		safe = !dm || safe
	}
	delivery := c.str("delivery")
	if delivery == "" {
		delivery = "private"
	}
	if delivery == "voice" && !dm {
		b.refuse(i, "Only the DM can have the narrator speak a recap.")
		return
	}
	if delivery == "public" && !safe {
		// A public recap is read by players: it is always player-safe.
		safe = true
	}
	b.deferReply(i, delivery != "public")
	camp, _, err := b.campaign(ctx, g.ID)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	scope := c.str("scope")
	sessions, err := b.recapSessions(ctx, camp, scope, c.str("session"))
	if err != nil {
		b.finishErr(i, err)
		return
	}
	w := recap.Writer{LLM: b.deps.RecapLLM}
	var out strings.Builder
	title := "Previously on " + g.Campaign + "…"
	var spoken []string
	per := 6
	if len(sessions) > 1 {
		per = 3
	}
	for _, s := range sessions {
		in, err := recapInput(ctx, camp, s.ID, safe)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		in.Sentences = per
		r, err := w.Write(ctx, in)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		if len(sessions) > 1 {
			fmt.Fprintf(&out, "\n**Session %s** (%s)\n", s.ID, s.StartedAt.UTC().Format("2006-01-02"))
		}
		times := map[int64]string{}
		for _, l := range in.Lines {
			times[l.ID] = l.At.UTC().Format("15:04:05")
		}
		for _, sent := range r.Sentences {
			var refs []string
			for _, id := range sent.Lines {
				refs = append(refs, times[id])
			}
			fmt.Fprintf(&out, "• %s  `⟨%s %s⟩`\n", sent.Text, s.ID, strings.Join(refs, ", "))
			spoken = append(spoken, sent.Text)
		}
		if r.Extractive && b.deps.RecapLLM == nil && len(r.Sentences) > 0 && len(sessions) == 1 {
			out.WriteString("_No LLM is configured, so this recap is the session's key lines._\n")
		}
	}
	text := strings.TrimSpace(out.String())
	if text == "" {
		text = "There is nothing to recap yet."
	}
	header := "**" + title + "**"
	if safe {
		header += " _(player-safe: no secrets, no unconfirmed facts)_"
	}
	if delivery == "voice" {
		if b.deps.Voice == nil || !b.state.hasSession(g.ID) || g.NarratorNPC == "" {
			b.finishErr(i, errors.New("a spoken recap needs a running voice session and a narrator NPC (discord.guilds[].narrator_npc)"))
			return
		}
		if err := b.deps.Voice.Say(ctx, g.ID, g.NarratorNPC, strings.Join(spoken, " ")); err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, "🗣️ The narrator is speaking the recap.\n"+header+"\n"+text, nil, nil)
		return
	}
	b.finish(i, delivery != "public", header+"\n"+text, nil, nil)
}

// recapSessions picks the sessions a recap covers, oldest first.
func (b *Bot) recapSessions(ctx context.Context, camp *postgres.Campaign, scope, session string) ([]memory.Session, error) {
	all, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		return nil, err
	}
	var withLines []memory.Session
	for _, s := range all {
		if s.Entries > 0 {
			withLines = append(withLines, s)
		}
	}
	switch scope {
	case "session":
		if session == "" {
			return nil, errors.New("name the session to recap")
		}
		s, err := camp.Sessions().Session(ctx, session)
		if err != nil {
			return nil, err
		}
		return []memory.Session{s}, nil
	case "campaign":
		return withLines, nil
	default:
		if len(withLines) == 0 {
			return nil, nil
		}
		return withLines[len(withLines)-1:], nil
	}
}

// recapInput gathers one session's lines and facts. A player-safe recap gets
// only confirmed, non-secret facts and is told to avoid every secret and
// every unconfirmed fact.
func recapInput(ctx context.Context, camp *postgres.Campaign, sessionID string, safe bool) (recap.Input, error) {
	var in recap.Input
	es, err := camp.Sessions().Entries(ctx, sessionID)
	if err != nil {
		return in, err
	}
	for _, e := range es {
		if e.NonCanon {
			continue
		}
		in.Lines = append(in.Lines, recap.Line{ID: e.ID, SessionID: e.SessionID, At: e.At, Speaker: e.SpeakerName,
			NPC: e.NPCID != "", Text: e.Text})
	}
	if len(in.Lines) > maxRecapLines {
		in.Lines = in.Lines[len(in.Lines)-maxRecapLines:]
	}
	g := camp.Graph()
	facts, err := g.FindFacts(ctx, postgres.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending}, Limit: 200})
	if err != nil {
		return in, err
	}
	for _, f := range facts {
		if f.Provenance.SessionID != sessionID {
			continue
		}
		sentence := fmt.Sprintf("%s %s %s", f.SourceName, strings.ToLower(strings.ReplaceAll(f.Type, "_", " ")), f.TargetName)
		secret := f.Attributes[memory.AttrSecret] == true
		switch {
		case secret && safe, f.Status == memory.StatusPending && safe:
			in.Avoid = append(in.Avoid, sentence)
		case f.Status == memory.StatusPending:
			in.Facts = append(in.Facts, sentence+" (unconfirmed)")
		default:
			in.Facts = append(in.Facts, sentence)
		}
	}
	if safe {
		ents, err := g.FindEntities(ctx, memory.EntityFilter{})
		if err != nil {
			return in, err
		}
		for _, e := range ents {
			switch v := e.Attributes[memory.AttrSecretKnowledge].(type) {
			case string:
				in.Avoid = append(in.Avoid, v)
			case []any:
				for _, x := range v {
					in.Avoid = append(in.Avoid, fmt.Sprint(x))
				}
			}
		}
	}
	return in, nil
}
