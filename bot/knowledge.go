package bot

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// Per-player knowledge: who plays whom (/session player), which players
// are in a split scene (/npc scene players:), the DM's grants (/memory
// grant), what a character knows (/memory known-by, DM) and "what you
// missed" (/recap for:me, a player's own). Every read goes through a handle
// bound to the member: a player's is memory.PlayerViewerOf(their id), and
// the store refuses it anyone else's knowledge.

// mention matches a Discord user mention, <@123> or <@!123>, or a bare id.
var mention = regexp.MustCompile(`^<@!?([0-9]{1,25})>$|^([0-9]{1,25})$`)

// parsePlayers reads the players option of /npc scene: mentions or ids
// separated by spaces or commas; "all" (or nothing) is the whole table.
func parsePlayers(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "all") {
		return nil, nil
	}
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		m := mention.FindStringSubmatch(f)
		if m == nil {
			return nil, fmt.Errorf("%q is not a player: mention them (@name), or say \"all\"", memory.Quote(f, 40))
		}
		out = append(out, m[1]+m[2])
	}
	return out, nil
}

// scenePlayersText says who is in the scene for the DM's confirmation.
func scenePlayersText(players []string) string {
	if len(players) == 0 {
		return "the whole table"
	}
	ms := make([]string, len(players))
	for i, p := range players {
		ms[i] = "<@" + p + ">"
	}
	return "players " + strings.Join(ms, " ") + " only (the others do not witness it)"
}

// sessionPlayer is /session player: member plays character.
func (b *Bot) sessionPlayer(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	who, name := c.str("member"), c.str("character")
	if who == "" || name == "" {
		b.reply(i, true, "Name the member and the character they play: `/session player member:@name character:Thorin`.")
		return
	}
	if !b.deferReply(i, true) {
		return
	}
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	e, err := resolveEntity(ctx, camp.Graph(), name)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	pc, err := camp.SetPlayerCharacter(ctx, who, e.ID)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	b.finish(i, true, fmt.Sprintf("🎭 <@%s> plays **%s**.", pc.UserID, pc.Name), nil, nil)
}

// memoryGrant is /memory grant: a handout or whisper, or a fact, for one
// player.
func (b *Bot) memoryGrant(ctx context.Context, i *discordgo.Interaction, g Guild, camp *memaccess.Campaign, c command) {
	who, text := c.str("player"), c.str("text")
	var factID int64
	if f := c.str("fact"); f != "" {
		id, err := parseFactID(f)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		factID = id
	}
	if who == "" || (text == "" && factID == 0) {
		b.finishErr(i, errors.New("name the player and give a text or a fact: `/memory grant player:@name text:…`"))
		return
	}
	gr, err := camp.Grant(ctx, who, text, factID, b.currentSession(g.ID))
	if err != nil {
		b.finishErr(i, err)
		return
	}
	what := "the handout"
	if gr.FactID != 0 {
		what = "the fact #" + itoa64(gr.FactID)
	}
	b.finish(i, true, fmt.Sprintf("🤫 <@%s> now knows %s; only they (and you) can read it, with `/recap for:me`.", who, what), nil, nil)
}

// memoryKnownBy is /memory known-by (DM): what a player's character knows.
func (b *Bot) memoryKnownBy(ctx context.Context, i *discordgo.Interaction, camp *memaccess.Campaign, c command) {
	who := c.str("player")
	if who == "" {
		b.finishErr(i, errors.New("name the player: `/memory known-by player:@name`"))
		return
	}
	k, err := camp.KnowledgeOf(ctx, who, "")
	if err != nil {
		b.finishErr(i, err)
		return
	}
	text, err := b.knowledgeText(ctx, k, nil, true)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	b.finish(i, true, fmt.Sprintf("**What %s knows** (<@%s>)\n%s", characterName(k), who, text), nil, nil)
}

// recapForMe is /recap for:me: what the member's character knows of the
// sessions from the last one they were present at, read through a handle
// bound to them alone; private.
func (b *Bot) recapForMe(ctx context.Context, i *discordgo.Interaction, g Guild) {
	me := user(i).ID
	if !b.deferReply(i, true) {
		return
	}
	v := memory.PlayerViewerOf(me)
	if isDM(g, i.Member) {
		v = memory.DMViewer()
	}
	camp, _, err := b.campaign(ctx, g.ID, v)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	last, err := camp.LastPresentSession(ctx, me)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	if last == "" {
		b.finish(i, true, "You have not been at a recorded session of this campaign yet, so your character knows nothing of it. "+
			"(Presence is recorded from the voice channel while a session runs.)", nil, nil)
		return
	}
	k, err := camp.KnowledgeOf(ctx, me, last)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	// The player-safe check compares with the DM's view on the server; the
	// model gets only what this player's character witnessed.
	dm, _, err := b.campaign(ctx, g.ID, memory.DMViewer())
	if err != nil {
		b.finishErr(i, err)
		return
	}
	avoid, err := Withheld(ctx, dm, k.Sessions, nil)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	text, err := b.knowledgeText(ctx, k, avoid, false)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	b.finish(i, true, fmt.Sprintf("**What you missed, %s** (since session %s; only what your character witnessed or was told)\n%s",
		characterName(k), last, text), nil, nil)
}

func characterName(k memaccess.Knowledge) string {
	if k.Character.Name != "" {
		return k.Character.Name
	}
	return "your character (no character set: `/session player`)"
}

// knowledgeText renders a character's knowledge: per session, a recap of
// the lines it witnessed (each sentence traceable to its lines), then the
// facts revealed in its presence and the DM's grants. avoid are texts a
// player-safe recap must not reveal; showWithheld adds how many lines the
// character did not witness (for the DM).
func (b *Bot) knowledgeText(ctx context.Context, k memaccess.Knowledge, avoid []string, showWithheld bool) (string, error) {
	var out strings.Builder
	bySession := map[string][]recap.Line{}
	for _, l := range k.Lines {
		bySession[l.SessionID] = append(bySession[l.SessionID], recap.Line{ID: l.ID, SessionID: l.SessionID, At: l.At,
			Speaker: l.SpeakerName, NPC: l.NPCID != "", Text: l.Text})
	}
	w := recap.Writer{LLM: b.deps.RecapLLM}
	for _, s := range k.Sessions {
		lines := bySession[s]
		if len(lines) == 0 {
			continue
		}
		if len(lines) > maxRecapLines {
			lines = lines[len(lines)-maxRecapLines:]
		}
		r, err := w.Write(ctx, recap.Input{Lines: lines, Sentences: 4, Avoid: avoid})
		if err != nil {
			return "", err
		}
		times := map[int64]string{}
		for _, l := range lines {
			times[l.ID] = l.At.UTC().Format("15:04:05")
		}
		fmt.Fprintf(&out, "\n**Session %s** (%d lines witnessed)\n", s, len(bySession[s]))
		for _, sent := range r.Sentences {
			var refs []string
			for _, id := range sent.Lines {
				refs = append(refs, times[id])
			}
			fmt.Fprintf(&out, "• %s  `⟨%s %s⟩`\n", sent.Text, s, strings.Join(refs, ", "))
		}
	}
	if len(k.Lines) == 0 {
		out.WriteString("\nNo line said in the character's presence.\n")
	}
	if len(k.Facts) > 0 {
		out.WriteString("\n**Facts revealed in their presence**\n")
		for _, f := range k.Facts {
			fmt.Fprintf(&out, "• %s %s %s\n", f.Source, strings.ToLower(strings.ReplaceAll(f.Rel, "_", " ")), f.Target)
		}
	}
	if len(k.Grants) > 0 {
		out.WriteString("\n**Granted by the DM**\n")
		for _, gr := range k.Grants {
			text := gr.Text
			if gr.FactID != 0 {
				text = strings.TrimSpace(text + " " + gr.Fact)
			}
			fmt.Fprintf(&out, "• %s  _(%s)_\n", text, gr.At.UTC().Format("2006-01-02"))
		}
	}
	if showWithheld && k.Withheld > 0 {
		fmt.Fprintf(&out, "\n_%d lines of these sessions were said where the character was not; they are not shown._\n", k.Withheld)
	}
	return strings.TrimSpace(out.String()), nil
}

func itoa64(n int64) string { return fmt.Sprint(n) }
