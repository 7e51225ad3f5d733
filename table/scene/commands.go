package scene

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// Commands lists the slash commands a scene can run, as they are typed in
// Discord. Each does what the bot does for it, through the same store and
// session operations; the DM's commands are refused to players.
var Commands = []string{
	"/npc scene NPC [NPC…]      (DM) the NPCs in the scene; no NPC clears it",
	"/npc next NPC              (DM) that NPC answers the next line",
	"/npc mute NPC | all        (DM) mute; /npc unmute likewise",
	"/npc say NPC text:WORDS    (DM) the NPC says exactly these words",
	"/npc direct NPC [instruction:WORDS] [replies:N]   (DM) steer the NPC's next replies (all until cleared, or N); no instruction clears it",
	"/npc undo                  (DM) withdraw the last NPC reply (\"that wasn't for you\")",
	"/memory entity add name:NAME kind:KIND [aliases:A, B] [description:TEXT] [dm_notes:TEXT] [id:ID]   (DM) add an entity (type: is kind:)",
	"/privacy forget-me         (player) delete everything they said",
	"/privacy opt-out | opt-in  (player) stop or resume recording them",
}

var optionRE = regexp.MustCompile(`(?:^|\s)([a-z_]+):`)

// options parses "key:value key2:more words" into a map.
func options(s string) map[string]string {
	out := map[string]string{}
	locs := optionRE.FindAllStringSubmatchIndex(s, -1)
	for i, l := range locs {
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[s[l[2]:l[3]]] = strings.TrimSpace(s[l[1]:end])
	}
	return out
}

// command runs one command of the scene.
func (p *player) command(ctx context.Context, st Step) CommandEvent {
	ev := CommandEvent{At: p.clk.Now(), Command: st.Command, By: st.By}
	result, err := p.run1(ctx, st)
	ev.Result = result
	if err != nil {
		ev.Error = err.Error()
	}
	return ev
}

func (p *player) run1(ctx context.Context, st Step) (string, error) {
	fields := strings.Fields(st.Command)
	path := strings.Join(fields[:min(2, len(fields))], " ")
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(st.Command), path))
	isDM := strings.EqualFold(st.By, DM)
	dmOnly := func() error {
		if !isDM {
			return fmt.Errorf("%s is for the DM; %s is a player", path, st.By)
		}
		return nil
	}
	switch path {
	case "/npc scene", "/npc next", "/npc mute", "/npc unmute", "/npc say", "/npc direct", "/npc undo", "/memory entity":
		if err := dmOnly(); err != nil {
			return "refused", err
		}
	case "/privacy forget-me", "/privacy opt-out", "/privacy opt-in":
		if isDM {
			return "refused", fmt.Errorf("%s is a player's own choice; give the player's name in by:", path)
		}
	default:
		return "", fmt.Errorf("the scene player does not run %q; it runs:\n  %s", path, strings.Join(Commands, "\n  "))
	}
	cast := p.s.Cast()
	npcs := func(words []string) ([]string, error) {
		var ids []string
		for _, w := range words {
			id, err := p.npcID(ctx, w)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	}
	camp := p.o.Campaign
	switch path {
	case "/npc scene":
		ids, err := npcs(strings.Fields(rest))
		if err != nil {
			return "", err
		}
		p.controls.SetScene(live.Scene{Present: ids})
		if len(ids) == 0 {
			return "the scene is cleared: every NPC may be addressed", nil
		}
		return "in the scene: " + strings.Join(ids, ", "), nil
	case "/npc next", "/npc mute", "/npc unmute":
		if rest == "all" && path != "/npc next" {
			p.controls.SetMuted("all", path == "/npc mute")
			return strings.TrimPrefix(path, "/npc ") + "d: all", nil
		}
		ids, err := npcs(strings.Fields(rest))
		if err != nil || len(ids) != 1 {
			return "", errors.Join(err, fmt.Errorf("%s takes one NPC", path))
		}
		if path == "/npc next" {
			p.controls.SetNext(ids[0])
			return cast.NPCName(ids[0]) + " answers the next line", nil
		}
		p.controls.SetMuted(ids[0], path == "/npc mute")
		return strings.TrimPrefix(path, "/npc ") + "d: " + cast.NPCName(ids[0]), nil
	case "/npc say":
		who, text, _ := strings.Cut(rest, " text:")
		id, err := p.npcID(ctx, strings.TrimSpace(who))
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(text) == "" {
			return "", errors.New("/npc say needs text:")
		}
		if err := p.s.Say(ctx, id, strings.TrimSpace(text)); err != nil {
			return "", err
		}
		p.tr.take()
		return cast.NPCName(id) + " said it", nil
	case "/npc direct":
		o := options(rest)
		who := rest
		if k := optionRE.FindStringIndex(rest); k != nil {
			who = rest[:k[0]]
		}
		id, err := p.npcID(ctx, strings.TrimSpace(who))
		if err != nil {
			return "", err
		}
		n := 0
		if r := o["replies"]; r != "" {
			if n, err = strconv.Atoi(r); err != nil || n < 1 {
				return "", fmt.Errorf("/npc direct: replies:%s is not a number of replies (1 or more)", r)
			}
		}
		p.controls.SetDirection(id, o["instruction"], n)
		if o["instruction"] == "" {
			return cast.NPCName(id) + "'s direction is cleared", nil
		}
		return cast.NPCName(id) + " is directed: " + o["instruction"], nil
	case "/npc undo":
		u, err := p.s.Undo(ctx)
		if err != nil {
			return "", err
		}
		p.tr.take()
		return fmt.Sprintf("withdrew %s's reply %q", cast.NPCName(u.NPCID), u.Reply), nil
	case "/memory entity":
		sub, args, _ := strings.Cut(rest, " ")
		if sub != "add" {
			return "", fmt.Errorf("/memory entity %s: the scene player runs /memory entity add", sub)
		}
		o := options(args)
		kind := o["kind"]
		if kind == "" {
			kind = o["type"]
		}
		e := memory.Entity{ID: o["id"], Type: kind, Name: o["name"], Attributes: map[string]any{}}
		if e.Name == "" || e.Type == "" {
			return "", errors.New("/memory entity add needs name: and kind:")
		}
		for _, a := range strings.Split(o["aliases"], ",") {
			if a = strings.TrimSpace(a); a != "" {
				e.Aliases = append(e.Aliases, a)
			}
		}
		if d := o["description"]; d != "" {
			e.Attributes["description"] = d
		}
		if d := o["dm_notes"]; d != "" {
			e.Attributes["dm_notes"] = d
		}
		// The store operation of Discord's /memory entity add: a taken id
		// or name is refused, naming the entity that has it.
		e, err := camp.Graph().AddEntity(ctx, e)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("entity %s (%s) added", e.ID, e.Type), nil
	case "/privacy forget-me":
		pl := p.f.player(st.By)
		var erased string
		live, err := p.s.Forget(ctx, pl.ID, func(ctx context.Context) error {
			rep, err := camp.ForgetSpeaker(ctx, pl.ID)
			erased = fmt.Sprintf("deleted %d lines, %d memory chunks and %d facts", rep.Entries, rep.Chunks, rep.Facts)
			return err
		})
		if err != nil {
			return fmt.Sprintf("%d lines taken out of the outage spool; nothing else was deleted", live.Spooled), err
		}
		if live.Deferred {
			erased = "the database is unreachable: deleting what it holds is queued in the outage spool"
		}
		return fmt.Sprintf("%s; %d lines taken out of the outage spool; %d lines left the live conversation, %d summaries rewritten",
			erased, live.Spooled, live.Messages, live.Summaries), nil
	case "/privacy opt-out":
		return "not recorded from now on", camp.OptOut(ctx, p.f.player(st.By).ID)
	case "/privacy opt-in":
		return "recorded again", camp.OptIn(ctx, p.f.player(st.By).ID)
	}
	return "", nil
}

// npcID resolves an NPC by id or name.
func (p *player) npcID(ctx context.Context, w string) (string, error) {
	cast := p.s.Cast()
	if _, err := cast.Refresh(ctx); err != nil {
		return "", err
	}
	if cast.IsNPC(w) {
		return w, nil
	}
	for _, m := range cast.FindNames(w) {
		if cast.IsNPC(m.EntityID) {
			return m.EntityID, nil
		}
	}
	return "", fmt.Errorf("no NPC %q in the campaign", w)
}
